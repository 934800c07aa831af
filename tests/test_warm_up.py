"""Connections warmed before traffic (store/warm.py, AppState.prewarm, serve)."""

from __future__ import annotations

import threading

from flagadmin.store import connect, settings, warm
from flagadmin.web import database
from flagadmin.web.state import state

from helpers import auth

PATH = "/api/admin/personal-dashboard"
NOW = "2026-06-01T00:00:00.000Z"


def test_warm__demo_data__reads_only(db):
    # Given
    before = settings.versions(db)
    # When
    warm.warm(db, NOW)
    # Then: nothing written, nothing left open
    assert settings.versions(db) == before
    assert not db.in_transaction


def test_warm__empty_database__runs(empty_database):
    from flagadmin.store import schema

    schema.ensure_schema(empty_database)
    with connect(empty_database) as conn:
        warm.warm(conn, NOW)
        assert not conn.in_transaction


def _in_thread(work):
    out: list = []
    errors: list = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # reported in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return out[0]


def test_prewarm__threads_take_the_warm_connections_then_open_their_own(make_app, engine, alice):
    app = make_app()
    # When
    opened = state(app).prewarm(2)
    # Then
    if engine == "postgresql":
        assert opened == 0  # its pool opens its own connections
        return
    assert opened == 2
    queue = state(app).warm_connections
    warmed = [queue.get_nowait(), queue.get_nowait()]
    for conn in warmed:
        queue.put(conn)

    def first_request():
        # a request on a connection opened in another thread (handed over, not shared)
        response = app.test_client().get(PATH, headers=auth(alice))
        assert response.status_code == 200, response.get_data(as_text=True)
        with app.test_request_context():
            return database.connection()

    used = [_in_thread(first_request) for _ in range(3)]
    assert used[:2] == warmed  # each of the first two threads took one, in order
    assert used[2] not in warmed  # the third opened its own
    assert queue.empty()


def test_serve_warm_up__start_up_objects__frozen_out_of_the_collector(make_app):
    """``serve``'s warm start ends by freezing what start-up made (``gc.freeze``): a full
    collection then walks only what was made since (the caches' entries), not the modules and
    the app again."""
    import gc

    from flagadmin.cli import serve

    # Given
    app = make_app()
    gc.unfreeze()
    try:
        # When
        serve.warm_up(app, 2)
        frozen, tracked = gc.get_freeze_count(), len(gc.get_objects())
        # Then: the app's objects are frozen, and few are left for the collector
        assert frozen > 10_000
        assert tracked < frozen / 10
        assert app.test_client().get("/health").status_code == 200
    finally:
        gc.unfreeze()
