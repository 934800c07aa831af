"""Token management on the command line (spec 5): ``create-token --expires-in``,
``list-tokens`` (never a secret) and ``revoke-token`` (401 from the next request)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from flagadmin.store import tokens
from flagadmin.web.state import state

from helpers import auth

UI = "/api/admin/ui-config"


def columns(line: str) -> list[str]:
    """The cells of a line of ``list-tokens`` output (columns are two or more spaces apart)."""
    return re.split(r" {2,}", line.strip())


def test_list_tokens__tokens_of_each_kind__every_column_and_no_secret(invoke, database, client):
    # Given: an admin token and an expiring personal token, the latter used once
    admin = invoke("create-token", "--admin", "--name", "ci robot", db=database).stdout.strip()
    alice = invoke("create-token", "--user", "alice", "--expires-in", "P30D", db=database).stdout.strip()
    assert client.get(UI, headers=auth(alice)).status_code == 200
    state(client.application).token_uses.flush()  # written now rather than a second later
    # When
    result = invoke("list-tokens", db=database)
    # Then: a header and one row per token, with every column
    assert result.exit_code == 0
    header, *rows = (columns(line) for line in result.output.splitlines())
    assert header == [
        "ID",
        "STATUS",
        "KIND",
        "USER",
        "NAME",
        "CREATED",
        "LAST USED",
        "EXPIRES",
        "REVOKED",
        "SCOPE",
    ]
    assert len(rows) == 2
    assert rows[0][:5] == ["1", "active", "admin", "-", "ci robot"]
    assert rows[0][6:] == ["-", "-", "-", "*:*"]  # never used, never expires, not revoked; reads all
    assert rows[1][:5] == ["2", "active", "personal", "alice", "alice token"]
    assert rows[1][6] != "-" and rows[1][8] == "-" and rows[1][9] == "-"  # used, not revoked; no scope
    expires = datetime.fromisoformat(rows[1][7])
    assert abs(expires - (datetime.now(UTC) + timedelta(days=30))) < timedelta(minutes=1)
    for row in rows:
        assert abs(datetime.fromisoformat(row[5]) - datetime.now(UTC)) < timedelta(minutes=1)
    # ... and never a token or a digest
    for token in (admin, alice):
        assert token not in result.output and tokens.digest(token) not in result.output


def test_list_tokens__none__says_how_to_create_one(invoke):
    assert invoke("init-db").exit_code == 0
    result = invoke("list-tokens")
    assert result.exit_code == 0
    assert "flagadmin create-token" in result.output


def test_revoke_token__by_id__401_at_once_and_listed_as_revoked(invoke, database, client):
    # Given: a personal token that works
    token = invoke("create-token", "--user", "alice", db=database).stdout.strip()
    assert client.get(UI, headers=auth(token)).status_code == 200
    # When
    result = invoke("revoke-token", "1", db=database)
    # Then: the same running app refuses it on the next request
    assert result.exit_code == 0 and "Token 1 revoked at" in result.output
    response = client.get(UI, headers=auth(token))
    assert response.status_code == 401
    assert response.get_json()["name"] == "AuthenticationRequired"
    assert columns(invoke("list-tokens", db=database).output.splitlines()[1])[1] == "revoked"


def test_revoke_token__twice__harmless_and_said(invoke, database):
    invoke("create-token", "--admin", db=database)
    first = invoke("revoke-token", "1", db=database)
    second = invoke("revoke-token", "1", db=database)
    assert first.exit_code == 0 and second.exit_code == 0
    assert "was already revoked" in second.output


def test_revoke_token__unknown_id__refused_nothing_changed(invoke, database, db, admin_token):
    # Given: one token
    before = db.all("SELECT * FROM api_tokens")
    # When
    result = invoke("revoke-token", "999", db=database)
    # Then
    assert result.exit_code != 0
    assert "No API token has id 999" in result.output and "list-tokens" in result.output
    assert db.all("SELECT * FROM api_tokens") == before


def test_create_token__expires_in__works_until_then_401_at_once(invoke, database, make_app, clock):
    # Given: a token that expires an hour from now, and an app whose clock the test moves
    result = invoke("create-token", "--admin", "--expires-in", "PT1H", db=database)
    token = result.stdout.strip()
    assert "expires at" in result.stderr
    client = make_app(config={"CLOCK": clock}).test_client()
    # When / Then: it works now and a minute before the hour, and is refused once it has passed
    assert client.get(UI, headers=auth(token)).status_code == 200
    clock.advance(3540)
    assert client.get(UI, headers=auth(token)).status_code == 200
    clock.advance(61)
    assert client.get(UI, headers=auth(token)).status_code == 401


@pytest.mark.parametrize(
    ("duration", "hint"),
    [("30d", "ISO 8601"), ("banana", "ISO 8601"), ("P0D", "longer than zero"), ("-P1D", "longer than zero")],
)
def test_create_token__bad_expires_in__refused_nothing_stored(invoke, database, db, duration, hint):
    result = invoke("create-token", "--admin", "--expires-in", duration, db=database)
    assert result.exit_code != 0
    assert hint in result.output
    assert db.value("SELECT count(*) FROM api_tokens") == 0
