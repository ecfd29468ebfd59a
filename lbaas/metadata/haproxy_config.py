"""The HAProxy configuration of one network's metadata proxy (pure).

The proxy listens on the metadata address inside its network's namespace on one host. It
removes every header a client could send to pass for someone else (the identity headers,
``X-Forwarded-For``, the network id), sets the network id and the client's address itself,
and hands the request to the agent over the agent's UNIX socket. Only HAProxy reaches that
socket, so the agent can trust those two headers.
"""

from __future__ import annotations

from pathlib import Path

#: The metadata address and the MAC it answers from: the same on every host, as OVN's
#: localport has one address and MAC everywhere (fa:16:3e is OpenStack's MAC prefix).
METADATA_ADDRESS = "169.254.169.254"
METADATA_MAC = "fa:16:3e:a9:fe:fe"
METADATA_PORT = 80
#: The header carrying the network a request came in on, as Neutron's proxies name it.
NETWORK_ID_HEADER = "X-Neutron-Network-ID"
# A socket path longer than this does not fit in sockaddr_un.
MAX_SOCKET_PATH = 107


def proxy_config(network_id: str, agent_socket: Path) -> str:
    """The configuration text; ``network_id`` is a registry id (checked by the caller)."""
    socket_path = str(agent_socket.absolute())
    if len(socket_path.encode()) > MAX_SOCKET_PATH:
        raise ValueError(f"agent socket path too long for a unix socket: {socket_path}")
    return "\n".join(
        [
            "global",
            "    maxconn 256",
            "    nbthread 1",
            "",
            "defaults",
            "    mode http",
            "    timeout connect 5s",
            "    timeout client 30s",
            "    timeout server 30s",
            "    timeout http-request 10s",
            "",
            "frontend metadata",
            f"    bind {METADATA_ADDRESS}:{METADATA_PORT}",
            # Identity headers are the agent's to set: X-Instance-ID* and X-Tenant-ID.
            "    http-request del-header X-Instance-ID -m beg",
            "    http-request del-header X-Tenant-ID",
            "    http-request del-header X-Forwarded-For",
            f"    http-request set-header {NETWORK_ID_HEADER} {network_id}",
            "    http-request set-header X-Forwarded-For %[src]",
            "    default_backend agent",
            "",
            "backend agent",
            f"    server agent unix@{socket_path}",
            "",
        ]
    )
