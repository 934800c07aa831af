"""The application factory and the ``flagadmin`` command line.

``create_app`` wires configuration, the JSON provider, the error envelope, the blueprints and
the OpenAPI document; importing this module has no side effects. The command line (``flagadmin
--help``) creates the database, loads seed documents, issues tokens and serves with waitress.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from flask import Flask

from . import __version__, access_log, api, auth, blueprints, errors, http_headers, throttle
from .config import SettingsError, settings_from_env
from .jsonio import OrjsonProvider
from .store import db as store_db
from .store import settings as store_settings

DEFAULT_DATABASE = "flagadmin.db"


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Return a configured flagadmin application.

    ``config`` keys: ``DATABASE`` (path of the SQLite file; default ``FLAGADMIN_DATABASE`` or
    ``./flagadmin.db``), ``SETTINGS`` (a :class:`~flagadmin.config.Settings`; default from the
    environment), ``BASE_URI_PATH`` (default ``""``), plus any Flask setting. The database is
    created or upgraded before the app is returned.

    :raise flagadmin.store.db.SchemaError: the database is newer than this code or unreadable.
    :raise flagadmin.config.SettingsError: an environment variable holds an unusable value.
    """
    app = Flask(__name__)
    app.json = OrjsonProvider(app)
    app.config.update(
        DATABASE=os.environ.get("FLAGADMIN_DATABASE", DEFAULT_DATABASE),
        BASE_URI_PATH="",
        MAX_CONTENT_LENGTH=64 * 1024,
    )
    app.config.update(config or {})
    if "SETTINGS" not in app.config:
        app.config["SETTINGS"] = settings_from_env()
    if app.config["SETTINGS"].git_revision is None:
        app.config["SETTINGS"] = _with_git_revision(app.config["SETTINGS"])
    store_db.ensure_schema(app.config["DATABASE"])
    db = store_db.connect(app.config["DATABASE"])
    try:
        app.config["INSTANCE_ID"] = store_settings.instance_id(db)
    finally:
        db.close()
    errors.register(app)
    auth.init_app(app)
    throttle.init_app(app)
    http_headers.init_app(app)
    access_log.init_app(app)
    api.init_app(app)
    blueprints.register(app)
    return app


def _with_git_revision(settings):
    """Fill ``git_revision`` from the checkout the code runs from, when there is one."""
    from dataclasses import replace

    try:
        revision = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return settings
    return replace(settings, git_revision=revision or None)


# --- command line -----------------------------------------------------------------------


def database_option(help_text: str = "SQLite database file (env FLAGADMIN_DATABASE). Created if missing."):
    """The ``--db PATH`` option every command takes (default ``$FLAGADMIN_DATABASE``)."""
    return click.option(
        "--db",
        "database",
        envvar="FLAGADMIN_DATABASE",
        default=DEFAULT_DATABASE,
        show_default=True,
        type=click.Path(dir_okay=False),
        help=help_text,
    )


def _open(database: str):
    """Create or upgrade the database, then open it; exit with a message on failure."""
    try:
        store_db.ensure_schema(database)
    except store_db.SchemaError as exc:
        raise click.ClickException(str(exc)) from exc
    return store_db.connect(database)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="flagadmin")
def cli() -> None:
    """flagadmin: the admin API of a feature-flag service, on SQLite.

    \b
    Example:
      flagadmin serve --demo
    """


@cli.command("init-db")
@database_option()
def init_db(database: str) -> None:
    """Create the database, or upgrade its schema; harmless to run twice.

    \b
    Example:
      flagadmin init-db --db /var/lib/flagadmin/flagadmin.db
    """
    try:
        before = store_db.ensure_schema(database)
    except store_db.SchemaError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{database}: schema version {store_db.SCHEMA_VERSION} (was {before}).")


@cli.command("seed")
@database_option()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
def seed(database: str, paths: tuple[str, ...]) -> None:
    """Load seed documents (files, or folders of *.json) in one transaction.

    With no PATH, loads the demo dataset. An invalid document is refused with a message
    naming the file, the record and the field, and nothing is written.

    \b
    Example:
      flagadmin seed ./my-install.json ./more-seeds/
    """
    from .seed_documents import SeedError, demo_files, load_files

    db = _open(database)
    try:
        counts = load_files(db, paths or demo_files())
    except SeedError as exc:
        click.echo("Seed refused, nothing was written:", err=True)
        for problem in exc.problems[:50]:
            click.echo(f"  {problem}", err=True)
        if len(exc.problems) > 50:
            click.echo(f"  ... and {len(exc.problems) - 50} more", err=True)
        sys.exit(1)
    finally:
        db.close()
    click.echo("Loaded " + ", ".join(f"{n} {key}" for key, n in counts.items()) + ".")


@cli.command("create-token")
@database_option()
@click.option("--admin", "admin", is_flag=True, help="An admin API token (acts as Admin).")
@click.option("--user", "username", metavar="USERNAME", help="A personal access token for this user.")
@click.option("--name", default=None, help="A label shown by list-tokens.")
@click.option(
    "--expires-in",
    "expires_at",
    metavar="DURATION",
    callback=lambda ctx, param, value: _expiry(value),
    help="Stop working after this ISO 8601 duration, e.g. P30D, PT12H, P1Y. Default: never.",
)
def create_token(
    database: str, admin: bool, username: str | None, name: str | None, expires_at: str | None
) -> None:
    """Print a new API token. It is shown once and stored only as a SHA-256 digest.

    \b
    Examples:
      flagadmin create-token --admin
      flagadmin create-token --user alice --expires-in P30D
    """
    from .store import tokens, users

    if admin == (username is not None):
        raise click.UsageError("Give exactly one of --admin or --user USERNAME.")
    db = _open(database)
    try:
        if admin:
            token = tokens.new_admin_token()
            tokens.insert_token(db, token, kind="admin", name=name or "admin token", expires_at=expires_at)
        else:
            user_id = users.id_by_username(db, username)
            if user_id is None:
                raise click.ClickException(f"No user has the username {username!r}.")
            token = tokens.new_personal_token()
            tokens.insert_token(
                db,
                token,
                kind="personal",
                user_id=user_id,
                name=name or f"{username} token",
                expires_at=expires_at,
            )
    finally:
        db.close()
    click.echo(token)
    if expires_at:
        click.echo(f"It expires at {expires_at}.", err=True)


def _expiry(duration: str | None) -> str | None:
    """Return the RFC 3339 moment ``duration`` (ISO 8601, e.g. ``P30D``) from now, or None."""
    import isodate

    from .timestamps import format_rfc3339

    if duration is None:
        return None
    now = datetime.now(UTC)
    try:
        expires = now + isodate.parse_duration(duration.strip().upper())
    except (isodate.ISO8601Error, ValueError, OverflowError) as exc:
        raise click.BadParameter(
            f"{duration!r} is not an ISO 8601 duration; e.g. P30D (30 days), PT12H (12 hours), P1Y.",
            param_hint="--expires-in",
        ) from exc
    if expires <= now:
        raise click.BadParameter("the duration must be longer than zero.", param_hint="--expires-in")
    return format_rfc3339(expires)


@cli.command("list-tokens")
@database_option()
def list_tokens(database: str) -> None:
    """List the API tokens: id, status, kind, user, name, when created, last used, expiring
    and revoked. Never a token or its digest.

    \b
    Example:
      flagadmin list-tokens --db /var/lib/flagadmin/flagadmin.db
    """
    from .store import tokens

    db = _open(database)
    try:
        rows = tokens.list_tokens(db)
    finally:
        db.close()
    if not rows:
        click.echo("No API tokens. Create one with `flagadmin create-token --admin`.")
        return
    columns = {
        "ID": "id",
        "STATUS": "status",
        "KIND": "kind",
        "USER": "username",
        "NAME": "name",
        "CREATED": "created_at",
        "LAST USED": "last_used_at",
        "EXPIRES": "expires_at",
        "REVOKED": "revoked_at",
    }
    table = [tuple(columns)] + [
        tuple("-" if row[key] is None else " ".join(str(row[key]).split()) for key in columns.values())
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    for line in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


@cli.command("revoke-token")
@database_option()
@click.argument("token_id", metavar="ID", type=click.IntRange(min=1))
def revoke_token(database: str, token_id: int) -> None:
    """Revoke the API token with this ID (see list-tokens); it gets 401 from the next request.

    \b
    Example:
      flagadmin revoke-token 3
    """
    from .store import tokens

    db = _open(database)
    try:
        result = tokens.revoke(db, token_id)
    finally:
        db.close()
    if result is None:
        raise click.ClickException(
            f"No API token has id {token_id}; `flagadmin list-tokens` shows the ids. Nothing was changed."
        )
    revoked_at, newly = result
    click.echo(f"Token {token_id} {'revoked' if newly else 'was already revoked'} at {revoked_at}.")


@cli.command("backup")
@database_option("SQLite database file to copy (env FLAGADMIN_DATABASE); never created or changed.")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace PATH if it exists.")
def backup(database: str, path: str, force: bool) -> None:
    """Copy the database to PATH as one consistent snapshot, even while serve runs and writes.

    Uses SQLite's online backup API; PATH is a single self-contained file, checked with
    PRAGMA integrity_check before it takes its name. An existing PATH is refused unless
    --force. To restore, stop the server and serve the copy (see the README).

    \b
    Example:
      flagadmin backup /var/backups/flagadmin-$(date +%F).db --db /var/lib/flagadmin/flagadmin.db
    """
    from .store.backup import BackupError
    from .store.backup import backup as backup_database

    try:
        result = backup_database(database, path, force=force)
    except BackupError as exc:
        raise click.ClickException(f"{exc} Nothing was written.") from exc
    click.echo(
        f"Backed up {database} to {result.path} ({result.size} bytes, schema version "
        f"{result.schema_version})."
    )


@cli.command("serve")
@database_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=4242, show_default=True, type=click.IntRange(0, 65535))
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256), help="Worker threads.")
@click.option("--base-uri-path", default="", help="Serve under this path prefix, e.g. /flags.")
@click.option("--demo", is_flag=True, help="Load the demo dataset into an empty database first.")
@click.option("--access-log", is_flag=True, help="Log one line per request (never headers or tokens).")
def serve(
    database: str, host: str, port: int, threads: int, base_uri_path: str, demo: bool, access_log: bool
) -> None:
    """Serve the admin API with waitress (loopback by default).

    Creates the database if missing. If it holds no admin token, one is created and printed
    once; with FLAGADMIN_ADMIN_TOKEN set, that exact token is made a valid admin token instead.
    SIGTERM lets in-flight requests finish, then exits.

    \b
    Example:
      flagadmin serve --demo --port 4242
    """
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    from .seed_documents import demo_files, load_files
    from .serving import serve as serve_wsgi
    from .store import seed as store_seed
    from .store import tokens

    base_uri_path = base_uri_path.rstrip("/")
    if base_uri_path and not base_uri_path.startswith("/"):
        raise click.BadParameter("must start with /", param_hint="--base-uri-path")
    db = _open(database)
    try:
        if demo and store_seed.is_empty(db):
            counts = load_files(db, demo_files())
            click.echo("Loaded the demo dataset: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ".")
        fixed = os.environ.get("FLAGADMIN_ADMIN_TOKEN")
        if fixed:
            tokens.ensure_admin_token(db, fixed, name="FLAGADMIN_ADMIN_TOKEN")
            click.echo("Admin API token: the value of FLAGADMIN_ADMIN_TOKEN.")
        elif not tokens.has_admin_token(db):
            token = tokens.new_admin_token()
            tokens.insert_token(db, token, kind="admin", name="created by serve")
            click.echo(f"Admin API token (shown once, stored only as a digest): {token}")
    finally:
        db.close()
    try:
        app = create_app({"DATABASE": database, "BASE_URI_PATH": base_uri_path, "ACCESS_LOG": access_log})
    except (SettingsError, store_db.SchemaError) as exc:
        raise click.ClickException(str(exc)) from exc
    # Mounted at the prefix, so that every other path is a JSON 404 rather than an alias.
    wsgi = DispatcherMiddleware(errors.outside_base_path, {base_uri_path: app}) if base_uri_path else app
    click.echo(f"flagadmin {__version__} serving {database} on http://{host}:{port}{base_uri_path}/")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve_wsgi(wsgi, host=host, port=port, threads=threads)


def main() -> None:
    """Entry point of the ``flagadmin`` console script."""
    cli()
