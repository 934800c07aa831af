"""The application factory: ``create_app`` builds one flagadmin WSGI application.

Wiring only, in one visible order: configuration, JSON, errors, request hooks, database,
blueprints, OpenAPI. Importing this module has no side effects; the command line is in
``cli.py`` and the server in ``serving.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from flask import Flask

from . import blueprints
from .blueprints import backstage, docs
from .clients.metrics import Aggregator
from .config import DEFAULT_DATABASE, settings_from_env
from .frontend.engines import Engines
from .store import connect, is_postgresql, schema
from .store import settings as store_settings
from .store.postgresql import PostgresDatabase
from .timestamps import SYSTEM_CLOCK
from .web import database, errors, headers, operations
from .web.access_log import AccessLog
from .web.application import FlagadminFlask
from .web.state import AppState, Caches, install
from .web.throttle import AuthFailureThrottle
from .web.token_uses import TokenUses

#: The app's own configuration keys and their defaults (any Flask setting may be given too).
DEFAULTS: dict[str, Any] = {
    "BASE_URI_PATH": "",  # the prefix the app is mounted under, e.g. "/flags"
    "MAX_CONTENT_LENGTH": 64 * 1024,  # bodies larger than this are refused with 413
    "ACCESS_LOG": False,  # one line per request on the flagadmin.access logger
    "ANSWER_CACHE": True,  # False: no cache keeps anything (every answer is built afresh)
    "ANSWER_CACHE_BYTES": {},  # byte bounds by cache name (see web.state.DEFAULT_CACHE_BYTES)
    "BUSY_TIMEOUT_MS": None,  # how long a connection waits for another writer (None: 10 s)
    "CLOCK": SYSTEM_CLOCK,  # what tells the time (tests give a clock they move by hand)
    "POOL_SIZE": 10,  # PostgreSQL: connections of this process's pool (serve: threads + 2)
    "ARCHIVE_KEEP_WHOLE_FLAGS": 2500,  # 4.4 answers of up to this many flags are kept whole
    "TOKEN_USES_FLUSH_S": 1.0,  # tokens' last use is written this long after it, in batches
}


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Return a configured flagadmin application.

    ``config`` keys: ``DATABASE`` (path of the SQLite file, or a ``postgresql://`` URL; default
    ``FLAGADMIN_DATABASE`` or ``./flagadmin.db``), ``SETTINGS`` (a
    :class:`~flagadmin.config.Settings`; default from the environment), the keys of
    :data:`DEFAULTS`, and any Flask setting. The database is created or upgraded before the app
    is returned.

    :raise flagadmin.store.schema.SchemaError: the database is newer than this code or unreadable.
    :raise flagadmin.config.SettingsError: a setting holds an unusable value.
    """
    app = FlagadminFlask(__name__)

    # 1. Configuration: defaults, then the caller's, then the settings of the environment.
    app.config.update(DATABASE=os.environ.get("FLAGADMIN_DATABASE", DEFAULT_DATABASE), **DEFAULTS)
    app.config.update(config or {})
    settings = app.config.get("SETTINGS") or settings_from_env()
    clock = app.config["CLOCK"]

    # 2. Errors: one envelope for every status (spec 7).
    errors.register(app)

    # 3. Request hooks: the Prometheus timer first (it then times every other hook), body size,
    # caching and security headers, CORS, gzip, access log.
    backstage.init_app(app, settings)
    operations.init_app(app)
    headers.init_app(app, settings.cors_origins)
    if app.config["ACCESS_LOG"]:
        app.wsgi_app = AccessLog(app.wsgi_app)

    # 4. Database: create or upgrade it, then keep the app's state (SQLite: a connection per
    # thread; PostgreSQL: a pool for the process).
    path = str(app.config["DATABASE"])
    schema.ensure_schema(path)
    with connect(path) as conn:
        instance_id = store_settings.instance_id(conn)
    app_state = install(
        app,
        AppState(
            settings=settings,
            database=path,
            base_uri_path=app.config["BASE_URI_PATH"],
            instance_id=instance_id,
            clock=clock,
            caches=Caches.from_config(app.config["ANSWER_CACHE"], dict(app.config["ANSWER_CACHE_BYTES"])),
            throttle=AuthFailureThrottle(settings.auth_failures, clock),
            busy_timeout_ms=app.config["BUSY_TIMEOUT_MS"],
            pool=PostgresDatabase(path, max_size=app.config["POOL_SIZE"]) if is_postgresql(path) else None,
        ),
    )
    app_state.token_uses = TokenUses(app_state.open_connection, app.config["TOKEN_USES_FLUSH_S"])
    app_state.client_metrics = Aggregator(app_state.open_connection, clock)
    app_state.engines = Engines()
    database.init_app(app)

    # 5. Blueprints: one per operation.
    blueprints.register(app)

    # 6. OpenAPI: the document of the operations declared above, at /docs/openapi.json.
    app.register_blueprint(docs.bp)
    return app
