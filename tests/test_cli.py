"""The ``flagadmin`` command line: help, init-db, create-token, seed refusals."""

from __future__ import annotations

import json
import sqlite3

import pytest

from flagadmin.cli import cli
from flagadmin.store import schema as store_db
from flagadmin.store.tokens import digest


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command__help_with_an_example(runner, command):
    result = runner.invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output
    assert "--db" in result.output


def test_init_db__twice__harmless(invoke):
    first = invoke("init-db")
    second = invoke("init-db")
    assert first.exit_code == 0 and second.exit_code == 0
    assert f"schema version {store_db.SCHEMA_VERSION} (was 0)" in first.output
    assert f"(was {store_db.SCHEMA_VERSION})" in second.output


def test_init_db__newer_schema__refused_and_untouched(invoke, tmp_path):
    path = tmp_path / "newer.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = path.read_bytes()
    result = invoke("init-db", db=str(path))
    assert result.exit_code != 0
    assert "newer" in result.output and "not changed" in result.output
    assert path.read_bytes() == before


def test_db__default_from_environment(runner, tmp_path, monkeypatch):
    path = tmp_path / "env.db"
    monkeypatch.setenv("FLAGADMIN_DATABASE", str(path))
    assert runner.invoke(cli, ["init-db"]).exit_code == 0
    assert path.exists()


def test_seed__demo__loaded(invoke):
    result = invoke("seed")
    assert result.exit_code == 0, result.output
    assert "40 features" in result.output


def test_create_token__admin_and_user__printed_once_stored_as_digest(invoke):
    invoke("seed")
    admin = invoke("create-token", "--admin").output.strip()
    personal = invoke("create-token", "--user", "alice").output.strip()
    assert admin.startswith("*:*.") and personal.startswith("user:")
    conn = sqlite3.connect(invoke.db)
    stored = {row[0] for row in conn.execute("SELECT digest FROM api_tokens")}
    dump = "\n".join(conn.iterdump())
    conn.close()
    assert stored == {digest(admin), digest(personal)}
    assert admin not in dump and personal not in dump


@pytest.mark.parametrize("args", [[], ["--admin", "--user", "alice"], ["--user", "nobody"]])
def test_create_token__bad_arguments__refused(invoke, args):
    invoke("seed")
    assert invoke("create-token", *args).exit_code != 0


def write(tmp_path, name: str, document) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


VALID = {
    "users": [{"id": 1, "username": "ann", "rootRole": "Admin"}],
    "projects": [{"id": "p", "name": "P", "members": [{"userId": 1, "role": "Owner"}]}],
    "features": [{"name": "f", "project": "p", "type": "release", "createdAt": "2026-01-01T00:00:00Z"}],
    "favorites": [{"userId": 1, "feature": "f"}],
    "integrations": [{"id": 1, "provider": "webhook"}],
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["users"][0].update(colour="red"), ["users[0]", "colour", "Unknown field"]),
        (lambda d: d["users"][0].pop("username"), ["users[0]", "username", "required"]),
        (lambda d: d["users"][0].update(rootRole="Owner"), ["users[0]", "rootRole", "Must be one of"]),
        (lambda d: d["features"][0].update(project="nope"), ["features[0]", "project", "'nope'"]),
        (lambda d: d["favorites"][0].update(feature="ghost"), ["favorites[0]", "feature", "'ghost'"]),
        (
            lambda d: d["users"].append({"id": 1, "username": "bob", "rootRole": "Viewer"}),
            ["users[1]", "duplicate id 1"],
        ),
        (lambda d: d["features"][0].update(createdAt="yesterday"), ["features[0]", "createdAt"]),
        (lambda d: d["features"][0].update(type="toggle"), ["features[0]", "type"]),
        (lambda d: d.update(things=[]), ["things", "Unknown field"]),
        (
            lambda d: d.update(
                integrationEvents=[
                    {
                        "integrationId": 1,
                        "createdAt": "2026-01-01T00:00:00Z",
                        "state": "success",
                        "stateDetails": "",
                        "event": {"id": 1},
                        "details": {},
                    }
                ]
            ),
            ["integrationEvents[0]", "event", "type"],
        ),
    ],
)
def test_seed__invalid_document__refused_naming_file_record_field_and_nothing_written(
    invoke, tmp_path, change, expected
):
    # Given: one valid document and one broken one, loaded in the same call
    good = write(tmp_path, "a-good.json", {"users": [{"id": 50, "username": "zed", "rootRole": "Viewer"}]})
    document = json.loads(json.dumps(VALID))
    change(document)
    bad = write(tmp_path, "b-bad.json", document)
    # When
    result = invoke("seed", good, bad)
    # Then
    assert result.exit_code == 1
    assert "b-bad.json" in result.output
    for text in expected:
        assert text in result.output
    conn = sqlite3.connect(invoke.db)
    assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == 0
    conn.close()


def test_seed__twice__second_refused_as_duplicate(invoke, tmp_path):
    path = write(tmp_path, "v.json", VALID)
    assert invoke("seed", path).exit_code == 0
    result = invoke("seed", path)
    assert result.exit_code == 1
    assert "already exists" in result.output


def test_seed__folder__loads_its_json_files_in_order(invoke, tmp_path):
    folder = tmp_path / "seeds"
    folder.mkdir()
    write(folder, "1-users.json", {"users": VALID["users"]})
    write(folder, "2-rest.json", {k: v for k, v in VALID.items() if k != "users"})
    result = invoke("seed", str(folder))
    assert result.exit_code == 0, result.output
    assert "1 users, 1 projects, 1 features, 1 favorites, 1 integrations" in result.output


def test_seed__not_json__refused(invoke, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{nope")
    result = invoke("seed", str(path))
    assert result.exit_code == 1
    assert "broken.json" in result.output and "not JSON" in result.output


def test_version__version_and_revision(runner):
    from flagadmin import __version__, revision

    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"flagadmin {__version__} (revision {revision.current()})"


def test_create_app__many_apps__never_run_git(database, monkeypatch):
    """The revision is found once, at build or at start (cli.main), never per app."""
    import subprocess

    from flagadmin.app import create_app

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"create_app ran a process: {args}")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    for _ in range(3):
        app = create_app({"DATABASE": database})
        assert app.test_client().get("/health").status_code == 200
