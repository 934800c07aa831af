"""The one state object of an app: everything flagadmin keeps per application.

``create_app`` builds an :class:`AppState` and keeps it under one key of ``app.extensions``;
request code reaches it with :func:`state`. Nothing of it is module-global, so two apps in one
process (the tests make hundreds) never share a cache, a throttle or a connection.
"""

from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app

from ..config import Settings
from ..store import Connection, connect, engine, warm
from ..timestamps import Clock
from .cache import AnswerCache
from .token_uses import TokenUses

EXTENSION = "flagadmin"

#: Default byte bounds of the caches, by name; ``ANSWER_CACHE_BYTES`` in the app's config
#: overrides any of them, and ``ANSWER_CACHE = False`` turns every cache off.
DEFAULT_CACHE_BYTES = {
    "integration_event_pages": 16 * 1024 * 1024,
    "personal_dashboards": 32 * 1024 * 1024,
    # A Viewer's 4.4 answer at the benchmark's reference size is about 40 KB (and its gzip about
    # 5 KB): 48 MiB keeps the archives of about a thousand such callers, where 16 MiB dropped
    # each of 690 Viewers' answers before it was asked again (docs/architecture.md).
    "archived_features": 48 * 1024 * 1024,
    "dashboard_parts": 4 * 1024 * 1024,
    "callers": 4 * 1024 * 1024,
    "fixed_answers": 1024 * 1024,
}


@dataclass
class Caches:
    """The app's caches, each an :class:`AnswerCache`, and what keeps each one true.

    - ``integration_event_pages``: 4.1 pages by (integration, log head, low-water mark, limit,
      offset); a new row moves the head, pruning moves the low-water mark.
    - ``personal_dashboards``: 4.2 answers by user, checked against the content version and
      the moment the next flag of the user's projects becomes potentially stale.
    - ``archived_features``: 4.4 answers up to a size bound (larger ones are streamed), by
      content version and the caller's view (all projects, or one user's).
    - ``dashboard_parts``: parts of 4.2 answers that many users share (the admins; the owners
      of all projects), by content version.
    - ``callers``: tokens found valid, by digest, checked against the credentials version and
      the token's own expiry.
    - ``fixed_answers``: answers that depend on start-up settings only (ui-config, the
      OpenAPI document).
    """

    integration_event_pages: AnswerCache
    personal_dashboards: AnswerCache
    archived_features: AnswerCache
    dashboard_parts: AnswerCache
    callers: AnswerCache
    fixed_answers: AnswerCache

    @classmethod
    def from_config(cls, enabled: bool, sizes: dict[str, int]) -> Caches:
        """Caches of ``sizes`` bytes each (by name); none keeps anything unless ``enabled``."""
        bounds = {**DEFAULT_CACHE_BYTES, **sizes}
        return cls(**{name: AnswerCache(name, bounds[name], enabled=enabled) for name in DEFAULT_CACHE_BYTES})


@dataclass
class AppState:
    """Per-app state: settings, where the database is, the clock, the caches, the throttle of
    failed authentications and each waitress thread's database connection.

    ``database`` is the SQLite file's path or the PostgreSQL URL; ``base_uri_path`` the prefix
    the app is mounted under (``""`` for none); ``instance_id`` the UUID stored in the database (spec 2.5);
    ``busy_timeout_ms`` how long a connection waits for another writer.
    """

    settings: Settings
    database: str
    base_uri_path: str
    instance_id: str
    clock: Clock
    caches: Caches
    throttle: Any
    busy_timeout_ms: int | None = None
    #: Token uses noted by requests, written in batches (:class:`~flagadmin.web.token_uses.TokenUses`).
    token_uses: TokenUses | None = None
    #: What SDKs reported, written in batches (:class:`flagadmin.clients.metrics.Aggregator`;
    #: ``serve`` starts its writer thread, :class:`flagadmin.clients.writer.Writer`).
    client_metrics: Any = None
    #: The yggdrasil engines the Frontend API and OFREP evaluate with, one per (environment,
    #: project set) (:class:`flagadmin.frontend.engines.Engines`).
    engines: Any = None
    #: On PostgreSQL, the process's connection pool (:class:`~flagadmin.store.postgresql.PostgresDatabase`);
    #: None on SQLite, where each thread keeps its own connection in ``connections``.
    pool: Any = None
    connections: threading.local = field(default_factory=threading.local)
    #: SQLite connections opened and warmed before traffic (:meth:`prewarm`), each taken by
    #: the first request of a thread that has none yet.
    warm_connections: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)

    def prewarm(self, count: int) -> int:
        """Open ``count`` connections to the app's SQLite database and warm each one
        (:func:`flagadmin.store.warm.warm`), for the first requests of ``count`` server
        threads: a thread's first request then costs what its later ones do.
        Returns how many were opened: ``count``, or 0 on PostgreSQL (its pool opens its own).

        :raise flagadmin.store.StoreError: the database cannot be opened or read.
        """
        if self.pool is not None:
            return 0
        now = self.clock.now_rfc3339()
        for _ in range(count):
            conn = engine.connect(self.database, busy_timeout_ms=self.busy_timeout_ms, handover=True)
            try:
                warm.warm(conn, now)
            except BaseException:
                conn.close()
                raise
            self.warm_connections.put(conn)
        return count

    def open_connection(self) -> Connection | None:
        """A new connection to the app's database for work outside requests (the caller
        closes it): from the pool on PostgreSQL; None when the SQLite file is gone."""
        if self.pool is not None:
            return self.pool.connect()
        if not os.path.exists(self.database):
            return None
        return connect(self.database, busy_timeout_ms=self.busy_timeout_ms)


def state(app: Flask | None = None) -> AppState:
    """The :class:`AppState` of ``app`` (default: the app of the current request)."""
    return (app or current_app).extensions[EXTENSION]


def install(app: Flask, app_state: AppState) -> AppState:
    """Keep ``app_state`` as ``app``'s state."""
    app.extensions[EXTENSION] = app_state
    return app_state
