"""Fixtures: a fresh seeded database file per test, ``make_app(**settings)``, the Flask test
client, ``seed(document)``, tokens, a clock moved by hand, the CLI runner, the OpenAPI
validator and a real waitress server on 127.0.0.1.

``pytest --answer-cache=off`` builds every app with its caches off: every answer is then built
afresh, and the answer checks must pass all the same (``.ci/run`` runs them both ways).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from openapi_schema_validator import OAS30Validator

from flagadmin.app import create_app
from flagadmin.cli import cli
from flagadmin.config import Settings
from flagadmin.seed_documents import demo_files, load_documents, load_files
from flagadmin.store import connect, schema, tokens, users

from helpers import LiveServer, ManualClock


def pytest_addoption(parser):
    parser.addoption(
        "--answer-cache",
        choices=("on", "off"),
        default="on",
        help="off: every app is built with its answer caches off (ANSWER_CACHE=False).",
    )


@pytest.fixture(scope="session")
def answer_cache(pytestconfig) -> bool:
    """Whether apps built by the fixtures keep answers (``--answer-cache``)."""
    return pytestconfig.getoption("--answer-cache") == "on"


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory) -> Path:
    """A database holding the demo dataset, built once per session and copied per test."""
    path = tmp_path_factory.mktemp("template") / "flagadmin.db"
    schema.ensure_schema(path)
    with connect(path) as conn:
        load_files(conn, demo_files())
        conn.pragma("wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture
def db_path(tmp_path: Path, seeded_template: Path) -> Path:
    """A new database file holding the demo dataset."""
    path = tmp_path / "flagadmin.db"
    shutil.copyfile(seeded_template, path)
    return path


@pytest.fixture
def make_app(db_path: Path, answer_cache: bool):
    """Build an app on the test's database: ``make_app(auth_failure_limit="3/minute")`` sets
    :class:`Settings` fields; ``config={...}`` adds app config (``CLOCK``, ``DATABASE``...)."""

    def make(config: dict | None = None, **settings):
        return create_app(
            {
                "DATABASE": str(db_path),
                "SETTINGS": Settings(**{"git_revision": "abc123", **settings}),
                "TESTING": True,
                "ANSWER_CACHE": answer_cache,
                **(config or {}),
            }
        )

    return make


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
def db(db_path: Path):
    """A connection to the test database, for checks and setup beside the HTTP stack."""
    with connect(db_path) as conn:
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
def invoke(runner, tmp_path):
    """Run a CLI command against a database in tmp_path: ``invoke("seed", ...)``."""
    path = str(tmp_path / "cli.db")

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
def live_server(db_path):
    """Start a real waitress server on the seeded database; ``live_server(env=...)``."""
    started: list[LiveServer] = []

    def start(**kwargs) -> LiveServer:
        server = LiveServer(kwargs.pop("path", db_path), **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
