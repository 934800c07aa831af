"""The writer thread of SDK reports: one per ``flagadmin serve`` process, writing what the
app's :class:`~flagadmin.clients.metrics.Aggregator` noted every
``FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL`` seconds, and once more when it stops.

Like the delivery worker (:mod:`flagadmin.integrations.worker`) it is started by ``serve``
after the app is built and stopped in its shutdown, after the last request was answered, so
that the reports of those requests are written too. On PostgreSQL each process's writer writes
its own reports; the writes add up (:mod:`flagadmin.store.client_metrics`).
"""

from __future__ import annotations

import logging
import threading

from .metrics import Aggregator

log = logging.getLogger("flagadmin.clients")


class Writer:
    """A daemon thread that calls ``aggregator.flush()`` every ``interval`` seconds.

    ``start()`` starts it (returns self); ``stop()`` ends it and flushes what is left, in the
    calling thread, waiting for a flush under way. A flush that fails is logged and its batch
    kept by the aggregator for the next one.
    """

    def __init__(self, aggregator: Aggregator, interval: float):
        self.aggregator = aggregator
        self.interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Writer:
        """Start the thread; return self."""
        self._thread = threading.Thread(target=self._run, name="flagadmin-sdk-reports", daemon=True)
        self._thread.start()
        return self

    def stop(self, grace: float = 30.0) -> int:
        """Stop the thread (waiting up to ``grace`` seconds for a flush under way), then write
        what is left; return how many keys that last flush wrote."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(grace)
            self._thread = None
        return self.aggregator.flush()

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            try:
                self.aggregator.flush()
            except Exception:  # flush logs what it can; this only keeps the thread alive
                log.exception("SDK reports: unexpected failure of a write; retrying at the next one")
