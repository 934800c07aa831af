"""What ships with the package: the schema and the demo dataset, and its shape."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources

from flagadmin.seed_documents import demo_files


def test_package__ships_schema_and_demo_seed():
    assert "CREATE TABLE" in resources.files("flagadmin").joinpath("schema.sql").read_text()
    assert [p.name for p in demo_files()] == ["demo.json"]


def test_demo__looks_like_a_real_small_install():
    data = json.loads(demo_files()[0].read_text())
    users = data["users"]
    assert len(users) >= 4
    assert {u["rootRole"] for u in users} == {"Admin", "Editor", "Viewer"}
    assert any(u["username"] == "admin" and u["rootRole"] == "Admin" for u in users)
    assert len(data["projects"]) == 4
    assert all(any(m["role"] == "Owner" for m in p["members"]) for p in data["projects"])
    assert all(len(p["members"]) >= 2 for p in data["projects"])
    features = data["features"]
    assert len(features) == 40
    assert {f["type"] for f in features} == {
        "release",
        "experiment",
        "operational",
        "kill-switch",
        "permission",
    }
    assert sum(1 for f in features if f["archivedAt"]) >= 10
    assert data["favorites"]
    events = [e for e in data["integrationEvents"] if e["integrationId"] in (1, 2)]
    assert len(events) >= 60
    assert set(Counter(e["state"] for e in events)) == {"success", "failed", "successWithErrors"}


def test_readme__lists_every_setting_and_command():
    from pathlib import Path

    from flagadmin.cli import cli
    from flagadmin.config import ENVIRONMENT_VARIABLES

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for name, default, _ in ENVIRONMENT_VARIABLES:
        assert f"| `{name}` | `{default}` |" in readme
    for command in cli.commands:
        assert f"flagadmin {command}" in readme
