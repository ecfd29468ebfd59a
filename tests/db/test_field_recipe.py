"""docs/architecture.md's "Adding a field" recipe, applied as written, works.

The recipe's steps are applied to a throw-away listener field in a copy of ``lbaas`` (each
step inserts its line after the line the recipe names, which must be there exactly once),
and a fresh process running that copy upgrades a SQLite database, starts a control plane,
creates a listener with the field and reads it back: from the API and from the graph a
provider is given. A recipe that misses a step fails here (at import, at start-up, as a
refused request or as a value lost on the way), and so does one whose files moved.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory

from lbaas.db.schema_check import MIGRATIONS

ROOT = Path(__file__).resolve().parents[2]
FIELD = "recipe_probe"

# (file in lbaas, the line the recipe says the new one follows, the new line)
STEPS = (
    (
        "db/tables.py",
        "    hsts_preload: Mapped[bool] = mapped_column(Boolean, nullable=False)\n",
        f"    {FIELD}: Mapped[str | None] = mapped_column(String(64))\n",
    ),
    ("db/loadbalancers/stored_tree.py", "    hsts_preload: bool\n", f"    {FIELD}: str | None\n"),
    (
        "api/schemas/listener.py",
        "    allowed_cidrs: list[Cidr] | None = None\n",
        f"    {FIELD}: str | None = None\n",
    ),
    ("api/builders/listener.py", '    "hsts_preload": False,\n', f'    "{FIELD}": None,\n'),
    ("model/graph.py", "    hsts_preload: bool = False\n", f"    {FIELD}: str | None = None\n"),
)

MIGRATION = '''"""the recipe's throw-away listener field"""

import sqlalchemy as sa
from alembic import op

revision = "9999_recipe"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("listeners") as batch_op:
        batch_op.add_column(sa.Column("{field}", sa.String(length=64), nullable=True))
'''

# Run by the copy: the field goes in with a POST and comes out of the GET and the graph.
SCRIPT = """
import sys
from pathlib import Path
from starlette.testclient import TestClient
import lbaas
from lbaas.db.loadbalancers.graph_loader import load_graph
from tests.support.api_client import Api
from tests.support.control_plane import asgi_app, make_settings, running_control_plane

assert lbaas.__file__.startswith(sys.argv[1]), lbaas.__file__
settings = make_settings(Path(sys.argv[2]), "")
with running_control_plane(settings) as plane, TestClient(asgi_app(plane)) as client:
    api = Api(client, "p-alpha", "member")
    lb = api.create_lb()
    body = {"listener": {"loadbalancer_id": lb["id"], "protocol": "TCP",
                         "protocol_port": 8080, "FIELD": "kept"}}
    r = api.post("/v2/lbaas/listeners", body)
    assert r.status_code == 201, r.text
    listener = r.json()["listener"]
    assert listener["FIELD"] == "kept", listener
    shown = api.get(f"/v2/lbaas/listeners/{listener['id']}").json()["listener"]
    assert shown["FIELD"] == "kept", shown
    api.wait_lb(lb["id"], timeout=60)  # a write while PENDING_UPDATE is Octavia's 409
    r = api.put(f"/v2/lbaas/listeners/{listener['id']}", {"listener": {"FIELD": None}})
    assert r.status_code == 200 and r.json()["listener"]["FIELD"] is None, r.text
    api.wait_lb(lb["id"], timeout=60)
    r = api.put(f"/v2/lbaas/listeners/{listener['id']}", {"listener": {"FIELD": "again"}})
    assert r.status_code == 200, r.text
    with plane.database.read_connection() as conn:
        graph = load_graph(conn, lb["id"])
    assert graph is not None and graph.listeners[0].FIELD == "again", graph
print("recipe followed")
""".replace("FIELD", FIELD)


def _apply_steps(copy: Path) -> None:
    for name, after, line in STEPS:
        path = copy / name
        source = path.read_text()
        assert source.count(after) == 1, f"{name}: the recipe's anchor line is not there once"
        path.write_text(source.replace(after, after + line))
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    migration = copy / "db/migrations/versions/9999_recipe_probe.py"
    migration.write_text(MIGRATION.format(head=head, field=FIELD))


def test_the_recipe_for_a_new_listener_field_works(tmp_path: Path) -> None:
    recipe = (ROOT / "docs/architecture.md").read_text()
    section = recipe.split("### Adding a field", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`lbaas/([\w/]+\.py)`", section))
    assert named == {name for name, _, _ in STEPS}, "the test and the recipe name other files"
    copy = tmp_path / "src" / "lbaas"
    shutil.copytree(ROOT / "lbaas", copy, ignore=shutil.ignore_patterns("__pycache__"))
    _apply_steps(copy)
    env = {**os.environ, "PYTHONPATH": f"{copy.parent}{os.pathsep}{ROOT}"}
    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(copy), str(state)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recipe followed" in done.stdout
