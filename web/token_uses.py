"""When each API token was last used (``api_tokens.last_used_at``, shown by ``flagadmin
list-tokens``), written in batches so that a read stays a read.

Recording a token's use in the request that used it would make every first request of a token
(and one request per token per minute after it) a write transaction that waits for its fsync:
on a server that 1,000 users reach in a minute, 1,000 commits for bookkeeping. Instead a request
notes the use in memory (:meth:`TokenUses.record`) and a timer writes every use noted within
:data:`FLUSH_DELAY_S` in one transaction. ``flagadmin serve`` writes what is still noted
when it stops; a crash loses at most the last :data:`FLUSH_DELAY_S` seconds of uses, which
only makes ``last_used_at`` older than it was.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..store import Connection, tokens

log = logging.getLogger(__name__)

#: Seconds between the first use noted and the write of every use noted until then.
FLUSH_DELAY_S = 1.0


class TokenUses:
    """Token uses noted by requests and not yet written: ``{token id: stored timestamp}``.

    ``open_connection`` returns a connection to the app's database that the caller closes
    (or None when the database is gone); the writes run on the timer's own thread, never on a
    request's.
    """

    def __init__(self, open_connection: Callable[[], Connection | None], delay_s: float = FLUSH_DELAY_S):
        self._open = open_connection
        self._delay_s = delay_s
        self._pending: dict[int, str] = {}
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()  # guards _pending and _timer, never held across a write
        self._writing = threading.Lock()  # held by the one flush writing a batch

    def record(self, token_id: int, at: str) -> None:
        """Note that token ``token_id`` was used at ``at`` (a stored timestamp); it is written
        within :data:`FLUSH_DELAY_S` seconds."""
        with self._lock:
            if at > self._pending.get(token_id, ""):
                self._pending[token_id] = at
            if self._timer is None:
                self._timer = threading.Timer(self._delay_s, self.flush)
                self._timer.name = "flagadmin-token-uses"
                self._timer.daemon = True  # never holds a process up; serve flushes at its stop
                self._timer.start()

    def flush(self) -> int:
        """Write every use noted so far, in one transaction; return how many tokens it named.

        A flush waits for one already writing (the timer's): when it returns, every use noted
        before it was called is committed, so the flush at a stop never leaves the timer's batch
        half-written on a daemon thread the exit kills.

        Bookkeeping only: when the database cannot take the write (gone, unreachable, busy past
        its timeout), the batch is logged and dropped, and ``last_used_at`` stays older.
        """
        with self._writing:
            with self._lock:
                pending, self._pending, timer, self._timer = self._pending, {}, self._timer, None
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()  # flushed early (by hand, or at a stop): its wait is over
            return self._write(pending)

    def _write(self, pending: dict[int, str]) -> int:
        if not pending:
            return 0
        try:
            conn = self._open()
            if conn is None:
                return 0
            try:
                tokens.record_uses(conn, pending)
            finally:
                conn.close()
        except Exception as exc:  # a timer thread has nobody to raise to
            log.warning("last use of %d API token(s) not recorded: %s", len(pending), exc)
            return 0
        return len(pending)
