"""The per-host agent: runs one HAProxy per amphora and converges it to what it is sent.

The controller sends the whole desired state of an amphora in one versioned HTTPS call
(mutual TLS, ``wire`` holds the schema); the agent validates the configuration with the real
HAProxy, plumbs namespaces in netns mode, applies the change the least disruptive way, keeps
HAProxy alive and sends signed UDP heartbeats with statistics. What it needs to know about
a configuration (sockets, maxconn, servers) comes as data beside the text; the text is only
for HAProxy. It runs on data-plane hosts, so it imports only the domain model, the error
tree, its settings, the renderers' name functions, the heartbeat wire format, certificates
and its own modules; never the database, the API, the providers or the controller.
"""
