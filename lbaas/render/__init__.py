"""Configuration renderers: pure functions from a load-balancer graph to a tool's config text.

The controller renders a configuration centrally and the agent validates it with the real
tool before applying it, so both import this package. That is why it may import only the
standard library, ``lbaas.model`` and ``lbaas.errors``: no database, no subprocess, no
settings object. A renderer that needs something from the deployment (paths, the address
to bind) receives it as an explicit context argument.
"""
