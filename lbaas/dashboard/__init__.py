"""The web dashboard (issue 17): a live topology of the load balancers a caller may see.

``snapshot`` turns the database's rows into the JSON the page draws; ``stream`` is the
server-sent event loop that pushes changes of it; ``static/`` holds the page and its one
hand-written script. The routes, with the API's authentication and RBAC, are in
``lbaas.api.routers.dashboard``.
"""
