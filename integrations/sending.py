"""One attempt at delivering a webhook: a POST with a hard total deadline, and what it came to.

It holds :func:`send` (resolve through the address guard, connect to a checked address, send
the prepared request, read the status line and up to :data:`MAX_RESPONSE_READ` bytes), its
:class:`Outcome`, the pinned connection (``http.client``'s, connecting to the addresses the
guard checked, TLS verifying the URL's host name), and the watchdog that enforces the
deadline. Redirects are never followed (RFC 9110 section 15.4: a 3xx is the attempt's
outcome, its ``Location`` reported); ``Retry-After`` is read as RFC 9110 section 10.2.3 gives
it (delay-seconds or an HTTP-date). Whether an outcome is retried is
:func:`flagadmin.integrations.delivery.judge`'s business.

Process-wide: the watchdog's one thread (``flagadmin-watchdog``, started by the first
attempt). It holds nothing of an app: only, for each attempt in flight in this process, the
time at which its sockets are shut and the function that shuts them. One heap of deadlines
serves every attempt, whoever makes it (the delivery threads of any worker, a test delivery
from a request thread), without a timer thread per attempt; a watchdog per app or per worker
would need threads of its own each and would keep no data apart that needs keeping apart.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import http.client
import itertools
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from .address_guard import AddressGuard, Blocked, Unresolvable
from .webhooks import Prepared

#: Bytes of a response body read (and dropped): enough to end a small answer cleanly.
MAX_RESPONSE_READ = 64 * 1024
#: Longest ``Retry-After`` honoured, in seconds.
MAX_RETRY_AFTER_S = 86400.0


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to.

    ``status``: the HTTP status of a complete answer within the deadline (else None).
    ``error``: why there is none (``"timed out after 10 s"``, ``"connection refused"``...).
    ``blocked``: the host resolved to a non-public address (nothing was sent).
    ``retry_after``: seconds from the answer's ``Retry-After``; ``location``: its
    ``Location`` (redirects are not followed); ``duration_ms``: how long it took.
    """

    status: int | None
    error: str | None = None
    blocked: bool = False
    retry_after: float | None = None
    location: str | None = None
    duration_ms: int = 0


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to checked addresses of a host: ``connect()`` opens the socket to
    one of ``addresses`` (never resolving the name again), TLS verifies and names ``host``."""

    def __init__(
        self,
        host: str,
        port: int,
        addresses: list[tuple[int, tuple]],
        deadline: float,
        tls: ssl.SSLContext | None,
        on_socket: Callable[[socket.socket], None],
    ):
        super().__init__(host, port, timeout=max(deadline - time.monotonic(), 0.001))
        self._addresses = addresses
        self._deadline = deadline
        self._tls = tls
        self._on_socket = on_socket

    def connect(self) -> None:
        error: OSError | None = None
        for family, sockaddr in self._addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            self._on_socket(sock)
            sock.settimeout(max(self._deadline - time.monotonic(), 0.001))
            try:
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self.host.strip("[]"))
                self._on_socket(sock)
            self.sock = sock
            return
        raise error or OSError("no address to connect to")


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The system's trusted CAs, certificate and host name checks on (built once: loading the
    CAs costs milliseconds)."""
    return ssl.create_default_context()


def _retry_after(value: str | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` value asks to wait (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        from email.utils import parsedate_to_datetime

        moment = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(max(moment - now, 0.0), MAX_RETRY_AFTER_S)


def _transport_error(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return "connection reset by the receiver"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the receiver closed the connection without answering"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {exc.verify_message or exc.reason}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, http.client.HTTPException):
        return f"the answer is not valid HTTP ({type(exc).__name__})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


class _Watchdog:
    """One thread that calls each armed callback at its deadline (unless disarmed first): the
    hard deadline of every attempt, without a timer thread per attempt."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._deadlines: list[tuple[float, int]] = []
        self._live: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, callback: Callable[[], None]) -> int:
        """Call ``callback()`` in ``seconds`` s; return a handle for :meth:`disarm`."""
        handle = next(self._ids)
        with self._lock:
            self._live[handle] = callback
            heapq.heappush(self._deadlines, (time.monotonic() + seconds, handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="flagadmin-watchdog", daemon=True)
                self._thread.start()
            self._lock.notify()
        return handle

    def disarm(self, handle: int) -> None:
        """Do not call the callback of ``handle`` (if it has not been called yet)."""
        with self._lock:
            self._live.pop(handle, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                while True:
                    while self._deadlines and self._deadlines[0][1] not in self._live:
                        heapq.heappop(self._deadlines)  # disarmed
                    if not self._deadlines:
                        self._lock.wait()
                        continue
                    wait = self._deadlines[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    self._lock.wait(wait)
                _, handle = heapq.heappop(self._deadlines)
                callback = self._live.pop(handle)
            callback()


_watchdog = _Watchdog()


def send(prepared: Prepared, *, timeout: float, guard: AddressGuard) -> Outcome:
    """POST ``prepared`` once, within ``timeout`` seconds all told (resolving, connecting, TLS,
    sending, and reading the answer): a watchdog closes the socket at the deadline, and an
    attempt it cut counts as timed out even if a status line had been read, so a receiver
    that trickles bytes cannot stretch it. Redirects are not followed; at most
    :data:`MAX_RESPONSE_READ` bytes of the answer are read. Never raises for network trouble.
    """
    started = time.monotonic()
    deadline = started + timeout
    parts = urllib.parse.urlsplit(prepared.url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    fired = threading.Event()
    sockets: list[socket.socket] = []
    lock = threading.Lock()

    def on_socket(sock: socket.socket) -> None:
        with lock:
            sockets.append(sock)
            if fired.is_set():
                _shut(sock)

    def cut() -> None:
        with lock:
            fired.set()
            for sock in sockets:
                _shut(sock)

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    timed_out = f"timed out after {timeout:g} s"
    watch = _watchdog.arm(timeout, cut)
    connection: _PinnedConnection | None = None
    try:
        try:
            addresses = guard.addresses(host, port, deadline - time.monotonic())
        except Blocked as exc:
            return Outcome(None, f"blocked address: {exc}", blocked=True, duration_ms=elapsed_ms())
        except Unresolvable as exc:
            return Outcome(None, timed_out if fired.is_set() else str(exc), duration_ms=elapsed_ms())
        tls = _tls_context() if parts.scheme == "https" else None
        connection = _PinnedConnection(host, port, addresses, deadline, tls, on_socket)
        connection.request("POST", target, body=prepared.body, headers=prepared.headers)
        response = connection.getresponse()
        response.read(MAX_RESPONSE_READ)
        status = response.status
        retry_after = _retry_after(response.getheader("Retry-After"), time.time())
        location = response.getheader("Location")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if fired.is_set() or isinstance(exc, TimeoutError):
            return Outcome(None, timed_out, duration_ms=elapsed_ms())
        return Outcome(None, _transport_error(exc), duration_ms=elapsed_ms())
    finally:
        _watchdog.disarm(watch)
        if connection is not None:
            connection.close()
    if fired.is_set():
        return Outcome(None, timed_out, duration_ms=elapsed_ms())
    return Outcome(status, retry_after=retry_after, location=location, duration_ms=elapsed_ms())


def _shut(sock: socket.socket) -> None:
    """Wake whatever blocks on ``sock`` (the owner closes it). The plain socket's shutdown is
    called even on a TLS socket, whose own would tear its TLS state down under the reader."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
