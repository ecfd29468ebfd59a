"""The one exception tree of lbaas.

Every error lbaas raises on purpose derives from ``LbaasError``. API errors carry the HTTP
status they map to (the mapping to Octavia's ``{faultcode, faultstring, debuginfo}`` body
happens in one place, ``lbaas.api.errors``; the Networking-shaped routes answer Neutron's
body instead, ``lbaas.api.neutron_errors``). Errors raised while converging carry retry
meaning, as kopf's do: the job runner retries a ``TemporaryError`` with backoff and turns a
``PermanentError`` into ERROR with its reason kept. Third-party exceptions are translated
at the boundary that sees them (SQLAlchemy in ``lbaas.db``, HTTP clients in the agent
client, ``haproxy -c`` in the agent).

    LbaasError
    ├── ConfigError                    bad settings or a provider that cannot load
    ├── CommandRefused                 a command cannot run as asked (one line, exit 2)
    ├── ApiError                       carries .status_code
    │   ├── InvalidInput (400)         schema / semantic validation ("Validation failure: …")
    │   ├── Forbidden (403)            policy
    │   │   └── QuotaExceeded (403)
    │   ├── NotFound (404)
    │   ├── Conflict (409)             duplicates, in-use, immutable (PENDING_*)
    │   ├── NotImplementedByProvider (501)
    │   ├── SchemaMismatch (500)       the database lacks a table or column the code uses
    │   └── ServiceUnavailable (503)
    │       └── DatabaseConnectionLost  the server ended the session (replayable or not)
    ├── ConvergeError                  raised by providers and converge
    │   ├── TemporaryError             retry after .delay seconds
    │   │   └── AgentUnreachable
    │   └── PermanentError             give up: ERROR with .user_message shown
    │       └── InvalidRenderedConfig  a real validator refused a rendered configuration
    └── HeartbeatRejected              unsigned, forged or replayed heartbeat
"""

from __future__ import annotations


class LbaasError(Exception):
    """Base of every error lbaas raises on purpose."""


class ConfigError(LbaasError):
    """Settings are invalid, or an enabled provider cannot be loaded."""


class CommandRefused(LbaasError):
    """A command cannot run as asked: its state directory is held by another process or
    holds no state, an address it must bind is taken, an argument is malformed. The
    ``lbaas`` command prints the message as one line and exits 2."""


class ApiError(LbaasError):
    """An error the API returns to a client, with Octavia's wording as the message.

    ``neutron_type``: on the Networking-shaped routes, Neutron's name for the condition
    (``PortNotFound``), the ``type`` of its error body; None: the status's generic one.
    """

    status_code = 500

    def __init__(self, message: str, *, neutron_type: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.neutron_type = neutron_type


class InvalidInput(ApiError):
    status_code = 400


class ValidationFailure(InvalidInput):
    """Semantic validation; Octavia prefixes these messages with 'Validation failure: '."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"Validation failure: {detail}")


class Unauthorized(ApiError):
    """No (valid) credentials: what lbaas's own login route answers a refused password."""

    status_code = 401


class Forbidden(ApiError):
    status_code = 403

    def __init__(
        self, message: str = "Policy does not allow this request to be performed."
    ) -> None:
        super().__init__(message)


class QuotaExceeded(Forbidden):
    def __init__(self, resource_name: str) -> None:
        super().__init__(f"Quota has been met for resources: {resource_name}")


class NotFound(ApiError):
    status_code = 404

    @classmethod
    def of(cls, kind: str, ident: str) -> NotFound:
        return cls(f"{kind} {ident} not found.")


class Conflict(ApiError):
    status_code = 409


class NotImplementedByProvider(ApiError):
    status_code = 501


class ServiceUnavailable(ApiError):
    status_code = 503


class DatabaseConnectionLost(ServiceUnavailable):
    """The database server ended the session (restart, ``pg_terminate_backend``).

    ``replayable`` says whether the request that met it may run again from the start:
    true unless a transaction of the request was committed, or the loss came during
    COMMIT (whose outcome is then unknown).
    """

    def __init__(self, message: str, *, replayable: bool) -> None:
        super().__init__(message)
        self.replayable = replayable


class SchemaMismatch(ApiError):
    """The database lacks a table or column the code uses: a migration was not run, or
    a model changed without one. Never worth retrying; ``operator_message`` names the
    table, the column and what to run."""

    status_code = 500

    def __init__(self, operator_message: str) -> None:
        super().__init__("The service's database schema does not match its code.")
        self.operator_message = operator_message


class ConvergeError(LbaasError):
    """Raised while making a data plane match its graph.

    ``user_message`` is safe to show a tenant; ``operator_message`` may hold details
    (stderr, hostnames) for logs only.
    """

    def __init__(self, user_message: str, operator_message: str | None = None) -> None:
        super().__init__(user_message)
        self.user_message = user_message
        self.operator_message = operator_message or user_message


class TemporaryError(ConvergeError):
    """Worth retrying after ``delay`` seconds (the runner may back off further)."""

    def __init__(
        self, user_message: str, delay: float = 1.0, operator_message: str | None = None
    ) -> None:
        super().__init__(user_message, operator_message)
        self.delay = delay


class AgentUnreachable(TemporaryError):
    """The agent on a host could not be reached or did not answer."""

    address: tuple[str, int] | None = None
    """The agent's (host, port), if known: the worker retries as soon as it answers."""


class PermanentError(ConvergeError):
    """Retrying will not help; the load balancer goes to ERROR with this reason."""


class InvalidRenderedConfig(PermanentError):
    """A real tool (haproxy -c, nft -c, keepalived -t) refused a rendered configuration."""


class HeartbeatRejected(LbaasError):
    """A heartbeat that is unsigned, carries a bad signature, or was seen before."""


class HeartbeatLate(HeartbeatRejected):
    """A genuine heartbeat sent longer ago (or further ahead) than the freshness window:
    counted apart from replays, since it points at a slow path or clock skew."""
