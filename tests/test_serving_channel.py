"""``serving.Channel``: waitress's main loop does not spin while a task thread sends, and a
response still goes out whole to a client that reads slowly.

A real waitress server with ``serving.Channel`` as its channel class (as ``serving.serve`` sets
it on its listeners) runs in a thread of the test process, on 127.0.0.1, so that the test can
count what its main loop does.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import waitress

from flagadmin import serving

CHUNK = b"x" * 1024


class CountedChannel(serving.Channel):
    """``serving.Channel`` counting the times the main loop was told the socket is writable."""

    polled_for_writing = 0

    def handle_write(self) -> None:
        type(self).polled_for_writing += 1
        super().handle_write()


@contextlib.contextmanager
def running(app, channel_class, **adjustments):
    """A waitress server with ``channel_class`` on 127.0.0.1, its main loop in a thread."""
    adjustments.setdefault("threads", 2)
    server = waitress.create_server(app, host="127.0.0.1", port=0, ident="test", **adjustments)
    server.channel_class = channel_class
    loop = threading.Thread(target=server.run, name="test-waitress-loop", daemon=True)
    loop.start()
    try:
        yield server
    finally:

        def close_all() -> None:  # in the loop's thread: the loop returns once its map is empty
            for dispatcher in list(server._map.values()):
                dispatcher.close()

        server.trigger.pull_trigger(close_all)
        loop.join(timeout=10)
        server.task_dispatcher.shutdown()
        assert not loop.is_alive()


def read_slowly(server, *, receive_buffer: int, pause: float) -> bytes:
    """One HTTP/1.1 GET / with ``Connection: close``, read through a receive buffer of
    ``receive_buffer`` bytes, sleeping ``pause`` seconds after each read of up to 64 KiB; the
    whole answer (head and body) in bytes."""
    with socket.create_connection(("127.0.0.1", server.effective_port), timeout=10) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        client.sendall(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        parts = []
        while part := client.recv(65536):
            parts.append(part)
            time.sleep(pause)
        return b"".join(parts)


def chunks(count: int):
    def app(environ, start_response):
        start_response(
            "200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(count * len(CHUNK)))]
        )
        return (CHUNK for _ in range(count))

    return app


def test_channel__client_reads_slowly__the_main_loop_sends_what_the_task_left_whole():
    # Given: an answer of 4 MiB, small socket buffers, a task that may buffer only 256 KiB
    # ahead of the socket (it waits for the main loop to send the rest), and a main loop that
    # would otherwise sleep 30 s between two looks at its sockets
    CountedChannel.polled_for_writing = 0
    with running(
        chunks(4096), CountedChannel, outbuf_high_watermark=256 * 1024, asyncore_loop_timeout=30
    ) as server:
        server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)  # accepted ones inherit it
        # When: a client with a small receive buffer reads it slowly (64 KiB, then 2 ms)
        answer = read_slowly(server, receive_buffer=32 * 1024, pause=0.002)
    # Then: whole; the main loop sent what the task thread could not, each time the socket had
    # room (never waiting for its 30 s timeout: the client's recv gives up after 10 s)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert body == CHUNK * 4096
    assert CountedChannel.polled_for_writing > 0


def test_channel__eight_clients_at_once__main_loop_not_polled_for_writing_while_tasks_send():
    # Given: 8 clients on keep-alive connections, 40 requests each, small answers
    CountedChannel.polled_for_writing = 0
    with running(chunks(2), CountedChannel, threads=8) as server:

        def client(_: int) -> list[int]:
            connection = http.client.HTTPConnection("127.0.0.1", server.effective_port, timeout=10)
            statuses = []
            for _ in range(40):
                connection.request("GET", "/")
                reply = connection.getresponse()
                assert reply.read() == CHUNK * 2
                statuses.append(reply.status)
            connection.close()
            return statuses

        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = [status for result in pool.map(client, range(8)) for status in result]
    # Then: every answer whole; the main loop was told "writable" for almost none of them
    # (waitress's own channel: about once per request or more, while the task threads send)
    assert statuses == [200] * 320
    assert CountedChannel.polled_for_writing < 32
