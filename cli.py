"""The ``flagadmin`` command line: create the database, load seed documents, manage tokens,
back up, serve.

One short function per command; long ones are split into named steps. Every command takes
``--db`` (default ``$FLAGADMIN_DATABASE``, else ``./flagadmin.db``) and shows an example in its
``--help``.
"""

from __future__ import annotations

import logging
import os
import sys
from datetime import UTC, datetime

import click

from . import __version__, revision
from .app import DEFAULT_DATABASE, create_app
from .config import SettingsError
from .store import Connection, connect, schema


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


def open_database(database: str) -> Connection:
    """Create or upgrade the database, then open it; exit with a message on failure."""
    try:
        schema.ensure_schema(database)
    except schema.SchemaError as exc:
        raise click.ClickException(str(exc)) from exc
    return connect(database)


def _version_message() -> str:
    return f"flagadmin {__version__} (revision {revision.current()})"


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_message())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the git revision it was built from, then exit.",
)
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
        before = schema.ensure_schema(database)
    except schema.SchemaError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{database}: schema version {schema.SCHEMA_VERSION} (was {before}).")


def _report_refused_seed(problems: list[str]) -> None:
    click.echo("Seed refused, nothing was written:", err=True)
    for problem in problems[:50]:
        click.echo(f"  {problem}", err=True)
    if len(problems) > 50:
        click.echo(f"  ... and {len(problems) - 50} more", err=True)


@cli.command("seed")
@database_option()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
def seed(database: str, paths: tuple[str, ...]) -> None:
    """Load seed documents (files, or folders of *.json) in one transaction.

    With no PATH, loads the demo dataset. An invalid document is refused with a message
    naming the file, the record and the field, and nothing is written. A seed load is a
    bootstrap: it writes no events.

    \b
    Example:
      flagadmin seed ./my-install.json ./more-seeds/
    """
    from .seed_documents import SeedError, demo_files, load_files

    with open_database(database) as conn:
        try:
            counts = load_files(conn, paths or demo_files())
        except SeedError as exc:
            _report_refused_seed(exc.problems)
            sys.exit(1)
    click.echo("Loaded " + ", ".join(f"{n} {key}" for key, n in counts.items()) + ".")


def _expiry(ctx, param, duration: str | None) -> str | None:
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


@cli.command("create-token")
@database_option()
@click.option("--admin", "admin", is_flag=True, help="An admin API token (acts as Admin).")
@click.option("--user", "username", metavar="USERNAME", help="A personal access token for this user.")
@click.option("--name", default=None, help="A label shown by list-tokens.")
@click.option(
    "--expires-in",
    "expires_at",
    metavar="DURATION",
    callback=_expiry,
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
    with open_database(database) as conn:
        if admin:
            token = tokens.new_admin_token()
            tokens.insert_token(conn, token, kind="admin", name=name or "admin token", expires_at=expires_at)
        else:
            user_id = users.id_by_username(conn, username)
            if user_id is None:
                raise click.ClickException(f"No user has the username {username!r}.")
            token = tokens.new_personal_token()
            tokens.insert_token(
                conn,
                token,
                kind="personal",
                user_id=user_id,
                name=name or f"{username} token",
                expires_at=expires_at,
            )
    click.echo(token)
    if expires_at:
        click.echo(f"It expires at {expires_at}.", err=True)


#: Columns of ``list-tokens``: heading -> key of :func:`flagadmin.store.tokens.list_tokens`.
TOKEN_COLUMNS = {
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


def _echo_table(columns: dict[str, str], rows: list[dict]) -> None:
    """Print ``rows`` as a table of ``columns`` (heading -> key), cells two spaces apart."""
    table = [tuple(columns)] + [
        tuple("-" if row[key] is None else " ".join(str(row[key]).split()) for key in columns.values())
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    for line in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


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

    with open_database(database) as conn:
        rows = tokens.list_tokens(conn)
    if not rows:
        click.echo("No API tokens. Create one with `flagadmin create-token --admin`.")
        return
    _echo_table(TOKEN_COLUMNS, rows)


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

    with open_database(database) as conn:
        result = tokens.revoke(conn, token_id)
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


# --- serve, in named steps ---------------------------------------------------------------


def _checked_base_path(base_uri_path: str) -> str:
    """``--base-uri-path`` without its trailing slash; it must start with ``/``."""
    base_uri_path = base_uri_path.rstrip("/")
    if base_uri_path and not base_uri_path.startswith("/"):
        raise click.BadParameter("must start with /", param_hint="--base-uri-path")
    return base_uri_path


def _seed_demo_if_empty(conn: Connection) -> None:
    """Load the demo dataset into an empty database (``serve --demo``)."""
    from .seed_documents import demo_files, load_files
    from .store import seed as store_seed

    if store_seed.is_empty(conn):
        counts = load_files(conn, demo_files())
        click.echo("Loaded the demo dataset: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ".")


def _ensure_admin_token(conn: Connection) -> None:
    """Make ``FLAGADMIN_ADMIN_TOKEN`` a valid admin token, or create and print one when the
    database holds none."""
    from .store import tokens

    fixed = os.environ.get("FLAGADMIN_ADMIN_TOKEN")
    if fixed:
        tokens.ensure_admin_token(conn, fixed, name="FLAGADMIN_ADMIN_TOKEN")
        click.echo("Admin API token: the value of FLAGADMIN_ADMIN_TOKEN.")
    elif not tokens.has_admin_token(conn):
        token = tokens.new_admin_token()
        tokens.insert_token(conn, token, kind="admin", name="created by serve")
        click.echo(f"Admin API token (shown once, stored only as a digest): {token}")


def _wsgi_app(database: str, base_uri_path: str, access_log: bool):
    """The app, mounted at ``base_uri_path`` so that every other path is a JSON 404 rather
    than an alias."""
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    from .web.errors import outside_base_path

    try:
        app = create_app({"DATABASE": database, "BASE_URI_PATH": base_uri_path, "ACCESS_LOG": access_log})
    except (SettingsError, schema.SchemaError) as exc:
        raise click.ClickException(str(exc)) from exc
    return DispatcherMiddleware(outside_base_path, {base_uri_path: app}) if base_uri_path else app


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
    from .serving import serve as serve_wsgi

    base_uri_path = _checked_base_path(base_uri_path)
    with open_database(database) as conn:
        if demo:
            _seed_demo_if_empty(conn)
        _ensure_admin_token(conn)
    wsgi = _wsgi_app(database, base_uri_path, access_log)
    click.echo(f"{_version_message()} serving {database} on http://{host}:{port}{base_uri_path}/")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve_wsgi(wsgi, host=host, port=port, threads=threads)


def main() -> None:
    """Entry point of the ``flagadmin`` console script: find the revision once, then run."""
    revision.detect_from_checkout()
    cli()
