"""Running the service: ``serve`` answers the admin API with waitress and delivers events to
integrations with background threads; ``deliver`` runs the same delivery loop alone (beside a
``serve --delivery-workers 0``, or once from cron).

``serve`` is written as named steps, in the order it takes them: check the options, read the
settings, prepare the database (demo data, admin token, and with the demo a client and a
frontend token for ``development``), build the app, warm it up, then serve until SIGTERM and
stop the delivery threads.
"""

from __future__ import annotations

import errno
import gc
import logging
import os
import signal
import socket
import threading

import click
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from .. import events, refusals, serving
from ..app import create_app
from ..clients.writer import Writer
from ..config import Settings, SettingsError, settings_from_env
from ..integrations.worker import Worker
from ..seed import documents
from ..store import Connection, StoreError, schema, tokens
from ..store import seed as store_seed
from ..tokens import changes
from ..web.auth import MAX_TOKEN_LENGTH
from ..web.errors import outside_base_path
from ..web.inflight import RequestGauge
from ..web.state import state
from .common import CREATED_IF_MISSING, database_option, open_database, shown, version_message

#: The log lines of serve and deliver: when, how grave, which logger, what.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _checked_base_path(base_uri_path: str) -> str:
    """``--base-uri-path`` without its trailing slash; it must start with ``/``."""
    base_uri_path = base_uri_path.rstrip("/")
    if base_uri_path and not base_uri_path.startswith("/"):
        raise click.BadParameter("must start with /", param_hint="--base-uri-path")
    return base_uri_path


def _settings() -> Settings:
    """The instance settings of the environment; exits with the message naming a bad variable."""
    try:
        return settings_from_env()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from exc


def _seed_demo_if_empty(conn: Connection) -> bool:
    """Load the demo dataset into an empty database (``serve --demo``); True when it was
    loaded now."""
    if not store_seed.is_empty(conn):
        return False
    counts = documents.load_files(conn, documents.demo_files())
    click.echo("Loaded the demo dataset: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ".")
    return True


#: The environment the demo's SDK tokens read.
DEMO_ENVIRONMENT = "development"

#: The SDK tokens ``serve --demo`` makes with the demo dataset: type, name, and what it is for.
DEMO_SDK_TOKENS = (
    ("client", "demo client token", "Client API token (backend SDKs, /api/client)"),
    ("frontend", "demo frontend token", "Frontend API token (/api/frontend)"),
)


def _demo_sdk_tokens(conn: Connection) -> None:
    """Create and print a client and a frontend token for the demo's ``development``
    environment and every project, beside the admin token: what an SDK needs to read the
    demo's flags at once. Each records ``api-token-created``."""
    for kind, name, purpose in DEMO_SDK_TOKENS:
        try:
            secret, _ = changes.create_api_token(
                conn, events.COMMAND_LINE, type=kind, name=name, environment=DEMO_ENVIRONMENT
            )
        except refusals.Refusal as exc:  # the apiTokens resource limit
            click.echo(f"No {kind} token was created: {exc.message}", err=True)
            return
        click.echo(f"{purpose} for {DEMO_ENVIRONMENT} (shown once, stored only as a digest): {secret}")


def _fixed_admin_token() -> str | None:
    """The value of ``FLAGADMIN_ADMIN_TOKEN`` (None when unset or empty), if a client can send
    it: a token travels as one word of the ``Authorization`` header, so it must be printable
    ASCII without spaces (``!`` to ``~``), at most :data:`~flagadmin.web.auth.MAX_TOKEN_LENGTH`
    characters. Any other value exits with a message saying what is accepted (exit status 1)."""
    fixed = os.environ.get("FLAGADMIN_ADMIN_TOKEN")
    if not fixed:
        return None
    if any(character.isspace() for character in fixed):
        problem = "holds whitespace"
    elif any(not "!" <= character <= "~" for character in fixed):
        problem = "holds a control character or a character outside ASCII"
    elif len(fixed) > MAX_TOKEN_LENGTH:
        problem = f"is longer than {MAX_TOKEN_LENGTH} characters"
    else:
        return fixed
    raise click.ClickException(
        f"FLAGADMIN_ADMIN_TOKEN {problem}, so no request could ever send it: give printable ASCII "
        f"without spaces, at most {MAX_TOKEN_LENGTH} characters, e.g. "
        '"*:*.$(openssl rand -hex 32)". Nothing was started.'
    )


def _ensure_admin_token(conn: Connection, fixed: str | None) -> None:
    """Make ``fixed`` (``FLAGADMIN_ADMIN_TOKEN``) a valid admin token, or create and print one
    when the database holds none. Each change records its event (api-token-created or -updated)."""
    if fixed:
        changes.ensure_admin(conn, events.COMMAND_LINE, fixed, name="FLAGADMIN_ADMIN_TOKEN")
        click.echo("Admin API token: the value of FLAGADMIN_ADMIN_TOKEN.")
    elif not tokens.has_admin_token(conn):
        try:
            token, _ = changes.create(conn, events.COMMAND_LINE, kind="admin", name="created by serve")
        except refusals.Refusal as exc:  # the apiTokens resource limit is 0
            click.echo(f"No admin API token was created: {exc.message}", err=True)
            return
        click.echo(f"Admin API token (shown once, stored only as a digest): {token}")


def _wsgi_app(database: str, base_uri_path: str, access_log: bool, threads: int = 8):
    """The app and the WSGI callable to serve: the app mounted at ``base_uri_path``, so that
    every other path is a JSON 404 rather than an alias. On PostgreSQL its pool holds a
    connection per server thread, plus two."""
    config = {"DATABASE": database, "BASE_URI_PATH": base_uri_path, "ACCESS_LOG": access_log}
    try:
        app = create_app({**config, "POOL_SIZE": threads + 2})
    except (SettingsError, schema.SchemaError) as exc:
        raise click.ClickException(str(exc)) from exc
    return app, DispatcherMiddleware(outside_base_path, {base_uri_path: app}) if base_uri_path else app


def warm_up(app, threads: int) -> None:
    """Do before traffic what a server thread's first request would do first. One request
    through Flask (``GET /health``: it loads the code paths every answer takes and opens no
    connection a thread keeps), then one warmed database connection per server thread
    (:meth:`~flagadmin.web.state.AppState.prewarm`). Runs before logging is set up: the
    warm-up request is not in the access log. A database that cannot be read exits with a
    message (exit code 1).

    Last, what start-up made (about 77,000 objects: the modules, the app, its schemas) is moved
    out of the cyclic garbage collector's reach (``gc.freeze``): it lives as long as the process,
    and each full collection walked all of it again (65 ms pauses, 8 in 20 s of the benchmark's
    mixed traffic; docs/architecture.md, "Warm start"). Objects made later are collected as before.
    """
    app.test_client().get("/health")
    try:
        state(app).prewarm(threads)
    except StoreError as exc:
        raise click.ClickException(f"cannot read the database: {exc}") from exc
    gc.collect()
    gc.freeze()


def _check_address(host: str, port: int) -> None:
    """Exit with what to do (:func:`_cannot_listen`) when ``host:port`` cannot be listened on
    right now, before anything is written: each address ``host`` resolves to is bound once
    and released, with ``SO_REUSEADDR`` as waitress binds it. Port 0 (any free port) is not
    checked. The real bind can still fail (the port taken meanwhile): ``serve`` says so too."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise click.ClickException(_cannot_listen(exc, host, port) or str(exc)) from exc
    if port == 0:
        return
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                message = _cannot_listen(exc, host, port)
                raise click.ClickException(message or f"cannot listen on {host}:{port}: {exc}") from exc


def _cannot_listen(exc: OSError, host: str, port: int) -> str | None:
    """What to do when ``host:port`` cannot be listened on (``exc`` from binding), in one
    line; None for an error that is not about the address."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, socket.gaierror):
        return f"--host {host} cannot be resolved ({reason}): give an IP address or a known host name."
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use (perhaps by another flagadmin serve): stop what "
            f"listens there, or give another --port."
        )
    if exc.errno == errno.EACCES:
        return (
            f"this user may not listen on port {port} ({reason}): give a --port above 1023, or grant "
            "the service CAP_NET_BIND_SERVICE."
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine ({reason}): give one of its addresses with --host."
    return None


@click.command("serve")
@database_option(CREATED_IF_MISSING)
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
    With --demo, loading the demo into an empty database also prints a client and a frontend
    token for the environment development.
    SIGTERM lets in-flight requests finish, then exits; a delivery still in flight then is
    attempted again at the next start.

    \b
    Example:
      flagadmin serve --demo --port 4242
    """
    base_uri_path = _checked_base_path(base_uri_path)
    _check_address(host, port)
    settings = _settings()
    fixed_token = _fixed_admin_token()
    with open_database(database, create=True) as conn:
        loaded = demo and _seed_demo_if_empty(conn)
        _ensure_admin_token(conn, fixed_token)
        if loaded:
            _demo_sdk_tokens(conn)
    app, mounted = _wsgi_app(database, base_uri_path, access_log, threads)
    warm_up(app, threads)
    # The delivery threads yield to requests in progress (see web/inflight.py).
    wsgi = RequestGauge(mounted)
    click.echo(f"{version_message()} serving {shown(database)} on http://{host}:{port}{base_uri_path}/")
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    worker = Worker(database, settings, threads=delivery_workers, room=wsgi.wait_for_room).start()
    # What SDKs report is written in batches by one thread (see clients/metrics.py).
    reports = Writer(state(app).client_metrics, state(app).settings.client_metrics_flush_interval).start()
    try:
        serving.serve(
            wsgi,
            host=host,
            port=port,
            threads=threads,
            connection_limit=settings.connection_limit,
            idle_timeout=settings.connection_idle_timeout,
            backlog=settings.listen_backlog,
        )
    except OSError as exc:
        message = _cannot_listen(exc, host, port)
        if message is None:
            raise
        raise click.ClickException(message) from exc
    finally:
        worker.stop()
        reports.stop()  # with a last write of what SDKs reported since the previous one
        state(app).token_uses.flush()  # the token uses noted in the last second


@click.command("deliver")
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
    settings = _settings()
    with open_database(database):
        pass
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    worker = Worker(database, settings, threads=workers or max(settings.delivery_workers, 1))
    if once:
        made = worker.run_once()
        click.echo(f"{made} delivery attempt{'s' if made != 1 else ''} made.")
        return
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker.start()
    click.echo(f"Delivering events from {shown(database)} with {worker.threads} thread(s); SIGTERM stops.")
    while not stop.wait(1.0):
        pass
    worker.stop()


#: The commands this module adds to ``flagadmin``.
COMMANDS = (serve, deliver)
