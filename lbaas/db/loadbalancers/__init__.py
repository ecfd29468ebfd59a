"""Load balancers and their tree (listeners, pools, members, monitors, L7): loading it
as rows, a typed tree or the domain graph, listing it, writing converge outcomes back."""
