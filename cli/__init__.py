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

from .. import __version__, revision
from ..app import DEFAULT_DATABASE, create_app
from ..config import SettingsError
from ..store import Connection, StoreError, connect, schema


def database_option(
    help_text: str = (
        "SQLite database file, or a postgresql:// URL (env FLAGADMIN_DATABASE). Created if missing."
    ),
):
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


def shown(database: str) -> str:
    """``database`` as it may be printed: a PostgreSQL URL without its password."""
    from ..store.schema import redacted

    return redacted(database)


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
    from ..seed.documents import SeedError, demo_files, load_files

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

    from ..timestamps import format_rfc3339

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
    from .. import events
    from ..store import users
    from ..tokens import changes as api_tokens

    if admin == (username is not None):
        raise click.UsageError("Give exactly one of --admin or --user USERNAME.")
    with open_database(database) as conn:
        # Issue 8: api_tokens records api-token-created / pat-created with the token.
        if admin:
            token, _ = api_tokens.create(
                conn, events.COMMAND_LINE, kind="admin", name=name or "admin token", expires_at=expires_at
            )
        else:
            user_id = users.id_by_username(conn, username)
            if user_id is None:
                raise click.ClickException(f"No user has the username {username!r}.")
            _refuse_deactivated(conn, username)
            token, _ = api_tokens.create(
                conn,
                events.COMMAND_LINE,
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
    from ..store import tokens

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
    from .. import events
    from ..tokens import changes as api_tokens

    with open_database(database) as conn:
        # Issue 8: api_tokens records api-token-deleted / pat-deleted with the revocation.
        result = api_tokens.revoke(conn, events.COMMAND_LINE, token_id)
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
    from ..store import is_postgresql
    from ..store.backup import BackupError
    from ..store.backup import backup as backup_database

    if is_postgresql(database):
        raise click.ClickException(
            "backup copies a SQLite file; on PostgreSQL use pg_dump, e.g. "
            "pg_dump --format=custom --file=flagadmin.dump 'postgresql://...'. Nothing was written."
        )
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
    from ..seed.documents import demo_files, load_files
    from ..store import seed as store_seed

    if store_seed.is_empty(conn):
        counts = load_files(conn, demo_files())
        click.echo("Loaded the demo dataset: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ".")


def _ensure_admin_token(conn: Connection) -> None:
    """Make ``FLAGADMIN_ADMIN_TOKEN`` a valid admin token, or create and print one when the
    database holds none."""
    from .. import events
    from ..store import tokens
    from ..tokens import changes as api_tokens

    # Issue 8: each change records its event (api-token-created / api-token-updated).
    fixed = os.environ.get("FLAGADMIN_ADMIN_TOKEN")
    if fixed:
        api_tokens.ensure_admin(conn, events.COMMAND_LINE, fixed, name="FLAGADMIN_ADMIN_TOKEN")
        click.echo("Admin API token: the value of FLAGADMIN_ADMIN_TOKEN.")
    elif not tokens.has_admin_token(conn):
        token, _ = api_tokens.create(conn, events.COMMAND_LINE, kind="admin", name="created by serve")
        click.echo(f"Admin API token (shown once, stored only as a digest): {token}")


def _wsgi_app(database: str, base_uri_path: str, access_log: bool, threads: int = 8):
    """The app and the WSGI callable to serve: the app mounted at ``base_uri_path``, so that
    every other path is a JSON 404 rather than an alias. On PostgreSQL its pool holds a
    connection per server thread, plus two."""
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    from ..web.errors import outside_base_path

    config = {"DATABASE": database, "BASE_URI_PATH": base_uri_path, "ACCESS_LOG": access_log}
    try:
        app = create_app({**config, "POOL_SIZE": threads + 2})
    except (SettingsError, schema.SchemaError) as exc:
        raise click.ClickException(str(exc)) from exc
    return app, DispatcherMiddleware(outside_base_path, {base_uri_path: app}) if base_uri_path else app


def _warm_up(app, threads: int) -> None:
    """Issue 13: do before traffic what a server thread's first request would do first. One
    request through Flask (``GET /health``: it loads the code paths every answer takes and opens
    no connection a thread keeps), then one warmed database connection per server thread
    (:meth:`~flagadmin.web.state.AppState.prewarm`). Runs before logging is set up: the
    warm-up request is not in the access log.

    Last, what start-up made (about 77,000 objects: the modules, the app, its schemas) is moved
    out of the cyclic garbage collector's reach (``gc.freeze``): it lives as long as the process,
    and each full collection walked all of it again (65 ms pauses, 8 in 20 s of the benchmark's
    mixed traffic; bench/RESULTS.md). Objects made later are collected as before.
    """
    import gc

    from ..web.state import state

    app.test_client().get("/health")
    try:
        state(app).prewarm(threads)
    except StoreError as exc:
        raise click.ClickException(f"cannot read the database: {exc}") from exc
    gc.collect()
    gc.freeze()


@cli.command("serve")
@database_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=4242, show_default=True, type=click.IntRange(0, 65535))
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256), help="Worker threads.")
@click.option("--base-uri-path", default="", help="Serve under this path prefix, e.g. /flags.")
@click.option("--demo", is_flag=True, help="Load the demo dataset into an empty database first.")
@click.option("--access-log", is_flag=True, help="Log one line per request (never headers or tokens).")
@click.option(
    "--delivery-workers",
    type=click.IntRange(0, 64),
    default=None,
    help="Threads delivering events to integrations (default FLAGADMIN_DELIVERY_WORKERS, 4; 0: none).",
)
def serve(
    database: str,
    host: str,
    port: int,
    threads: int,
    base_uri_path: str,
    demo: bool,
    access_log: bool,
    delivery_workers: int | None,
) -> None:
    """Serve the admin API with waitress (loopback by default), and deliver events to
    integrations with background threads.

    Creates the database if missing. If it holds no admin token, one is created and printed
    once; with FLAGADMIN_ADMIN_TOKEN set, that exact token is made a valid admin token instead.
    SIGTERM lets in-flight requests finish, then exits; a delivery still in flight then is
    attempted again at the next start.

    \b
    Example:
      flagadmin serve --demo --port 4242
    """
    from ..serving import serve as serve_wsgi

    base_uri_path = _checked_base_path(base_uri_path)
    settings = _settings()
    with open_database(database) as conn:
        if demo:
            _seed_demo_if_empty(conn)
        _ensure_admin_token(conn)
    from ..web.inflight import RequestGauge
    from ..web.state import state

    # Issue 8: the delivery threads yield to requests in progress (see web/inflight.py).
    app, mounted = _wsgi_app(database, base_uri_path, access_log, threads)
    _warm_up(app, threads)
    wsgi = RequestGauge(mounted)
    click.echo(f"{_version_message()} serving {shown(database)} on http://{host}:{port}{base_uri_path}/")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker = _delivery_worker(database, settings, delivery_workers, room=wsgi.wait_for_room).start()
    try:
        serve_wsgi(wsgi, host=host, port=port, threads=threads)
    finally:
        worker.stop()
        state(app).token_uses.flush()  # the token uses noted in the last second


# --- issue 8: delivering events to integrations ----------------------------------------------


def _settings():
    """The instance settings of the environment; exits with the message naming a bad variable."""
    from ..config import settings_from_env

    try:
        return settings_from_env()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from exc


def _delivery_worker(database: str, settings, threads: int | None, room=None):
    from ..integrations.delivery import Worker

    return Worker(database, settings, threads=threads, room=room)


@cli.command("deliver")
@database_option()
@click.option("--once", is_flag=True, help="Deliver what is due now, then exit (for cron and tests).")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Delivery threads (default FLAGADMIN_DELIVERY_WORKERS, at least 1).",
)
def deliver(database: str, once: bool, workers: int | None) -> None:
    """Deliver events to integrations without serving the API: the same loop as the threads
    of serve (run it beside `serve --delivery-workers 0`, or from cron with --once). Runs until
    SIGTERM or SIGINT; an attempt in flight then is made again later.

    \b
    Examples:
      flagadmin deliver
      flagadmin deliver --once
    """
    import signal
    import threading

    settings = _settings()
    with open_database(database):
        pass
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker = _delivery_worker(database, settings, workers or max(settings.delivery_workers, 1))
    if once:
        made = worker.run_once()
        click.echo(f"{made} delivery attempt{'s' if made != 1 else ''} made.")
        return
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker.start()
    click.echo(f"Delivering events from {database} with {worker.threads} thread(s); SIGTERM stops.")
    while not stop.wait(1.0):
        pass
    worker.stop()


# --- issue 10: projects, project roles and environments -------------------------------------


def _changed(change, *args, **kwargs):
    """Run a change of ``flagadmin.projects`` on the database with the command line as actor;
    a refusal exits with its message (nothing was written)."""
    from .. import events
    from ..flags import projects as project_changes

    database = kwargs.pop("database")
    with open_database(database) as conn:
        try:
            return change(conn, events.COMMAND_LINE, *args, **kwargs)
        except project_changes.Refused as exc:
            raise click.ClickException(str(exc)) from exc


@cli.group("project")
def project_group() -> None:
    """Create, change and delete projects, and give users roles in them. Each change records
    its event (project-created, project-updated, project-deleted, project-user-added,
    project-user-removed, project-user-role-changed). Every subcommand takes --db.

    \b
    Example:
      flagadmin project create checkout --name "Checkout"
    """


@project_group.command("create")
@database_option()
@click.argument("project_id", metavar="ID")
@click.option("--name", help="Display name (default: the id).")
@click.option("--description", help="What the project is for.")
def project_create(database: str, project_id: str, name: str | None, description: str | None) -> None:
    """Create the project ID (URL-friendly, at most 100 characters).

    \b
    Example:
      flagadmin project create checkout --name "Checkout" --description "Cart and payment"
    """
    from ..flags import projects as project_changes

    project = _changed(project_changes.create, project_id, name, description, database=database)
    click.echo(f"Created project {project['id']} ({project['name']}).")


@project_group.command("update")
@database_option()
@click.argument("project_id", metavar="ID")
@click.option("--name", help="New display name.")
@click.option("--description", help='New description ("" removes it).')
def project_update(database: str, project_id: str, name: str | None, description: str | None) -> None:
    """Change the name or description of the project ID.

    \b
    Example:
      flagadmin project update checkout --description "Cart, payment and receipts"
    """
    from ..flags import projects as project_changes

    if name is None and description is None:
        raise click.UsageError("Give --name, --description or both.")
    kwargs = {} if description is None else {"description": description}
    changed = _changed(project_changes.update, project_id, name, database=database, **kwargs)
    click.echo(f"Updated project {project_id}." if changed else f"Project {project_id} already was so.")


@project_group.command("delete")
@database_option()
@click.argument("project_id", metavar="ID")
def project_delete(database: str, project_id: str) -> None:
    """Delete the project ID and its members' roles. Refused while it holds flags, live or
    archived: archive and delete them first (the message says how).

    \b
    Example:
      flagadmin project delete checkout
    """
    from ..flags import projects as project_changes

    _changed(project_changes.delete, project_id, database=database)
    click.echo(f"Deleted project {project_id}.")


@project_group.command("role")
@database_option()
@click.argument("project_id", metavar="PROJECT")
@click.argument("username", metavar="USER")
@click.argument("role", metavar="ROLE")
@click.option("--remove", is_flag=True, help="Take ROLE from USER instead.")
def project_role(database: str, project_id: str, username: str, role: str, remove: bool) -> None:
    """Make ROLE (Owner, Member or a custom role's name) USER's role in PROJECT, replacing
    any other she has there; with --remove, take ROLE from her. Any role lets a user see and
    change the project's flags.

    \b
    Examples:
      flagadmin project role checkout alice Owner
      flagadmin project role checkout alice Owner --remove
    """
    from ..flags import projects as project_changes

    if remove:
        _changed(project_changes.remove_role, project_id, username, role, database=database)
        click.echo(f"{username} no longer holds {role} in {project_id}.")
        return
    outcome = _changed(project_changes.set_role, project_id, username, role, database=database)
    click.echo(
        {
            "added": f"{username} now holds {role} in {project_id}.",
            "changed": f"{username}'s role in {project_id} is now {role}.",
            "unchanged": f"{username} already holds {role} in {project_id}.",
        }[outcome]
    )


@cli.group("environment")
def environment_group() -> None:
    """Add environments to the install (environment-created). Every flag can be switched on
    and off in each of them. Every subcommand takes --db.

    \b
    Example:
      flagadmin environment add staging --type test
    """


@environment_group.command("add")
@database_option()
@click.argument("name")
@click.option(
    "--type",
    "type_",
    default="development",
    show_default=True,
    type=click.Choice(["development", "test", "preproduction", "production"]),
    help="Kind of environment.",
)
@click.option("--sort-order", default=0, show_default=True, type=int, help="Position in lists (then name).")
def environment_add(database: str, name: str, type_: str, sort_order: int) -> None:
    """Add the environment NAME: every live flag gets it, switched off.

    \b
    Example:
      flagadmin environment add staging --type test --sort-order 2
    """
    from ..flags import projects as project_changes

    environment = _changed(project_changes.add_environment, name, type_, sort_order, database=database)
    click.echo(f"Added environment {environment['name']} ({environment['type']}).")


# --- issue 9: SCIM provisioning: the roles groups grant ------------------------------------


def _refuse_deactivated(conn: Connection, username: str) -> None:
    """A personal token for a user the directory deactivated would get 401: refuse it."""
    from ..store import directory as store_directory

    if not store_directory.is_active(conn, username):
        raise click.ClickException(
            f"{username} is deactivated by the identity provider (SCIM): its personal tokens get 401. "
            "Reactivate the user in the directory first. Nothing was written."
        )


def _describe_mapping(mapping: dict) -> str:
    """What a group grants, in one line."""
    grants = []
    if mapping["rootRole"]:
        grants.append(f"root role {mapping['rootRole']}")
    grants += [f"{', '.join(p['roles'])} in project {p['project']}" for p in mapping["projects"]]
    scim = (
        f"SCIM group id {mapping['scimGroupId']}, {mapping['members']} members"
        if mapping["scimGroupId"]
        else "no SCIM group of this name yet"
    )
    return f"Group {mapping['group']!r} grants {'; '.join(grants) if grants else 'nothing'} ({scim})."


@cli.command("group-role")
@database_option()
@click.argument("group")
@click.option(
    "--root-role", type=click.Choice(["Admin", "Editor", "Viewer"]), help="A root role for its members."
)
@click.option("--project", "project_id", metavar="ID", help="A project to give its members a role in.")
@click.option("--role", metavar="ROLE", help="With --project: Owner, Member or a custom role's name.")
@click.option("--remove", is_flag=True, help="Take the root role or project role back instead.")
def group_role(
    database: str, group: str, root_role: str | None, project_id: str | None, role: str | None, remove: bool
) -> None:
    """Decide what the members of the SCIM group GROUP (its displayName, any case) get: a root
    role (they get the highest of their own and their groups'), or a role in a project, as if
    given to each of them. The group may not exist yet. With no option, show what GROUP grants.
    Recorded as group-updated (root role) or project-access-group-roles-updated.

    \b
    Examples:
      flagadmin group-role "Flag admins" --root-role Admin
      flagadmin group-role "Checkout team" --project checkout --role Owner
      flagadmin group-role "Checkout team" --project checkout --role Owner --remove
    """
    from .. import events
    from ..directory import resources as directory
    from ..timestamps import SYSTEM_CLOCK

    wants_project = project_id is not None or role is not None
    if root_role is not None and wants_project:
        raise click.UsageError("Give --root-role, or --project with --role, not both.")
    if wants_project and (project_id is None or role is None):
        raise click.UsageError("--project and --role go together.")
    with open_database(database) as conn:
        try:
            if root_role is not None:
                change = directory.remove_group_root_role if remove else directory.set_group_root_role
                mapping = change(conn, group, root_role, events.COMMAND_LINE, SYSTEM_CLOCK)
            elif wants_project:
                mapping = directory.change_group_project_role(
                    conn,
                    group,
                    project_id,
                    role,
                    remove=remove,
                    actor=events.COMMAND_LINE,
                    clock=SYSTEM_CLOCK,
                )
            else:
                if remove:
                    raise click.UsageError("--remove needs --root-role, or --project with --role.")
                found = directory.group_roles(conn, group)
                mapping = found[0] if found else directory.unmapped(group)
        except directory.MappingError as exc:
            raise click.ClickException(f"{exc} Nothing was changed.") from exc
    click.echo(_describe_mapping(mapping))


def main() -> None:
    """Entry point of the ``flagadmin`` console script: find the revision once, then run."""
    revision.detect_from_checkout()
    cli()
