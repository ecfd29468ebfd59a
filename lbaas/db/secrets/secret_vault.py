"""The key manager's storage: secrets sealed under the key ring, containers, consumers.

Every read and write is scoped to one project: a secret or container of another project
is "not found", exactly as a missing one (no oracle for other projects' ids). Payloads
leave this module only as the return value of ``payload`` and of the certificate
loaders; they are never put into an exception message or a log line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from lbaas.certs.kek import KeyRing, Sealed, UnsealError, load_key_ring, save_key_ring
from lbaas.db.engine import Database
from lbaas.db.session import Session
from lbaas.db.tables import (
    ContainerConsumerRow,
    ContainerSecretRow,
    SecretConsumerRow,
    SecretContainerRow,
    SecretRow,
)
from lbaas.errors import ConfigError, Conflict, NotFound


@dataclass(frozen=True)
class SecretFields:
    """What a client describes about a secret (besides its payload)."""

    name: str | None = None
    secret_type: str = "opaque"
    algorithm: str | None = None
    bit_length: int | None = None
    mode: str | None = None
    expiration: datetime | None = None


@dataclass(frozen=True)
class ContainerView:
    row: SecretContainerRow
    secrets: list[tuple[str, str]]  # (name, secret id)
    consumers: list[ContainerConsumerRow]


@dataclass(frozen=True)
class Page:
    offset: int
    limit: int


class SecretVault:
    def __init__(self, database: Database, ring: KeyRing, ring_path: Path | None = None) -> None:
        self.database = database
        self.ring = ring
        self.ring_path = ring_path
        self._ring_stamp = _stamp(ring_path)

    def _fresh_ring(self) -> KeyRing:
        """The ring, re-read if its file changed: another process (``lbaas keymanager
        rotate-kek``) may have made a new primary key that new secrets must be sealed in."""
        stamp = _stamp(self.ring_path)
        if stamp != self._ring_stamp and self.ring_path is not None:
            ring = load_key_ring(self.ring_path)
            if ring is not None:
                self.ring, self._ring_stamp = ring, stamp
        return self.ring

    # -- secrets -----------------------------------------------------------------------

    def create_secret(
        self,
        project_id: str,
        creator: str | None,
        fields: SecretFields,
        sealed_id: str,
        payload: tuple[bytes, str] | None,
        now: datetime,
    ) -> SecretRow:
        row = SecretRow(
            id=sealed_id,
            project_id=project_id,
            creator_id=creator,
            created_at=now,
            updated_at=now,
            **fields.__dict__,
        )
        if payload is not None:
            self._seal_into(row, *payload)
        with self.database.write() as session:
            session.add(row)
        return row

    def put_payload(
        self, project_id: str, secret_id: str, payload: bytes, content_type: str, now: datetime
    ) -> None:
        with self.database.write() as session:
            row = _owned(session, SecretRow, project_id, secret_id, "Secret")
            if row.ciphertext is not None:
                raise Conflict("Secret already has data, cannot modify it.")
            self._seal_into(row, payload, content_type)
            row.updated_at = now

    def _seal_into(self, row: SecretRow, payload: bytes, content_type: str) -> None:
        sealed = self._fresh_ring().seal(payload, row.id)
        row.kek_id, row.ciphertext, row.content_type = (
            sealed.kek_id,
            sealed.ciphertext,
            content_type,
        )

    def get_secret(self, project_id: str, secret_id: str) -> SecretRow:
        with self.database.read() as session:
            row: SecretRow = _owned(session, SecretRow, project_id, secret_id, "Secret")
            return row

    def payload(self, project_id: str, secret_id: str) -> tuple[bytes, str]:
        """The plaintext and its content type; 404 for a secret that has no payload yet."""
        row = self.get_secret(project_id, secret_id)
        return self._open(row), str(row.content_type)

    def _open(self, row: SecretRow) -> bytes:
        if row.ciphertext is None or row.kek_id is None:
            raise NotFound("Secret payload not found.")
        return self._fresh_ring().unseal(Sealed(row.kek_id, row.ciphertext), row.id)

    def list_secrets(
        self, project_id: str, page: Page, **where: Any
    ) -> tuple[list[SecretRow], int]:
        conditions = [SecretRow.project_id == project_id]
        conditions += [getattr(SecretRow, k) == v for k, v in where.items() if v is not None]
        return _page(self.database, SecretRow, conditions, page)

    def delete_secret(self, project_id: str, secret_id: str) -> None:
        with self.database.write() as session:
            row = _owned(session, SecretRow, project_id, secret_id, "Secret")
            used = session.scalars(
                select(ContainerSecretRow.container_id).where(
                    ContainerSecretRow.secret_id == secret_id
                )
            ).first()
            if used is not None:
                raise Conflict(f"Secret is referenced by container {used}; delete it first.")
            session.delete(row)

    def secret_consumers(self, project_id: str, secret_id: str) -> list[SecretConsumerRow]:
        with self.database.read() as session:
            _owned(session, SecretRow, project_id, secret_id, "Secret")
            return list(
                session.scalars(
                    select(SecretConsumerRow)
                    .where(SecretConsumerRow.secret_id == secret_id)
                    .order_by(SecretConsumerRow.created_at)
                )
            )

    def set_secret_consumer(
        self, project_id: str, secret_id: str, key: tuple[str, str, str], now: datetime | None
    ) -> None:
        """Register (``now`` given) or remove (``now`` None) one consumer; idempotent add."""
        service, resource_type, resource_id = key
        with self.database.write() as session:
            _owned(session, SecretRow, project_id, secret_id, "Secret")
            found = session.get(SecretConsumerRow, (secret_id, service, resource_type, resource_id))
            if now is not None and found is None:
                session.add(
                    SecretConsumerRow(
                        secret_id=secret_id,
                        service=service,
                        resource_type=resource_type,
                        resource_id=resource_id,
                        created_at=now,
                    )
                )
            elif now is None:
                if found is None:
                    raise NotFound("Consumer not found.")
                session.delete(found)

    # -- containers --------------------------------------------------------------------

    def create_container(
        self,
        project_id: str,
        creator: str | None,
        header: tuple[str, str | None, str],  # (id, name, type)
        members: Sequence[tuple[str, str]],
        now: datetime,
    ) -> None:
        container_id, name, kind = header
        with self.database.write() as session:
            for _, secret_id in members:
                _owned(session, SecretRow, project_id, secret_id, "Secret")
            session.add(
                SecretContainerRow(
                    id=container_id,
                    project_id=project_id,
                    creator_id=creator,
                    name=name,
                    type=kind,
                    created_at=now,
                    updated_at=now,
                )
            )
            session.flush()
            for member_name, secret_id in members:
                session.add(
                    ContainerSecretRow(
                        container_id=container_id, name=member_name, secret_id=secret_id
                    )
                )

    def get_container(self, project_id: str, container_id: str) -> ContainerView:
        with self.database.read() as session:
            row = _owned(session, SecretContainerRow, project_id, container_id, "Container")
            return _container_view(session, row)

    def list_containers(
        self, project_id: str, page: Page, **where: Any
    ) -> tuple[list[ContainerView], int]:
        conditions = [SecretContainerRow.project_id == project_id]
        conditions += [
            getattr(SecretContainerRow, k) == v for k, v in where.items() if v is not None
        ]
        rows, total = _page(self.database, SecretContainerRow, conditions, page)
        with self.database.read() as session:
            return [_container_view(session, r) for r in rows], total

    def delete_container(self, project_id: str, container_id: str) -> None:
        with self.database.write() as session:
            row = _owned(session, SecretContainerRow, project_id, container_id, "Container")
            session.delete(row)

    def set_container_consumer(
        self, project_id: str, container_id: str, key: tuple[str, str], now: datetime | None
    ) -> ContainerView:
        """Register (``now`` given, idempotent) or remove (``now`` None) one consumer."""
        name, url = key
        with self.database.write() as session:
            row = _owned(session, SecretContainerRow, project_id, container_id, "Container")
            found = session.get(ContainerConsumerRow, (container_id, name, url))
            if now is not None and found is None:
                session.add(
                    ContainerConsumerRow(
                        container_id=container_id, name=name, url=url, created_at=now
                    )
                )
            elif now is None:
                if found is None:
                    raise NotFound("Consumer not found.")
                session.delete(found)
            session.flush()
            return _container_view(session, row)

    # -- the key ring ------------------------------------------------------------------

    def verify(self) -> None:
        """Open one stored secret per key id: a wrong or missing key-encryption key is a
        start-up error that names the key id, before anything is served or changed."""
        with self.database.read() as session:
            ids = session.scalars(
                select(func.min(SecretRow.id))
                .where(SecretRow.ciphertext.is_not(None))
                .group_by(SecretRow.kek_id)
            ).all()
            for secret_id in ids:
                row = session.get(SecretRow, secret_id)
                assert row is not None
                try:
                    self._open(row)
                except UnsealError as exc:
                    raise ConfigError(
                        f"the key-encryption key file {self.ring_path} cannot open the stored "
                        f"secrets ({exc}); restore the right file — nothing was changed"
                    ) from exc

    def rotate(self) -> int:
        """A new primary key; every sealed secret re-sealed under it; the old keys dropped.

        The file with both keys is written before any row changes and the file with only
        the new key after every row is committed, so a crash at any point leaves each
        secret openable with the file on disk. Returns the number of secrets re-sealed.
        """
        if self.ring_path is None:
            raise ConfigError("rotation needs the key ring's file")
        self.verify()
        self.ring = self._fresh_ring().with_new_primary()
        save_key_ring(self.ring_path, self.ring)
        count = 0
        with self.database.write() as session:
            for row in session.scalars(select(SecretRow).where(SecretRow.ciphertext.is_not(None))):
                if row.kek_id != self.ring.primary:
                    sealed = self.ring.seal(self._open(row), row.id)
                    row.kek_id, row.ciphertext = sealed.kek_id, sealed.ciphertext
                    count += 1
        self.ring = self.ring.only_primary()
        save_key_ring(self.ring_path, self.ring)
        self._ring_stamp = _stamp(self.ring_path)
        return count


def count_sealed(database: Database) -> int:
    with database.read() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(SecretRow).where(SecretRow.ciphertext.is_not(None))
            )
            or 0
        )


def _stamp(path: Path | None) -> tuple[int, int] | None:
    try:
        st = path.stat() if path is not None else None
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_ino) if st is not None else None


def _owned(session: Session, table: Any, project_id: str, ident: str, kind: str) -> Any:
    row = session.get(table, ident)
    if row is None or row.project_id != project_id:
        raise NotFound(f"{kind} not found.")
    return row


def _page(
    database: Database, table: Any, conditions: list[Any], page: Page
) -> tuple[list[Any], int]:
    with database.read() as session:
        total = session.scalar(select(func.count()).select_from(table).where(*conditions)) or 0
        rows = session.scalars(
            select(table)
            .where(*conditions)
            .order_by(table.created_at, table.id)
            .offset(page.offset)
            .limit(page.limit)
        ).all()
        return list(rows), int(total)


def _container_view(session: Session, row: SecretContainerRow) -> ContainerView:
    members = session.execute(
        select(ContainerSecretRow.name, ContainerSecretRow.secret_id)
        .where(ContainerSecretRow.container_id == row.id)
        .order_by(ContainerSecretRow.name)
    ).all()
    consumers = session.scalars(
        select(ContainerConsumerRow)
        .where(ContainerConsumerRow.container_id == row.id)
        .order_by(ContainerConsumerRow.created_at)
    ).all()
    return ContainerView(row, [(n, s) for n, s in members], list(consumers))
