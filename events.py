"""Every change is an event (spec 2.3, 6): who made it, and the one function that records it.

Every write of flagadmin, whatever its door (the admin API, SCIM, the command line), calls
:func:`record` inside the write transaction of the change: the event and the deliveries it
owes to the matching integrations (the outbox) commit with the change or not at all. After the
commit, the delivery workers are woken (:func:`on_recorded` listeners).

A seed load is a bootstrap, not a change: it records no events.

Process-wide: the list of :func:`on_recorded` listeners. :func:`record` runs in domain code
that knows a connection and no app (the API, SCIM and the command line alike), and a worker
may run beside an app or without one (``flagadmin deliver``), so the one place both reach is
the process. A listener is a wake-up call and carries nothing: a worker woken by a commit to
another database (two apps in one process, as in the tests) looks for due deliveries, finds
none of that commit's and sleeps again; its own deliveries are found by polling in any case.
The :func:`on_committed` listeners are process-wide for the same reason; they are told each
committed event's type (the process's Prometheus counter of events by type).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .spec import EVENT_TYPES
from .store import Connection
from .store import events as store_events
from .timestamps import SYSTEM_CLOCK, Clock


@dataclass(frozen=True)
class Actor:
    """Who made a change: ``createdBy`` (a name) and ``createdByUserId`` (spec 2.3)."""

    name: str
    user_id: int | None

    @classmethod
    def of_caller(cls, caller: Any) -> Actor:
        """The actor of an API caller (a :class:`~flagadmin.store.tokens.Caller`): its user
        (username and id) for a personal token, ``admin`` / -42 for an admin API token (as the
        reference server records it)."""
        if caller.user_id is None:
            return ADMIN_TOKEN
        return cls(caller.username or f"user {caller.user_id}", caller.user_id)


#: An admin API token (the reference server's ``admin`` / -42).
ADMIN_TOKEN = Actor("admin", -42)
#: The command line.
COMMAND_LINE = Actor("flagadmin-cli", None)
#: An identity provider, through the SCIM API.
SCIM_CLIENT = Actor("scim-client", None)
#: flagadmin itself, e.g. the delivery worker disabling an integration whose receiver answered
#: 410 Gone (the reference server's system user is ``unleash_system_user`` / -1337).
SYSTEM = Actor("flagadmin-system", -1337)

#: Called with no argument after a transaction that recorded events has committed, in the
#: committing thread (the delivery workers register here to wake up at once).
_listeners: list[Callable[[], None]] = []
_listeners_lock = threading.Lock()


def on_recorded(listener: Callable[[], None]) -> Callable[[], None]:
    """Call ``listener()`` after every commit that recorded events; returns a function that
    removes it again."""
    with _listeners_lock:
        _listeners.append(listener)

    def remove() -> None:
        with _listeners_lock, contextlib.suppress(ValueError):
            _listeners.remove(listener)

    return remove


def _notify() -> None:
    with _listeners_lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener()


#: Called with an event's type after the transaction that recorded it has committed, in the
#: committing thread, once per event (the Prometheus counter of events by type registers here).
_committed: list[Callable[[str], None]] = []


def on_committed(listener: Callable[[str], None]) -> Callable[[], None]:
    """Call ``listener(event_type)`` for every event, once its transaction has committed (never
    for one rolled back); returns a function that removes it again. A listener must be quick
    and must not raise: it runs in the thread that committed, before the change returns."""
    with _listeners_lock:
        _committed.append(listener)

    def remove() -> None:
        with _listeners_lock, contextlib.suppress(ValueError):
            _committed.remove(listener)

    return remove


def _committed_one(event_type: str) -> None:
    for listener in tuple(_committed):
        listener(event_type)


def record(
    conn: Connection,
    event_type: str,
    actor: Actor,
    *,
    project: str | None = None,
    environment: str | None = None,
    feature_name: str | None = None,
    data: Any = None,
    pre_data: Any = None,
    tags: list[dict[str, str]] | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> int | None:
    """Record one event of ``event_type`` (spec 6) made by ``actor``, with its deliveries.

    Must run inside the write transaction of the change (``with conn.write(): ...``). A change
    that changes nothing (``data`` equal to ``pre_data``, both given) records nothing. Returns
    the new event's id, or None when nothing was recorded.

    :raise ValueError: ``event_type`` is not a type of spec section 6.
    :raise RuntimeError: no write transaction is open on ``conn``.
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"{event_type!r} is not an event type of spec section 6")
    if not conn.in_transaction:
        raise RuntimeError("events.record must run inside the change's write transaction")
    if data is not None and pre_data is not None and data == pre_data:
        return None
    now = clock.now_rfc3339()
    event_id, owed = store_events.insert(
        conn,
        type=event_type,
        created_at=now,
        created_by=actor.name,
        created_by_user_id=actor.user_id,
        project=project,
        environment=environment,
        feature_name=feature_name,
        data=data,
        pre_data=pre_data,
        tags=tags,
    )
    if owed:
        conn.after_commit(_notify)
    if _committed:
        conn.after_commit(functools.partial(_committed_one, event_type))
    return event_id
