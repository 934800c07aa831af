"""The ``flagadmin`` command line: help, init-db, create-token, seed refusals."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import orjson
import pytest
from scim_helpers import Scim, new_scim_token, user_body

from flagadmin.app import create_app
from flagadmin.cli import cli
from flagadmin.config import Settings
from flagadmin.store import connect, integration_events, tokens
from flagadmin.store import schema as store_db
from flagadmin.store.tokens import digest

from helpers import fingerprint, table_counts, table_names


def schema_version(target: str) -> int:
    """The schema version stored in the database at ``target``, as each engine keeps it
    (SQLite: ``PRAGMA user_version``; PostgreSQL: the settings row ``schema_version``)."""
    with connect(target) as conn:
        if conn.dialect == "postgresql":
            return int(conn.value("SELECT value FROM settings WHERE key = 'schema_version'"))
        return conn.pragma("user_version")


def set_schema_version(target: str, version: int) -> None:
    """Make the database at ``target`` look written by a flagadmin of schema ``version``."""
    with connect(target) as conn:
        if conn.dialect == "postgresql":
            conn.run("UPDATE settings SET value = ? WHERE key = 'schema_version'", [str(version)])
        else:
            conn.pragma(f"user_version = {int(version)}")


def every_row_as_text(target: str) -> str:
    """Every row of every table of the database at ``target``, as text (either engine)."""
    with connect(target) as conn:
        return "\n".join(repr(conn.all(f'SELECT * FROM "{name}"')) for name in table_names(conn))


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


def test_init_db__newer_schema__refused_and_untouched(invoke):
    # Given: a database written by a newer flagadmin (schema version 99)
    assert invoke("init-db").exit_code == 0
    set_schema_version(invoke.db, 99)
    before = fingerprint(invoke.db)
    # When
    result = invoke("init-db")
    # Then
    assert result.exit_code != 0
    assert "newer" in result.output and "not changed" in result.output
    assert schema_version(invoke.db) == 99
    assert fingerprint(invoke.db) == before


def test_init_db__sqlite_file_of_a_newer_schema__refused_and_every_byte_untouched(db_path, invoke):
    # Given: a SQLite file holding nothing but a newer schema version
    path = db_path.parent / "newer.db"
    set_schema_version(str(path), 99)
    before = path.read_bytes()
    # When
    result = invoke("init-db", db=str(path))
    # Then
    assert result.exit_code != 0
    assert "newer" in result.output and "not changed" in result.output
    assert path.read_bytes() == before


def test_db__default_from_environment(runner, empty_database, monkeypatch):
    # Given: the database named by FLAGADMIN_DATABASE only (a path, or a postgresql:// URL)
    monkeypatch.setenv("FLAGADMIN_DATABASE", empty_database)
    # When
    result = runner.invoke(cli, ["init-db"])
    # Then
    assert result.exit_code == 0, result.output
    assert schema_version(empty_database) == store_db.SCHEMA_VERSION
    assert table_counts(empty_database)["features"] == 0


def test_seed__demo__loaded(invoke):
    result = invoke("seed")
    assert result.exit_code == 0, result.output
    assert "40 features" in result.output


def test_create_token__admin_and_user__printed_once_stored_as_digest(invoke):
    invoke("seed")
    admin = invoke("create-token", "--admin").output.strip()
    personal = invoke("create-token", "--user", "alice").output.strip()
    assert admin.startswith("*:*.") and personal.startswith("user:")
    with connect(invoke.db) as conn:
        stored = set(conn.values("SELECT digest FROM api_tokens"))
    dump = every_row_as_text(invoke.db)
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
        (lambda d: d["users"][0].update(colour="red"), ["users[0]", "colour", "is unknown here"]),
        (lambda d: d["users"][0].pop("username"), ["users[0]", "username", "required"]),
        (lambda d: d["users"][0].update(rootRole="Owner"), ["users[0]", "rootRole", "must be one of"]),
        (lambda d: d["features"][0].update(project="nope"), ["features[0]", "project", "'nope'"]),
        (lambda d: d["favorites"][0].update(feature="ghost"), ["favorites[0]", "feature", "'ghost'"]),
        (
            lambda d: d["users"].append({"id": 1, "username": "bob", "rootRole": "Viewer"}),
            ["users[1]", "duplicate id 1"],
        ),
        (lambda d: d["features"][0].update(createdAt="yesterday"), ["features[0]", "createdAt"]),
        (lambda d: d["features"][0].update(type="toggle"), ["features[0]", "type"]),
        (lambda d: d.update(things=[]), ["things", "is unknown here"]),
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
    assert table_counts(invoke.db)["users"] == 0


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

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"create_app ran a process: {args}")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    for _ in range(3):
        app = create_app({"DATABASE": database})
        assert app.test_client().get("/health").status_code == 200


# --- seeds on either engine ---------------------------------------------------------

IDS_GIVEN = {
    "users": [{"id": 500, "username": "given", "rootRole": "Admin"}],
    "integrations": [{"id": 700, "provider": "webhook", "parameters": {"url": "http://127.0.0.1:9/x"}}],
    "integrationEvents": [
        {
            "integrationId": 700,
            "createdAt": "2026-01-01T00:00:00.000Z",
            "state": "success",
            "stateDetails": "ok",
            "event": {
                "id": 1,
                "type": "feature-created",
                "createdBy": "x",
                "createdAt": "2026-01-01T00:00:00.000Z",
            },
            "details": {},
        }
    ],
}


def test_seed__ids_given__later_users_integrations_and_log_rows_get_ids_after_them(invoke, tmp_path):
    # Given: a seed that gives a user and an integration their ids

    assert invoke("seed", write(tmp_path, "ids.json", IDS_GIVEN)).exit_code == 0
    with connect(invoke.db) as conn:
        seeded_log_id = conn.value("SELECT max(id) FROM integration_events")
        admin = tokens.new_admin_token()
        tokens.insert_token(conn, admin, kind="admin", name="ids")
        scim_token = new_scim_token(conn)
    client = create_app(
        {
            "DATABASE": invoke.db,
            "TESTING": True,
            "SETTINGS": Settings(git_revision="abc123", integrations_allowed_hosts=("127.0.0.1",)),
        }
    ).test_client()
    # When: a user, an integration and a log row are created without ids
    user = Scim(client, scim_token).post("/Users", user_body("later@example.com"))
    addon = client.post(
        "/api/admin/addons",
        json={
            "provider": "webhook",
            "enabled": True,
            "parameters": {"url": "http://127.0.0.1:9/y"},
            "events": [],
        },
        headers={"Authorization": admin},
    )
    with connect(invoke.db) as conn, conn.write("integration_events"):
        row = integration_events.append(
            conn,
            700,
            created_at="2026-01-02T00:00:00.000Z",
            state="success",
            state_details="ok",
            event='{"id":2}',
            details="{}",
        )
    # Then: each takes the next id after the given ones
    assert user.status_code == 201, user.get_json()
    assert int(user.get_json()["id"]) == 501
    assert addon.status_code == 201, addon.get_json()
    assert addon.get_json()["id"] == 701
    assert int(orjson.loads(row)["id"]) > seeded_log_id


def test_seed__text_with_nul__refused_naming_where_and_nothing_written(invoke, tmp_path):
    # Given: a document whose flag description holds NUL (PostgreSQL cannot store it)
    document = json.loads(json.dumps(VALID))
    document["features"][0]["description"] = "before\x00after"
    # When
    result = invoke("seed", write(tmp_path, "nul.json", document))
    # Then
    assert result.exit_code == 1
    assert "features[0] (name 'f'): description: must not contain the character NUL" in result.output
    assert table_counts(invoke.db)["users"] == 0


def test_seed__flags_of_its_names_created_over_http_meanwhile__one_side_wins_cleanly(invoke, tmp_path):
    # Given: the demo data, a seed of 200 flags of which 20 are also being created over HTTP
    assert invoke("seed").exit_code == 0
    with connect(invoke.db) as conn:
        admin = tokens.new_admin_token()
        tokens.insert_token(conn, admin, kind="admin", name="race")
    app = create_app({"DATABASE": invoke.db, "TESTING": True, "SETTINGS": Settings(git_revision="abc")})
    contested = [f"meanwhile-{n}" for n in range(20)]
    names = [f"bulk-{n}" for n in range(180)] + contested
    bulk = {
        "projects": [{"id": "bulk", "name": "Bulk"}],
        "features": [
            {"name": name, "project": "bulk", "type": "release", "createdAt": "2026-01-01T00:00:00Z"}
            for name in names
        ],
    }
    path = write(tmp_path, "bulk.json", bulk)
    statuses: list[int] = []
    started = threading.Event()

    def create_flags() -> None:
        http = app.test_client()
        started.set()
        for name in contested:
            response = http.post(
                "/api/admin/projects/default/features", json={"name": name}, headers={"Authorization": admin}
            )
            statuses.append(response.status_code)

    # When: the flags are created over HTTP while the seed loads
    creator = threading.Thread(target=create_flags)
    creator.start()
    started.wait(10)
    result = invoke("seed", path)
    creator.join(60)
    # Then: each side either wrote or was refused as on SQLite (taken: 400; already exists),
    # never a 409, a 500 or a half-written seed; and each name names one flag
    assert len(statuses) == 20 and set(statuses) <= {201, 400}
    with connect(invoke.db) as conn:
        bulk_flags = conn.value("SELECT count(*) FROM features WHERE project_id = 'bulk'")
        stored = conn.value("SELECT count(*) FROM features WHERE name LIKE 'meanwhile-%'")
    assert stored == 20
    if result.exit_code == 0:
        assert statuses == [400] * 20 and bulk_flags == 200
    else:
        assert result.exit_code == 1 and "already exists in the database" in result.output, result.output
        assert 201 in statuses and bulk_flags == 0


# --- a --db that names no database; every error one line ---------------------------------

#: Every command that needs a database to exist, with arguments it would otherwise accept
#: (init-db, seed and serve create a missing one).
NEEDS_A_DATABASE = [
    ("create-token", "--admin"),
    ("create-token", "--user", "alice"),
    ("list-tokens",),
    ("revoke-token", "1"),
    ("backup", "COPY"),
    ("deliver", "--once"),
    ("project", "create", "checkout"),
    ("project", "update", "checkout", "--name", "Checkout"),
    ("project", "delete", "checkout"),
    ("project", "role", "checkout", "alice", "Owner"),
    ("environment", "add", "staging"),
    ("group-role", "Flag admins"),
    ("group-role", "Flag admins", "--root-role", "Admin"),
]


@pytest.fixture
def missing_database(engine, tmp_path, request):
    """A --db that names no database, and a check that it still names none: a path where no
    file is (SQLite), or the URL of a database the server does not hold (PostgreSQL)."""
    if engine == "postgresql":
        import psycopg

        server = request.getfixturevalue("postgres_server")
        url = urlunsplit(urlsplit(server)._replace(path="/flagadmin_mistyped"))

        def exists() -> bool:
            with psycopg.connect(server, autocommit=True) as conn:
                found = conn.execute("SELECT 1 FROM pg_database WHERE datname = 'flagadmin_mistyped'")
                return found.fetchone() is not None

        return url, exists
    path = tmp_path / "mistyped.db"
    return str(path), lambda: any(tmp_path.glob("mistyped.db*"))


def assert_one_line_error(result, status: int, *texts: str) -> None:
    """``result`` failed with ``status``, saying so on one line (no traceback) holding ``texts``."""
    assert result.exit_code == status, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for text in texts:
        assert text in lines[0], result.output


@pytest.mark.parametrize("args", NEEDS_A_DATABASE, ids=" ".join)
def test_command__missing_database__refused_naming_it_and_nothing_created(
    engine, invoke, missing_database, tmp_path, args
):
    # Given: a --db naming no database (a typo)
    target, exists = missing_database
    if args[0] == "backup" and engine == "postgresql":
        pytest.skip("backup copies SQLite files; on PostgreSQL it points to pg_dump")
    args = tuple(str(tmp_path / "copy.db") if arg == "COPY" else arg for arg in args)
    # When
    result = invoke(*args, db=target)
    # Then: refused in one line that names it and says how to create it, and still no database
    shown_target = target if engine == "sqlite" else "flagadmin_mistyped"
    how = "flagadmin init-db --db" if engine == "sqlite" else "createdb"
    assert_one_line_error(result, 2, shown_target, how)
    assert not exists()
    assert not (tmp_path / "copy.db").exists()


def test_init_db_and_seed__missing_sqlite_database__created(db_path, invoke):
    for command in ("init-db", "seed"):
        path = db_path.parent / f"new-by-{command}.db"
        assert invoke(command, db=str(path)).exit_code == 0
        assert schema_version(str(path)) == store_db.SCHEMA_VERSION


def test_command__postgresql_server_unreachable__one_line_without_the_password(invoke):
    from helpers import free_port

    url = f"postgresql://flagadmin:s3cret@127.0.0.1:{free_port()}/flagadmin"
    for args in (("list-tokens",), ("init-db",), ("seed",)):
        result = invoke(*args, db=url)
        assert_one_line_error(result, 2, "cannot be reached", "127.0.0.1", "--db")
        assert "s3cret" not in result.output


@pytest.mark.parametrize(
    ("args", "status", "texts"),
    [
        (("create-token", "--admin", "--expires-in", "soon"), 2, ["--expires-in", "P30D", "--help"]),
        (("create-token",), 2, ["--admin", "--user"]),
        (("revoke-token", "first"), 2, ["ID", "integer"]),
        (("revoke-token", "99999999999999999999999"), 2, ["ID"]),
        (("environment", "add", "staging", "--sort-order", "99999999999"), 2, ["--sort-order"]),
        (("project", "update", "default"), 2, ["--name", "--description"]),
        (("no-such-command",), 2, ["no-such-command", "flagadmin --help"]),
        (
            ("backup", "{tmp}/no-such-folder/copy.db"),
            1,
            ["no-such-folder", "mkdir -p", "Nothing was written"],
        ),
        (("backup", "/proc/copy.db"), 1, ["/proc/copy.db", "Nothing was written"]),
        (("backup", "{tmp}"), 2, ["directory"]),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_command__bad_input__one_line_error_saying_what_to_do(db_path, invoke, tmp_path, args, status, texts):
    # Given: an existing database, and a command given a bad value
    args = tuple(arg.replace("{tmp}", str(tmp_path)) for arg in args)
    if "/proc/copy.db" in args and not Path("/proc/self").exists():
        pytest.skip("needs Linux's /proc, where no file can be created")
    # When
    result = invoke(*args, db=str(db_path))
    # Then
    assert_one_line_error(result, status, *texts)


def test_command__file_that_is_not_a_database__refused_and_untouched(invoke, tmp_path):
    # Given: a file that is not a SQLite database
    path = tmp_path / "notes.db"
    path.write_bytes(b"not a database, but someone's notes " * 100)
    for args in (("list-tokens",), ("create-token", "--admin"), ("init-db",), ("seed",), ("backup", "x.db")):
        # When
        result = invoke(*args, db=str(path))
        # Then
        assert_one_line_error(result, 2, str(path), "not a flagadmin database", "--db")
        assert path.read_bytes() == b"not a database, but someone's notes " * 100


def test_init_db__folder_missing__refused_saying_to_create_it(invoke, tmp_path):
    path = tmp_path / "not-yet" / "flagadmin.db"
    result = invoke("init-db", db=str(path))
    assert_one_line_error(result, 2, str(path.parent), "mkdir -p")
    assert not path.parent.exists()


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("*:*.abc def", "whitespace"),
        (" *:*.abc", "whitespace"),
        ("*:*.abc\n", "whitespace"),
        ("*:*.abc\t", "whitespace"),
        ("*:*.abc\x7f", "control character"),
        ("*:*.clé", "outside ASCII"),
        ("*:*." + "a" * 600, "longer than 512"),
    ],
    ids=["inner space", "leading space", "newline", "tab", "DEL", "accent", "too long"],
)
def test_serve__admin_token_no_request_could_send__refused_before_anything_is_written(
    invoke, database, token, problem
):
    # Given: FLAGADMIN_ADMIN_TOKEN holding a value no Authorization header can carry
    before = every_row_as_text(database)
    # When
    result = invoke("serve", "--port", "0", db=database, env={"FLAGADMIN_ADMIN_TOKEN": token})
    # Then: refused in one line saying what is accepted; nothing stored
    assert_one_line_error(result, 1, "FLAGADMIN_ADMIN_TOKEN", problem, "printable ASCII without spaces")
    assert every_row_as_text(database) == before


def test_serve__port_in_use__one_line_naming_the_port_and_nothing_written(database, tmp_path):
    import socket

    from helpers import flagadmin

    # Given: something already listening on the port
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        missing = tmp_path / "new.db"
        for target in (database, str(missing)):
            # When
            result = flagadmin("serve", "--db", target, "--port", str(port), timeout=60)
            # Then: one line on stderr naming the port and what to do; no traceback
            assert result.returncode == 1, result.stderr
            assert "Traceback" not in result.stderr
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and f"port {port}" in lines[0] and "--port" in lines[0], result.stderr
        assert not missing.exists()


def test_serve__host_unknown__one_line_saying_what_to_give(invoke, db_path):
    result = invoke("serve", "--host", "no-such-host.invalid", db=str(db_path))
    assert_one_line_error(result, 1, "no-such-host.invalid", "--host")


@pytest.mark.parametrize("target", ["", ":memory:"])
@pytest.mark.parametrize("command", ["init-db", "list-tokens"])
def test_db__names_no_file__refused(runner, target, command):
    # SQLite would open a database of its own for these, which no other command could read
    result = runner.invoke(cli, [command, "--db", target], catch_exceptions=False)
    assert_one_line_error(result, 2, "--db", "names no file")


def test_init_db__folder_where_no_file_can_be_made__refused_saying_what_to_check(invoke):
    if not Path("/sys/kernel").is_dir():
        pytest.skip("needs Linux's /sys, where no file can be created")
    result = invoke("init-db", db="/sys/flagadmin.db")
    assert_one_line_error(result, 2, "cannot create /sys/flagadmin.db", "may write the folder /sys")


def test_create_token__unknown_user__says_what_to_check_and_nothing_written(invoke, database):
    before = every_row_as_text(database)
    result = invoke("create-token", "--user", "nobody", db=database)
    assert_one_line_error(result, 1, "'nobody'", "spelling", "Nothing was written")
    assert every_row_as_text(database) == before
