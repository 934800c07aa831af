"""Running the WSGI app under waitress, with limits, quiet logs and a graceful stop.

On SIGTERM or SIGINT the server stops accepting connections, lets the requests already
received run to the end and their responses go out, then exits (at most ``drain_timeout``
seconds later). A second SIGINT stops at once.
"""

from __future__ import annotations

import _thread
import logging
import signal
import threading
import time

import waitress
from waitress.server import BaseWSGIServer

log = logging.getLogger("flagadmin")

#: waitress limits: larger requests are refused by waitress itself (431, 413, plain text).
MAX_REQUEST_HEADER_SIZE = 256 * 1024
MAX_REQUEST_BODY_SIZE = 1024 * 1024


def serve(wsgi, *, host: str, port: int, threads: int, drain_timeout: float = 30.0) -> None:
    """Serve ``wsgi`` on ``host:port`` with ``threads`` worker threads until signalled.

    Returns once in-flight requests have been answered (or ``drain_timeout`` seconds passed).
    """
    # "Task queue depth" warnings on every burst are noise, not news: keep errors only.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    server = waitress.create_server(
        wsgi,
        host=host,
        port=port,
        threads=threads,
        ident="flagadmin",
        max_request_header_size=MAX_REQUEST_HEADER_SIZE,
        max_request_body_size=MAX_REQUEST_BODY_SIZE,
        clear_untrusted_proxy_headers=True,
    )
    stopping = threading.Event()

    def on_signal(signum: int, frame) -> None:
        if stopping.is_set():
            return
        stopping.set()
        log.info("signal %s: finishing in-flight requests, then exiting", signal.Signals(signum).name)
        for listener in _listeners(server):
            listener.accepting = False
        # From now on SIGINT (and the drain thread's interrupt) stops the loop at once.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Thread(target=_drain, args=(server, drain_timeout), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.run()  # returns on KeyboardInterrupt, after waitress has stopped its threads
    log.info("stopped")


def _listeners(server) -> list[BaseWSGIServer]:
    """The listening dispatchers of a single- or multi-socket waitress server."""
    if isinstance(server, BaseWSGIServer):
        return [server]
    return [d for d in server.map.values() if isinstance(d, BaseWSGIServer)]


def _idle(server) -> bool:
    """True when no request is queued, running, or waiting for its response to be sent."""
    dispatcher = server.task_dispatcher
    if dispatcher.queue or dispatcher.active_count:
        return False
    channels = [c for listener in _listeners(server) for c in listener.active_channels.values()]
    return all(not c.requests and not c.total_outbufs_len for c in channels)


def _drain(server, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not _idle(server):
        time.sleep(0.02)
    _thread.interrupt_main()
