"""A Kubernetes controller in Kuryr's design: each selected Service becomes one load
balancer, converged through the public Octavia v2 API (so it drives lbaas or a real
Octavia alike).

The core is pure and takes its I/O as constructor arguments: ``desired`` (Service +
endpoints → the load balancer it should have), ``pipeline`` (per-object ordered,
coalesced, concurrent work with jittered backoff), ``converge`` (desired → Octavia calls,
through the ``OctaviaApi`` of ``base``), ``patches`` (what is written back to Kubernetes).
The thin I/O parts are ``kube_client`` (lightkube against the Kubernetes API, configured
by ``kube_config``) and ``octavia_sdk`` (openstacksdk's authenticated session, so a
clouds.yaml works).
"""
