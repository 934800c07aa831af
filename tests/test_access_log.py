"""The access log (``serve --access-log``): one line per request with the status and the bytes
that went on the wire, and never a token, in a header, a path or a query string."""

from __future__ import annotations

import gzip
import logging

import pytest

from flagadmin.store import tokens
from flagadmin.timestamps import now_rfc3339

from helpers import auth

pytestmark = pytest.mark.same_on_both_engines

UI = "/api/admin/ui-config"
EVENTS = "/api/admin/addons/1/events"
DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"
GENERATE = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"


def test_access_log__every_operation_and_failure__holds_no_token(live_server, db, make_token, admin_token):
    # Given: a real server with access logging; tokens valid, revoked, expired and made up
    alice = make_token(user="alice")
    revoked = make_token(user="bob")
    tokens.revoke(db, tokens.find_caller(db, revoked, now_rfc3339()).token_id)
    expired = make_token("admin", expires_at="2020-01-01T00:00:00.000Z")
    wrong_admin, wrong_personal = tokens.new_admin_token(), tokens.new_personal_token()
    wrong_scim = "scim_" + "A" * 43
    server = live_server(args=("--access-log",), env={"FLAGADMIN_AUTH_FAILURE_LIMIT": "20/minute"})
    # When: every operation runs, with good tokens and with bad ones
    statuses = [
        server.request("GET", EVENTS + "?limit=5", auth(admin_token)).status,
        server.request("GET", DASHBOARD, auth(f"Bearer {alice}")).status,
        server.request("GET", UI, auth(admin_token)).status,
        server.request("GET", ARCHIVE, auth(alice)).status,
    ]
    generated = server.request("POST", GENERATE, auth(admin_token))
    scim = generated.json()["token"]
    statuses += [
        generated.status,
        server.request("GET", SCIM, auth(f"Bearer {scim}")).status,
        server.request("GET", EVENTS, auth(alice)).status,  # 403: alice is no Admin
    ]
    for bad in (wrong_admin, wrong_personal, revoked, expired, "garbage"):
        for path in (EVENTS, DASHBOARD, UI, ARCHIVE):
            statuses.append(server.request("GET", path, auth(bad)).status)
        statuses.append(server.request("POST", GENERATE, auth(f"Bearer {bad}")).status)
    for bad in (wrong_scim, admin_token, alice):
        statuses.append(server.request("GET", SCIM, auth(f"Bearer {bad}")).status)
    # ... and tokens where they do not belong: the query string and the path
    statuses.append(server.request("GET", f"{UI}?token={alice}&key={scim}").status)
    statuses.append(server.request("GET", f"/api/admin/addons/{admin_token}/events").status)
    server.stop()
    # Then: the answers are what they should be (past 20 failures, SCIM's included: 429)
    assert statuses[:6] == [200] * 6
    assert statuses[6] == 403
    assert statuses[7:27] == [401] * 20
    assert statuses[27:] == [429] * len(statuses[27:])
    # ... the log holds one access line per request (so it would show a token if one leaked)
    log = server.log.read_text()
    access_lines = [line for line in log.splitlines() if " flagadmin.access: " in line]
    assert len(access_lines) == len(statuses)
    assert sum('"GET /api/admin/addons/*:*.[redacted]/events"' in line for line in access_lines) == 1
    # ... and no token, nor the secret part of one, nor a digest, appears anywhere in it
    used = [admin_token, alice, revoked, expired, wrong_admin, wrong_personal, wrong_scim, scim]
    for token in used:
        secret = token.split(":")[-1].split(".")[-1].removeprefix("scim_")
        assert token not in log and secret not in log
        assert tokens.digest(token) not in log


def test_access_log__gzip_answer__logs_the_status_and_the_compressed_bytes(make_app, admin_token, caplog):
    # Given: an app that logs each request
    client = make_app(config={"ACCESS_LOG": True}).test_client()
    # When: a large answer is asked for gzipped, then plain
    with caplog.at_level(logging.INFO, logger="flagadmin.access"):
        zipped = client.get(EVENTS, headers={**auth(admin_token), "Accept-Encoding": "gzip"}, buffered=True)
        plain = client.get(EVENTS, headers=auth(admin_token), buffered=True)
    # Then: each line has the status and the exact number of body bytes sent
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.get_data()) == plain.get_data()
    lines = [r.getMessage() for r in caplog.records if r.name == "flagadmin.access"]
    assert len(lines) == 2
    assert f'"GET {EVENTS}" 200 {len(zipped.get_data())}B ' in lines[0]
    assert f'"GET {EVENTS}" 200 {len(plain.get_data())}B ' in lines[1]
    assert len(zipped.get_data()) < len(plain.get_data())
