"""What an agent finds when asked to look at one amphora now, for ``lbaas diagnose``:
``GET /v1/amphorae/{amphora_id}/diagnosis`` -> 200 ``AmphoraDiagnosis`` | 404.

A route of its own, not fields of ``AmphoraStatus``: the status is read on every converge,
while this costs a walk over ``/proc`` and a connect per listener, wanted only when an
operator asks. An agent older than the route answers 404, as for an amphora it does not
know; the controller then says the check was not made. Every field past ``amphora_id``
has a default, so an answer of a later agent with fewer fields still parses.

What it carries is what only the amphora's host can see: whether each listener's VIP:port
answers a connect made now from the agent's probe source (which every frontend rejects
before logging, ``lbaas.render.haproxy.probe_source``: the tenant's access log never holds
it), which processes listen on that VIP:port besides the amphora's own HAProxy (a HAProxy
left running by an earlier agent shares the port through ``SO_REUSEPORT`` and takes part
of the connections), and HAProxy's own word on why each server is down (``show stat``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ListeningProcess(_Wire):
    """A process holding a listening socket on the VIP:port."""

    pid: int | None = Field(None, description="None: the socket's owner cannot be read.")
    command: str = Field("", description="Its command line, arguments separated by spaces.")


class VipPortCheck(_Wire):
    """One probed listener's VIP:port, looked at now."""

    listener_id: str
    port: int = Field(ge=1, le=65535)
    answers: bool = Field(description="A connect from the agent's probe source completed.")
    error: str | None = Field(None, description="Why the last connect failed, when it did.")
    foreign: tuple[ListeningProcess, ...] = Field(
        (), description="Listening on the VIP:port, and not the amphora's HAProxy."
    )


class ServerCheck(_Wire):
    """HAProxy's state of one server and its last health check (``show stat``)."""

    backend: str
    server: str
    status: str = Field(description="HAProxy's status column: UP, DOWN, MAINT, no check, ...")
    check_status: str | None = Field(None, description="L4CON, L4TOUT, L7STS, L7RSP, ...")
    check_code: str | None = Field(None, description="The layer 5-7 code, e.g. 503.")
    check_desc: str | None = Field(None, description="The check status in words.")
    last_check: str | None = Field(None, description="What the last check saw (last_chk).")


class AmphoraDiagnosis(_Wire):
    """Answer to GET /v1/amphorae/{amphora_id}/diagnosis."""

    amphora_id: str
    haproxy_pids: tuple[int, ...] = Field((), description="The master and its workers.")
    vip_ports: tuple[VipPortCheck, ...] = ()
    servers: tuple[ServerCheck, ...] = ()
