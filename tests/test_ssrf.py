"""The address guard of webhooks: a configuration may only reach public addresses, checked
when it is saved and again when it is sent (the checked address pinned for the connection),
unless ``FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE`` or ``FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS``
allow it."""

from __future__ import annotations

import ipaddress
import socket
import time

import pytest

from flagadmin import events
from flagadmin.config import Settings
from flagadmin.integrations import address_guard, sending
from flagadmin.integrations.worker import Worker
from flagadmin.store import deliveries

from helpers import auth, wait_until
from receiver import Receiver

pytestmark = pytest.mark.same_on_both_engines

ADDONS = "/api/admin/addons"


@pytest.fixture
def receiver():
    started = Receiver()
    yield started
    started.close()


def body(url: str) -> dict:
    return {"provider": "webhook", "enabled": True, "parameters": {"url": url}, "events": ["feature-created"]}


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private (10.0.0.0/8)"),
        ("172.16.0.1", "private (172.16.0.0/12)"),
        ("192.168.1.1", "private (192.168.0.0/16)"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "CGNAT"),
        ("192.0.0.8", "IETF protocol assignments"),
        ("198.18.0.1", "benchmarking"),
        ("192.0.2.1", "documentation"),
        ("203.0.113.9", "documentation"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("0.0.0.0", "'this network'"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "IPv4-mapped address of 127.0.0.1, loopback"),
        ("::ffff:10.0.0.1", "IPv4-mapped address of 10.0.0.1, private"),
        ("64:ff9b::7f00:1", "NAT64 address of 127.0.0.1, loopback"),
        ("64:ff9b::a9fe:a9fe", "NAT64 address of 169.254.169.254, link-local"),
        ("64:ff9b:1::a00:1", "local-use NAT64"),
        ("2002:7f00:1::", "6to4 address of 127.0.0.1, loopback"),
        ("2002:c0a8:101::1", "6to4 address of 192.168.1.1, private"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo address of 127.0.0.1, loopback"),
        ("::127.0.0.1", "IPv4-compatible"),
        ("fc00::1", "unique local"),
        ("fd12:3456::1", "unique local"),
        ("fe80::1", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("100::1", "discard-only"),
    ],
)
def test_non_public_reason__special_addresses_in_every_form__refused_with_why(address, reason):
    found = address_guard.non_public_reason(ipaddress.ip_address(address))
    assert found is not None and reason in found, found


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"],
)
def test_non_public_reason__public_addresses__none(address):
    assert address_guard.non_public_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://2130706433/hook",  # 127.0.0.1 as one decimal number
        "http://0x7f000001/hook",  # ... in hexadecimal
        "http://0177.0.0.1/hook",  # ... in octal
        "http://127.1/hook",  # ... shortened
        "http://0.0.0.0:8080/",
        "http://localhost:4242/api",  # a name that resolves to 127.0.0.1
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",  # IPv4-mapped IPv6
        "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
        "http://[64:ff9b::a00:1]/hook",  # NAT64 of 10.0.0.1
        "http://[2002:c0a8:101::1]/hook",  # 6to4 of 192.168.1.1
        "https://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://198.18.0.1/",
        "http://224.0.0.1/",
        "http://[fe80::1]/",
    ],
)
def test_save__url_of_a_non_public_address__400_saying_so_and_nothing_written(client, admin_token, db, url):
    # Given
    before = db.value("SELECT count(*) FROM integrations")
    # When
    response = client.post(ADDONS, json=body(url), headers=auth(admin_token))
    # Then
    assert response.status_code == 400, response.get_json()
    message = response.get_json()["message"]
    assert "parameters.url: not allowed" in message and "which is not a public address" in message
    assert "FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE" in message
    assert db.value("SELECT count(*) FROM integrations") == before


def test_save__name_that_does_not_resolve__400(client, admin_token):
    response = client.post(ADDONS, json=body("https://hooks.example.invalid/x"), headers=auth(admin_token))
    assert response.status_code == 400
    assert "does not resolve" in response.get_json()["message"]


@pytest.mark.parametrize("host", ["fe80::1%nosuchzone", "::1%nosuchzone", "192.0.2.1%x"])
def test_addresses__ip_literal_the_system_cannot_read__unresolvable_like_a_name(host):
    # Given: an address literal (read in the caller's thread, without the resolver) with a
    # zone that no interface has; saved URLs cannot hold one, the guard still answers for it
    guard = address_guard.AddressGuard(allow_private=True)
    # When / Then: the error a name that does not resolve gets, not the system's own
    with pytest.raises(address_guard.Unresolvable, match="does not resolve"):
        guard.addresses(host, 80, timeout=1.0)


def test_save__allowed_host__only_that_exact_name_passes(make_app, admin_token):
    # Given
    client = make_app(integrations_allowed_hosts=("127.0.0.1",)).test_client()
    # Then
    assert (
        client.post(ADDONS, json=body("http://127.0.0.1:9/x"), headers=auth(admin_token)).status_code == 201
    )
    assert (
        client.post(ADDONS, json=body("http://localhost:9/x"), headers=auth(admin_token)).status_code == 400
    )


def test_save__private_allowed__any_address_passes(make_app, admin_token):
    client = make_app(integrations_allow_private=True).test_client()
    for url in ("http://10.0.0.5/x", "http://[::1]:8080/x", "http://localhost/x"):
        assert client.post(ADDONS, json=body(url), headers=auth(admin_token)).status_code == 201


def test_send__saved_while_allowed_then_not__blocked_at_connect_nothing_sent(
    make_app, admin_token, db, database, receiver
):
    """The check runs again when sending: a configuration saved while private addresses were
    allowed is blocked once they are not (as it would be if its name's DNS changed)."""
    # Given: saved under FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE=true
    with db.write():
        db.run("UPDATE integrations SET enabled = 0")
    client = make_app(integrations_allow_private=True).test_client()
    integration = client.post(ADDONS, json=body(receiver.url("/ok")), headers=auth(admin_token)).get_json()[
        "id"
    ]
    with db.write():
        event_id = events.record(db, "feature-created", events.COMMAND_LINE)
    # When: delivered by a worker that does not allow them
    worker = Worker(
        database,
        Settings(delivery_timeout=1.0, delivery_retry_schedule=(0.1,), delivery_poll_interval=0.05),
    ).start()
    try:
        wait_until(lambda: deliveries.of_event(db, event_id)[0]["state"] == "failed", timeout=30)
    finally:
        worker.stop(grace=2)
    # Then: nothing reached the receiver, one failed row, not retried
    assert receiver.count() == 0
    (delivered,) = deliveries.of_event(db, event_id)
    assert (delivered["state"], delivered["attempts"]) == ("failed", 1)
    (row,) = client.get(f"{ADDONS}/{integration}/events", headers=auth(admin_token)).get_json()[
        "integrationEvents"
    ]
    lines = row["stateDetails"].split("\n")
    assert lines[0].startswith("Webhook request failed: blocked address: 127.0.0.1 resolves to 127.0.0.1")
    assert "loopback" in lines[0]
    assert lines[1] == "Not retried: the address is not allowed."


def test_test_endpoint__goes_through_the_same_guard(make_app, admin_token, receiver):
    # Given: saved while allowed, tested while not
    allowed = make_app(integrations_allow_private=True).test_client()
    integration = allowed.post(ADDONS, json=body(receiver.url("/ok")), headers=auth(admin_token)).get_json()[
        "id"
    ]
    # When
    response = make_app().test_client().post(f"{ADDONS}/{integration}/test", headers=auth(admin_token))
    # Then
    assert response.status_code == 200
    assert "blocked address" in response.get_json()["stateDetails"]
    assert receiver.count() == 0


def test_pinned_connection__connects_to_the_checked_address_never_the_name_again(receiver):
    """The connection goes to an address the guard checked, with the URL's host name kept
    for Host (and TLS): a name that resolves elsewhere a moment later (DNS rebinding) cannot
    redirect it."""
    # Given: a host name that does not resolve at all, and the checked address of the receiver
    connection = sending._PinnedConnection(
        "hooks.example.invalid",
        receiver.port,
        [(socket.AF_INET, ("127.0.0.1", receiver.port))],
        time.monotonic() + 5,
        None,
        lambda sock: None,
    )
    # When
    connection.request("POST", "/ok", body=b"{}", headers={"Content-Type": "application/json"})
    status = connection.getresponse().status
    connection.close()
    # Then
    assert status == 200
    (request,) = receiver.received("/ok")
    assert request.headers["host"] == f"hooks.example.invalid:{receiver.port}"
