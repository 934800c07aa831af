"""A real webhook receiver on 127.0.0.1 for the delivery tests: a threaded HTTP server whose
paths answer the ways receivers do, recording every request it gets.

Paths (POST):

- ``/ok``: 200.
- ``/fail``: 500, always.
- ``/flaky/<n>``: 500 for the first ``n`` requests to that path, then 200.
- ``/busy/<seconds>``: 503 with ``Retry-After: <seconds>`` for the first request, then 200.
- ``/gone``: 410.
- ``/redirect``: 302 to ``http://169.254.169.254/latest/meta-data/`` (must not be followed).
- ``/hang``: reads the request, then answers nothing until the receiver is closed (at most 30 s).
- ``/trickle``: sends a valid status line and headers one byte every 0.2 s (about 40 s in all,
  whether the sender is still there or not) until the receiver is closed.
- ``/slow/<ms>``: 200 after ``ms`` milliseconds.
- ``/held``: 200 once the test calls :meth:`Receiver.let_held_go` (or the receiver is closed;
  at most 30 s): an attempt the test knows to be in progress until it says otherwise.
- ``/status/<code>``: that status.
- ``/together/<n>``: the first ``n`` requests to that path are each held until ``n`` of them
  are in flight at once (at most 45 s; :attr:`Receiver.together_met` says whether they
  were), then answered 200; later ones are answered 200 at once. Proves that that many
  senders were working at the same moment.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson


@dataclass
class Received:
    """One request as the receiver got it: when (monotonic s), method, path, headers (lower-case
    names) and the raw body."""

    at: float
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    #: whether the receiver is done with it (answered, or given up on)
    answered: bool = False
    #: the header fields as they came, in order, names as sent (repeated names kept)
    fields: list[tuple[str, str]] = field(default_factory=list)

    def json(self) -> Any:
        return orjson.loads(self.body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The reference server's capture overflowed a backlog of 5; deliveries must never see that.
    request_queue_size = 128
    allow_reuse_address = True


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def handle_one_request(self) -> None:
        self.received: Received | None = None
        try:
            super().handle_one_request()
        finally:
            if self.received is not None:
                with self.server.receiver._lock:  # type: ignore[attr-defined]
                    self.received.answered = True

    def do_POST(self) -> None:
        receiver: Receiver = self.server.receiver  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            # The sender went away mid-request (a SIGKILLed server sends the headers and the
            # body in two writes): a strict receiver drops it rather than take a cut body.
            self.close_connection = True
            return
        self.received = Received(
            time.monotonic(),
            "POST",
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            body,
            fields=list(self.headers.items()),
        )
        receiver._record(self.received)
        parts = self.path.split("?")[0].strip("/").split("/")
        kind = parts[0]
        if kind == "ok":
            self._answer(200)
        elif kind == "fail":
            self._answer(500)
        elif kind == "flaky":
            self._answer(500 if receiver.count(self.path) <= int(parts[1]) else 200)
        elif kind == "busy":
            if receiver.count(self.path) <= 1:
                self._answer(503, {"Retry-After": parts[1]})
            else:
                self._answer(200)
        elif kind == "gone":
            self._answer(410)
        elif kind == "redirect":
            self._answer(302, {"Location": "http://169.254.169.254/latest/meta-data/"})
        elif kind == "hang":
            receiver.released.wait(30)
        elif kind == "trickle":
            answer = (
                b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nX-Padding: " + b"x" * 200 + b"\r\n\r\nok"
            )
            for byte in answer:
                if receiver.released.is_set():
                    break
                # the answer goes on whether or not the sender is still there, so that a test
                # can tell a sender that gave up from one that waited it out
                with contextlib.suppress(OSError):
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                time.sleep(0.2)
        elif kind == "held":
            receiver.held.wait(30)
            self._answer(200)
        elif kind == "slow":
            time.sleep(int(parts[1]) / 1000)
            self._answer(200)
        elif kind == "status":
            self._answer(int(parts[1]))
        elif kind == "together":
            receiver._rendezvous(int(parts[1]))
            self._answer(200)
        else:
            self._answer(404)

    def _answer(self, status: int, headers: dict[str, str] | None = None) -> None:
        body = b"ok"
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@dataclass
class Receiver:
    """The receiver: ``url(path)``, ``requests`` (every one received), ``wait_for(n)``."""

    requests: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self.released = threading.Event()
        #: ``/held``: set to answer the requests held there, and every later one at once.
        self.held = threading.Event()
        #: ``/together/<n>``: requests waiting for the others, and whether ``n`` were held at once.
        self._waiting = 0
        self._together = threading.Condition()
        self.together_met = False
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.receiver = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _record(self, request: Received) -> None:
        with self._arrived:
            self.requests.append(request)
            self._arrived.notify_all()

    def _rendezvous(self, n: int, timeout: float = 45.0) -> None:
        """Hold a request of ``/together/<n>`` until ``n`` are held at once (see the module)."""
        deadline = time.monotonic() + timeout
        with self._together:
            if self.together_met:
                return
            self._waiting += 1
            if self._waiting >= n:
                self.together_met = True
                self._together.notify_all()
                return
            while not self.together_met and not self.released.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._together.wait(min(remaining, 0.1))
            self._waiting -= 1

    def answering(self, path: str | None = None) -> int:
        """Requests received (to ``path``, when given) whose answer is still being held or sent."""
        with self._lock:
            return sum(1 for r in self.requests if (path is None or r.path == path) and not r.answered)

    def count(self, path: str | None = None) -> int:
        """Requests received so far (to ``path``, when given)."""
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if path is None or r.path == path]

    def wait_for(self, count: int, path: str | None = None, timeout: float = 10.0) -> list[Received]:
        """Wait until ``count`` requests (to ``path``) have arrived, at most ``timeout`` s;
        return those received."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                found = [r for r in self.requests if path is None or r.path == path]
                remaining = deadline - time.monotonic()
                if len(found) >= count or remaining <= 0:
                    return found
                self._arrived.wait(remaining)

    def let_held_go(self) -> None:
        """Answer the requests ``/held`` is holding (and every later one at once)."""
        self.held.set()

    def close(self) -> None:
        self.released.set()
        self.held.set()
        self._server.shutdown()
        self._server.server_close()


def point_demo_webhooks_at(client: Any, token: str, url: str) -> list[int]:
    """PUT every webhook configuration of the demo with ``url`` (a receiver's: tests deliver
    to no other address), its other parameters sent back masked, so kept; through the admin
    API of the Flask test ``client`` with the admin ``token``. The app must allow ``url``'s
    host. Returns the ids changed."""
    changed = []
    headers = {"Authorization": token}
    for addon in client.get("/api/admin/addons", headers=headers).get_json()["addons"]:
        if addon["provider"] != "webhook":
            continue
        kept = ("provider", "description", "enabled", "events", "projects", "environments")
        body = {key: addon[key] for key in kept}
        body["parameters"] = {**addon["parameters"], "url": url}
        response = client.put(f"/api/admin/addons/{addon['id']}", json=body, headers=headers)
        assert response.status_code == 200, response.get_json()
        changed.append(addon["id"])
    return changed
