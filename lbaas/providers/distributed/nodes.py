"""``NodeDirectory`` from settings: ``providers.distributed_nodes``, else the local agent."""

from __future__ import annotations

from urllib.parse import urlsplit

from lbaas.config import Settings
from lbaas.providers.distributed.base import Node, NodeDirectory


class SettingsNodeDirectory(NodeDirectory):
    def __init__(self, settings: Settings) -> None:
        urls = list(settings.providers.distributed_nodes)
        if not urls:
            host = settings.agent.host
            url_host = f"[{host}]" if ":" in host else host
            urls = [f"https://{url_host}:{settings.agent.port}"]
        self._nodes = [Node(urlsplit(url).netloc or url, url.rstrip("/")) for url in urls]

    def nodes(self) -> list[Node]:
        return list(self._nodes)
