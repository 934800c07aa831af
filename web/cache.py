"""The one cache mechanism of flagadmin: answers kept by key, bounded by bytes, thread-safe.

Every cache of the app (4.1 pages, 4.2 dashboards, ui-config, tokens found valid) is an
:class:`AnswerCache`. A cache never decides whether an entry is still true: its key names
the state the entry was computed from (a log head, a version counter), or its user passes a
``fresh`` test, so that a write elsewhere makes the old entry unreachable rather than wrong.
Least recently used entries go first once the byte bound is reached. A cache built with
``enabled=False`` keeps nothing: every call builds (the tests run the answer checks that way
too).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from cachetools import LRUCache
from isal import igzip

from .telemetry import cache_counters

V = TypeVar("V")

#: Bytes counted for an entry beyond its body: the key, the entry object, the LRU links.
ENTRY_OVERHEAD = 200


#: Level of the gzip made of an answer (once: it is kept with the answer), on ISA-L's scale of
#: 0 to 3. ISA-L's igzip (through python-isal) at level 1 makes a 4.1 page of 83 KB in about
#: 22 µs where zlib at level 1 (what flask-compress uses for the other responses,
#: ``web/headers.py``) takes about 92 µs, and its output is no larger (3,136 bytes against
#: 3,797); docs/architecture.md gives the figures.
GZIP_LEVEL = 1


def gzipped(body: bytes) -> bytes:
    """``body`` gzipped: RFC 1952, one member, modification time 0 (the same bytes every time),
    by ISA-L's igzip at :data:`GZIP_LEVEL`."""
    return igzip.compress(body, GZIP_LEVEL, mtime=0)


@dataclass
class Answer:
    """A response body computed once: its bytes, its ETag (or None) and, for answers that
    change with time alone, the first stored-format moment at which it stops being true.

    Its gzip is made once, on first demand (:meth:`gzipped`), and kept with it (``gzip``).
    """

    body: bytes
    etag: str | None = None
    valid_until: str | None = None
    version: Any = None
    gzip: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        """Bytes this answer holds, counting its gzip (about an eighth) whether made yet or not."""
        return len(self.body) + len(self.body) // 8

    @property
    def length(self) -> int:
        """Bytes of the body."""
        return len(self.body)

    def gzipped(self) -> bytes:
        """The body gzipped (:func:`gzipped`), made on first call and kept. Two threads may
        both make it at once; the last one's is kept, and both are the same bytes."""
        if self.gzip is None:
            self.gzip = gzipped(self.body)
        return self.gzip


@dataclass
class SplicedAnswer:
    """An answer kept as the parts it is made of, when most of its bytes are parts that other
    answers share (4.2: every caller's dashboard holds the same admins): the shared parts are
    held by reference, not copied, so a cache of thousands of such answers holds each shared
    part once. ``own`` is the bytes that are this answer's alone; the rest is counted by the
    cache that keeps the shared parts.

    It is served as an :class:`Answer` is (:func:`flagadmin.web.responses.answer_response`):
    its :attr:`body` is the parts joined for that one response, and only when it is sent as it
    is; its gzip, made from them once, is kept here (about an eighth of the whole) and sent
    as it is, with no join.
    """

    parts: tuple[bytes, ...]
    own: int
    etag: str | None = None
    valid_until: str | None = None
    version: Any = None
    gzip: bytes | None = field(default=None, repr=False, compare=False)
    #: Bytes of the whole body (the parts' lengths, added once).
    length: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.length = sum(map(len, self.parts))

    @property
    def size(self) -> int:
        """Bytes counted for this answer: its own parts, and its gzip (made or to be made)."""
        return self.own + self.length // 8

    @property
    def body(self) -> bytes:
        """The whole body: the parts, joined anew for each call."""
        return b"".join(self.parts)

    def gzipped(self) -> bytes:
        """The body gzipped, as :meth:`Answer.gzipped` (made once, then kept)."""
        if self.gzip is None:
            self.gzip = gzipped(self.body)
        return self.gzip


def _size(value: Any) -> int:
    return getattr(value, "size", 0) + ENTRY_OVERHEAD


class AnswerCache(Generic[V]):
    """Values by key, at most ``max_bytes`` of them (a value's ``size`` attribute plus
    :data:`ENTRY_OVERHEAD`), least recently used dropped first; safe across threads.

    ``name`` says what the cache holds (for logs, the docs and the Prometheus counters of hits
    and misses, ``web/telemetry.py``); ``enabled=False`` makes every :meth:`get_or_build` build
    (and counts nothing).
    """

    def __init__(self, name: str, max_bytes: int, *, enabled: bool = True):
        self.name = name
        self.enabled = enabled and max_bytes > 0
        self._entries: LRUCache = LRUCache(maxsize=max(max_bytes, 1), getsizeof=_size)
        self._lock = threading.Lock()
        self._hits, self._misses = cache_counters(name)

    def get(self, key: Hashable) -> V | None:
        """The value kept for ``key``, or None; counted as a hit or a miss (a caller that then
        finds the value no longer true, as the ``callers`` cache checks a token's expiry, has
        it counted as a hit all the same)."""
        if not self.enabled:
            return None
        with self._lock:
            value = self._entries.get(key)
        (self._misses if value is None else self._hits).inc()
        return value

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` for ``key`` (a value larger than the whole bound is not kept)."""
        if self.enabled:
            with self._lock, contextlib.suppress(ValueError):  # ValueError: larger than the cache
                self._entries[key] = value
        return value

    def get_or_build(
        self, key: Hashable, build: Callable[[], V], fresh: Callable[[V], bool] | None = None
    ) -> V:
        """Return the value kept for ``key`` if there is one (and ``fresh(value)`` holds),
        else ``build()``, keep it and return it.

        Two threads missing the same key at once may both build; the last one's value stays.
        Building happens outside the lock, so a slow build never blocks other keys. A value
        found but not ``fresh`` counts as a miss.
        """
        if self.enabled:
            with self._lock:
                value = self._entries.get(key)
            if value is not None and (fresh is None or fresh(value)):
                self._hits.inc()
                return value
            self._misses.inc()
        return self.put(key, build())

    def pop(self, key: Hashable) -> None:
        """Forget ``key``."""
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def bytes(self) -> int:
        """Bytes currently counted against the bound."""
        with self._lock:
            return int(self._entries.currsize)
