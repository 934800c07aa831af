"""The gauge of requests in progress (web/inflight.py) that serve's delivery threads yield to.

Each test looks at what the gauge reports (requests in progress, the busy share, whether
``wait_for_room`` gave room), never at how long something took: how fast deliveries go beside
the requests is measured in bench/.
"""

from __future__ import annotations

import threading
import time

from flagadmin.web.inflight import ROOM_SHARE, RequestGauge

from helpers import wait_until


def test_request_gauge__a_request_in_progress__background_work_waits_for_a_pause():
    """serve's delivery threads wait (a bounded time) for room before each attempt: a request
    held in progress the whole time leaves none, and its end does once the server has closed
    the answer and a quiet moment has passed."""
    # Given: a WSGI app whose answer is held until released, called once
    release = threading.Event()

    def app(environ, start_response):
        start_response("200 OK", [])
        release.wait(60)
        return [b"ok"]

    gauge = RequestGauge(app)
    answered: list = []
    caller = threading.Thread(target=lambda: answered.append(gauge({}, lambda *a: None)))
    caller.start()
    try:
        wait_until(lambda: gauge.in_progress == 1)
        # When / Then: busy all along (once a whole window has passed with the request in
        # progress, the share of busy time is 1), and no room while it lasts
        wait_until(lambda: gauge.busy_share() > 0.99, timeout=30)
        assert gauge.wait_for_room(0.3, quiet=0.01) is False
    finally:
        release.set()
        caller.join(30)
    # ... then quiet once the server has closed the answer
    assert gauge.in_progress == 1  # the server has not closed the answer yet
    answered[0].close()
    assert gauge.in_progress == 0
    assert gauge.wait_for_room(30, quiet=0.01) is True


def test_request_gauge__steady_requests_with_short_gaps__room_without_a_quiet_moment():
    """Steady traffic that keeps the server busy a small share of the time, with gaps shorter
    than the quiet moment (a request of about 1 ms every 10 ms), leaves room: the delivery
    threads use the idle time instead of waiting for a pause that never comes. Waiting for a
    pause only, four threads delivered 38.6 a second while 250 were needed, and the outbox
    grew for as long as the traffic lasted (bench/journal/2026-11-27.md, "Deliveries under steady
    traffic")."""

    def app(environ, start_response):
        start_response("200 OK", [])
        time.sleep(0.001)
        return [b"ok"]

    gauge = RequestGauge(app)
    stop = threading.Event()
    answered = [0]

    def client():
        while not stop.is_set():
            gauge({}, lambda *a: None).close()
            answered[0] += 1
            time.sleep(0.009)

    driver = threading.Thread(target=client)
    driver.start()
    try:
        # Given: the gauge sees the requests keep the server busy part of the time, below the
        # share that leaves room
        wait_until(lambda: answered[0] >= 10)
        wait_until(lambda: 0 < gauge.busy_share() < ROOM_SHARE, timeout=30)
        # When: background work asks for room with a quiet moment longer than the test could
        # last (an hour), so that only the busy share can give it
        room = gauge.wait_for_room(30, quiet=3600)
        # Then: room came, and the requests went on
        seen = answered[0]
        wait_until(lambda: answered[0] > seen)
    finally:
        stop.set()
        driver.join(30)
    assert room is True
