"""A first real install (no --demo) starts as the reference server's does: the project
``default`` and the environments ``development`` and ``production`` exist, so the first flag
can be created at once; a seed that declares them identically still loads; an upgrade adds
nothing to an existing database. Either engine."""

from __future__ import annotations

from flagadmin.app import create_app
from flagadmin.config import Settings
from flagadmin.store import connect
from flagadmin.store import schema as store_schema


def test_init_db__new_database__default_project_and_two_environments(invoke):
    # When
    result = invoke("init-db")
    # Then
    assert result.exit_code == 0, result.output
    with connect(invoke.db) as conn:
        assert conn.all("SELECT id, name, description FROM projects") == [
            {"id": "default", "name": "Default", "description": "Default project"}
        ]
        assert conn.all("SELECT name, type FROM environments ORDER BY name") == [
            {"name": "development", "type": "development"},
            {"name": "production", "type": "production"},
        ]


def test_first_flag__new_database_without_seed__created_with_both_environments(invoke):
    # Given: a new install and an admin token, nothing seeded
    assert invoke("init-db").exit_code == 0
    token = invoke("create-token", "--admin").output.strip().splitlines()[-1]
    app = create_app({"DATABASE": invoke.db, "SETTINGS": Settings(), "TESTING": True})
    client = app.test_client()
    # When
    answer = client.post(
        "/api/admin/projects/default/features", json={"name": "first-flag"}, headers={"Authorization": token}
    )
    # Then
    assert answer.status_code in (200, 201), answer.get_json()
    with connect(invoke.db) as conn:
        assert conn.column(
            "SELECT name FROM feature_environments WHERE feature_name = 'first-flag' ORDER BY name"
        ) == ["development", "production"]


def test_seed__demo_on_new_database__loads_though_it_declares_the_defaults(invoke):
    """The demo declares default, development and production exactly as a new install has them."""
    assert invoke("init-db").exit_code == 0
    result = invoke("seed")
    assert result.exit_code == 0, result.output
    assert "4 projects" in result.output


def test_seed__default_project_declared_otherwise__refused_as_existing(invoke, tmp_path):
    assert invoke("init-db").exit_code == 0
    document = tmp_path / "other.json"
    document.write_text('{"projects": [{"id": "default", "name": "Something else"}]}')
    result = invoke("seed", str(document))
    assert result.exit_code != 0
    assert "already exists" in result.output


def test_ensure_schema__existing_database__upgrade_adds_no_project(empty_database):
    # Given: a database whose owner removed the defaults
    store_schema.ensure_schema(empty_database)
    with connect(empty_database) as conn, conn.write():
        conn.run("DELETE FROM projects")
        conn.run("DELETE FROM environments")
    # When: it is opened again (its schema is current: nothing to upgrade)
    store_schema.ensure_schema(empty_database)
    # Then
    with connect(empty_database) as conn:
        assert conn.value("SELECT count(*) FROM projects") == 0
        assert conn.value("SELECT count(*) FROM environments") == 0
