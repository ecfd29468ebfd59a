"""The keepalived renderer: one VRRPv3 instance per amphora of an ACTIVE_STANDBY pair."""

from lbaas.render.keepalived.config import VrrpConfig, render_keepalived_config

__all__ = ["VrrpConfig", "render_keepalived_config"]
