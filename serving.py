"""Running the WSGI app under waitress, with limits, quiet logs and a graceful stop.

On SIGTERM or SIGINT the server stops accepting connections, lets the requests already
received run to the end and their responses go out, then exits (at most ``drain_timeout``
seconds later). A second SIGINT stops at once; later SIGTERMs change nothing (systemd's
``KillMode=control-group`` sends one to every process of the service, and the one-file build's
launcher forwards its own to the server), up to and including the interpreter's exit.

The signal handler runs in the main thread between two bytecodes, possibly inside an earlier
run of itself (a second signal while the first is handled), so it takes no lock: it guards
itself with one atomic step, and wakes the drain thread, started beforehand, through a pipe
(``os.write`` is async-signal-safe).
"""

from __future__ import annotations

import _thread
import itertools
import logging
import os
import signal
import threading
import time

import waitress
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer

log = logging.getLogger("flagadmin")

#: waitress limits: larger requests are refused by waitress itself (431, 413, plain text).
#: The body limit is above every limit of the app (the admin API's 64 KiB, SCIM's 2 MiB), so
#: that the app answers every 413 for a body it has a limit for, in its own words; waitress's
#: stays, to bound what a request may make it buffer (tests/test_server.py checks the order).
MAX_REQUEST_HEADER_SIZE = 256 * 1024
MAX_REQUEST_BODY_SIZE = 4 * 1024 * 1024

#: Connections: see :func:`serve` and the FLAGADMIN_CONNECTION_* settings (config.py).
DEFAULT_CONNECTION_LIMIT = 500
DEFAULT_IDLE_TIMEOUT_S = 60.0
DEFAULT_BACKLOG = 1024


class Channel(HTTPChannel):
    """waitress's HTTP channel, without its main loop spinning while a task thread sends.

    What it fixes in waitress (3.0): the main loop asks ``select`` whether a connection is
    writable whenever its output buffer holds bytes. While a request's task runs, the task
    thread appends its response there and sends it itself, at once (``send_bytes`` is 1); the
    main loop must not send then, so its ``handle_write`` does nothing. But a socket with room
    in its buffer is always writable: for as long as the task thread is inside that send (on
    loopback, the receiver's side of TCP runs in the sender's system call), ``select`` returns
    at once, again and again, whenever the loop is awake (woken by another connection), each
    time taking the GIL back from the threads that do the work (15 ``select`` calls per flag
    archive under 8 connections on one core).

    Here a connection is not polled for writing while its task runs and the last send took
    every byte given to it: the bytes in the buffer are then ones the task thread has just
    appended and is sending. When a send leaves bytes behind (the client reads slower than we
    write), the connection is polled as before, and waitress's task thread has already woken
    the main loop (its trigger) to send them when the socket has room; at the end of every task
    it wakes it again. Closing connections are polled as before.

    How it was measured: ``bench/probes/clarity_debt.py --cases create,archive`` (flag writes,
    8 connections, the server pinned to one core, wrk on the other), this channel against
    waitress's own in 6 alternated pairs on 2026-11-27: without it the server spent 16 % more
    CPU per flag create and 17 % more per archive (medians of the per-pair ratios), and served
    11 % fewer creates and 4.5 % fewer archives a second; ``docs/architecture.md`` has the
    figures and the command. Its cost: the p99 of small kept reads is a little above that of
    waitress's own channel.

    It overrides ``HTTPChannel.writable`` and the internal ``_flush_some`` of waitress 3.0
    (pyproject keeps waitress below 4); ``tests/test_serving_channel.py`` checks them against
    the installed waitress.
    """

    #: The last send of this connection left bytes in its output buffer.
    _behind = False

    def _flush_some(self, do_close: bool = True) -> bool:
        try:
            return super()._flush_some(do_close=do_close)
        finally:
            self._behind = bool(self.total_outbufs_len)

    def writable(self) -> bool:
        """waitress's answer, except False while a task thread is sending (see the class)."""
        if (
            self.requests
            and not self._behind
            and self.adj.send_bytes <= 1
            and not (self.will_close or self.close_when_flushed)
        ):
            return False
        return super().writable()


def serve(
    wsgi,
    *,
    host: str,
    port: int,
    threads: int,
    drain_timeout: float = 30.0,
    connection_limit: int = DEFAULT_CONNECTION_LIMIT,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    backlog: int = DEFAULT_BACKLOG,
) -> None:
    """Serve ``wsgi`` on ``host:port`` with ``threads`` worker threads until signalled.

    Connections: at most ``connection_limit`` open at once (idle keep-alive ones included; past
    it waitress stops accepting until one closes, and new ones wait in the ``backlog`` of the
    listening socket); one that sends nothing for ``idle_timeout`` seconds is closed (checked
    every quarter of it, at most every 30 s). Waiting connections cost a file descriptor each,
    and no thread; the process's soft limit of open files is raised to hold them. waitress
    watches them with ``select``, which takes descriptors below 1024 only, so the limit stays
    under 900 (config.py).

    Returns once in-flight requests have been answered (or ``drain_timeout`` seconds passed).
    """
    # "Task queue depth" warnings on every burst are noise, not news: keep errors only.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    _room_for_descriptors(connection_limit + 100)  # the database, logs, delivery sockets
    server = waitress.create_server(
        wsgi,
        host=host,
        port=port,
        threads=threads,
        ident="flagadmin",
        max_request_header_size=MAX_REQUEST_HEADER_SIZE,
        max_request_body_size=MAX_REQUEST_BODY_SIZE,
        clear_untrusted_proxy_headers=True,
        connection_limit=connection_limit,
        channel_timeout=idle_timeout,
        cleanup_interval=max(1.0, min(30.0, idle_timeout / 4)),
        backlog=backlog,
    )
    for listener in _listeners(server):
        listener.channel_class = Channel
    wake_read, wake_write = os.pipe()
    drain = threading.Thread(
        target=_drain_when_woken, args=(wake_read, server, drain_timeout), name="flagadmin-drain", daemon=True
    )
    drain.start()
    calls = itertools.count()

    def on_signal(signum: int, frame) -> None:
        if next(calls):  # not the first signal (next() on a count is one atomic step)
            return
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # From now on SIGINT (and the drain thread's interrupt) stops the loop at once.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for listener in _listeners(server):
            listener.accepting = False
        os.write(wake_write, bytes([signum]))

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server.run()  # returns on KeyboardInterrupt, after waitress has stopped its threads
    finally:
        next(calls)  # a signal from now on finds the pipe closed (its number may be reused): none is written
        os.close(wake_write)  # a drain thread still waiting reads the end, and returns
    log.info("stopped")


def _room_for_descriptors(wanted: int) -> None:
    """Raise the soft limit of open files to ``wanted`` (at most the hard limit) if below it:
    Debian's default soft limit, 1024, is about what the default connection limit needs."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            log.warning("cannot raise the open files limit from %s to %s", soft, target)


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


def _drain_when_woken(wake: int, server, timeout: float) -> None:
    """Wait for the signal handler's byte on the pipe ``wake`` (its signal number; none: the
    server stopped otherwise), then for the server to be idle (at most ``timeout`` seconds),
    then stop the main loop."""
    try:
        woken = os.read(wake, 1)
    finally:
        os.close(wake)
    if not woken:
        return
    log.info("signal %s: finishing in-flight requests, then exiting", signal.Signals(woken[0]).name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not _idle(server):
        time.sleep(0.02)
    _thread.interrupt_main()
