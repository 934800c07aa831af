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
import contextlib
import itertools
import logging
import os
import signal
import threading
import time

import waitress
from waitress.channel import ClientDisconnected, HTTPChannel
from waitress.server import BaseWSGIServer
from waitress.task import WSGITask

log = logging.getLogger("flagadmin")

#: waitress limits: larger requests are refused by waitress itself (431, 413, plain text).
MAX_REQUEST_HEADER_SIZE = 256 * 1024
MAX_REQUEST_BODY_SIZE = 1024 * 1024


#: A response head is sent in one piece with its body's first chunk when that chunk is at most
#: this many bytes (a flag, an error, a 4.1 page or a 4.2 answer at the reference size, all under
#: 100 KB): one send. A larger chunk is sent after its head, as waitress does, rather than
#: copied behind it.
MERGE_MAX = 128 * 1024


class Task(WSGITask):
    """waitress's WSGI task, whose response head waits for its body (:class:`Channel`).

    waitress (3.0) hands the head to the channel, then the body's first chunk, and the task
    thread sends each at once: two ``send`` calls a response, each a let-go and a retaking of
    the interpreter lock. Here the channel keeps the head back and sends it with the first
    chunk (up to :data:`MERGE_MAX` bytes); the bytes on the wire are the same. A response with
    no body (a 202, a 204, a 304, a ``HEAD``) sends its head when the task finishes, as before.
    Measured on one core under 8 connections: 3.6 to 6 % less server CPU a request for a flag
    create, a kept 4.2 and a kept 4.3, and a lower p99 for most answers (bench/RESULTS.md,
    sixteenth section).
    """

    channel: Channel

    def build_response_header(self) -> bytes:
        head = super().build_response_header()
        self.channel.hold_next_write()
        return head

    def finish(self) -> None:
        super().finish()
        self.channel.send_held()

    def service(self) -> None:
        try:
            super().service()
        finally:
            if self.channel.held:  # the task failed between its head and its body
                with contextlib.suppress(ClientDisconnected, OSError):
                    self.channel.send_held()


class Channel(HTTPChannel):
    """waitress's HTTP channel, without its main loop spinning while a task thread sends, and
    with each response head sent together with its body (:class:`Task`).

    waitress (3.0) asks ``select`` whether a connection is writable whenever its output buffer
    holds bytes. While a request's task runs, the task thread appends its response there and
    sends it itself, at once (``send_bytes`` is 1); the main loop must not send then, so its
    ``handle_write`` does nothing. But a socket with room in its buffer is always writable: for
    as long as the task thread is inside that send (on loopback, the receiver's side of TCP
    runs in the sender's system call), ``select`` returns at once, again and again, whenever
    the loop is awake (woken by another connection). Measured under 8 connections of flag
    archives on one core: 15 ``select`` calls per request, each taking the GIL back from the
    threads that do the work (bench/RESULTS.md, "waitress's main loop spinning").

    Here a connection is not polled for writing while its task runs and the last send took
    every byte given to it: the bytes in the buffer are then ones the task thread has just
    appended and is sending. When a send leaves bytes behind (the client reads slower than we
    write), the connection is polled as before, and waitress's task thread has already woken
    the main loop (its trigger) to send them when the socket has room; at the end of every task
    it wakes it again. Closing connections are polled as before.

    It overrides ``HTTPChannel.writable``, ``write_soon`` and the internal ``_flush_some`` of
    waitress 3.0, and :class:`Task` its task's ``build_response_header``, ``finish`` and
    ``service`` (pyproject keeps waitress below 4); ``tests/test_serving_channel.py`` checks
    them against the installed waitress.
    """

    task_class = Task

    #: The last send of this connection left bytes in its output buffer.
    _behind = False
    #: The next :meth:`write_soon` is a response head, to be kept back (:class:`Task`).
    _hold_next = False
    #: The response head kept back, not yet in the output buffer.
    held = b""

    def hold_next_write(self) -> None:
        """Keep back the next :meth:`write_soon` (the response head being built) until the
        body's first chunk or :meth:`send_held`."""
        self._hold_next = True

    def send_held(self) -> None:
        """Send the head kept back, if any (the response has no body, or the task ends).

        :raise waitress.channel.ClientDisconnected: the client has gone.
        """
        held, self.held = self.held, b""
        if held:
            super().write_soon(held)

    def write_soon(self, data) -> int:
        """waitress's ``write_soon``, with the response head kept back and put in front of the
        body's first chunk (bytes of at most :data:`MERGE_MAX`); a larger chunk, or a file
        (``wsgi.file_wrapper``), goes after the head sent on its own.

        :raise waitress.channel.ClientDisconnected: the client has gone.
        """
        if self._hold_next:
            self._hold_next = False
            self.held = data
            return len(data)
        held = self.held
        if held:
            self.held = b""
            if type(data) is bytes and len(data) <= MERGE_MAX:
                data = held + data
            else:
                super().write_soon(held)
        return super().write_soon(data)

    def _flush_some(self, do_close: bool = True) -> bool:
        try:
            return super()._flush_some(do_close=do_close)
        finally:
            self._behind = bool(self.total_outbufs_len)

    def writable(self) -> bool:
        if (
            self.requests
            and not self._behind
            and self.adj.send_bytes <= 1
            and not (self.will_close or self.close_when_flushed)
        ):
            return False
        return super().writable()


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
