"""Throttling of failed authentications (spec 5.2, 7): 429 with Retry-After past the limit,
per client address, on a moving window of the app's clock; a valid token is never throttled."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagadmin.app import create_app
from flagadmin.config import SettingsError, settings_from_env
from flagadmin.store import tokens

from helpers import auth

pytestmark = pytest.mark.same_on_both_engines

UI = "/api/admin/ui-config"


@pytest.fixture
def throttled(make_app):
    """A client of an app that allows 3 failed authentications a minute per address."""
    return make_app(auth_failure_limit="3/minute").test_client()


def test_auth_failures__over_the_limit__429_with_retry_after(throttled, assert_valid):
    # Given: three failures from one address
    wrong = auth(tokens.new_admin_token())
    assert [throttled.get(UI, headers=wrong).status_code for _ in range(3)] == [401] * 3
    # When: a fourth, without any token this time
    response = throttled.get(UI)
    # Then
    assert response.status_code == 429
    assert response.get_json()["name"] == "TooManyRequestsError"
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert_valid(response, "/api/admin/ui-config")


def test_auth_failures__valid_token_while_throttled__never_throttled(throttled, admin_token):
    # Given: an address over its limit
    for _ in range(4):
        throttled.get(UI, headers=auth("wrong"))
    assert throttled.get(UI, headers=auth("wrong")).status_code == 429
    # When / Then: a valid token from that address still gets through, every time
    assert [throttled.get(UI, headers=auth(admin_token)).status_code for _ in range(10)] == [200] * 10


def test_auth_failures__successes__not_counted(throttled, admin_token):
    for _ in range(10):
        throttled.get(UI, headers=auth(admin_token))
    assert [throttled.get(UI).status_code for _ in range(4)] == [401, 401, 401, 429]


def test_auth_failures__other_address__not_throttled(throttled):
    for _ in range(4):
        throttled.get(UI)
    assert throttled.get(UI).status_code == 429
    other = throttled.get(UI, environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert other.status_code == 401


def test_auth_failures__window_passed__counted_again(make_app, clock):
    # Given: a limit of two failures a minute, used up by failures at 0 s and 30 s
    client = make_app(auth_failure_limit="2/minute", config={"CLOCK": clock}).test_client()
    first = client.get(UI).status_code
    clock.advance(30)
    second = client.get(UI).status_code
    refused = client.get(UI)
    # When: the window moves past the first failure (60 s), then past both (120 s)
    clock.advance(30)
    after_one = [client.get(UI).status_code for _ in range(2)]
    clock.advance(60)
    after_both = [client.get(UI).status_code for _ in range(3)]
    # Then
    assert (first, second, refused.status_code) == (401, 401, 429)
    assert refused.headers["Retry-After"] == "30"
    assert after_one == [401, 429]
    assert after_both == [401, 401, 429]


def test_auth_failure_limit__default__30_a_minute_as_the_readme_says(make_app):
    # Given: no FLAGADMIN_AUTH_FAILURE_LIMIT
    assert settings_from_env({}).auth_failure_limit == "30/minute"
    client = make_app().test_client()
    # When: 31 failures in a row
    statuses = [client.get(UI).status_code for _ in range(31)]
    # Then
    assert statuses == [401] * 30 + [429]
    settings_page = (Path(__file__).parents[1] / "docs" / "settings.md").read_text()
    assert "| `FLAGADMIN_AUTH_FAILURE_LIMIT` | `30/minute` |" in settings_page


def test_auth_failure_limit__from_environment__applied(monkeypatch, database):
    monkeypatch.setenv("FLAGADMIN_AUTH_FAILURE_LIMIT", "2/minute")
    client = create_app({"DATABASE": database}).test_client()
    assert [client.get(UI).status_code for _ in range(3)] == [401, 401, 429]


@pytest.mark.parametrize("value", ["lots", "0/minute", "30/minute;5/second", "", "30 per fortnight"])
def test_auth_failure_limit__unusable__refused_naming_the_variable(value):
    with pytest.raises(SettingsError, match="FLAGADMIN_AUTH_FAILURE_LIMIT"):
        settings_from_env({"FLAGADMIN_AUTH_FAILURE_LIMIT": value})


def test_serve__unusable_auth_failure_limit__refused_at_start(invoke, database):
    result = invoke("serve", "--port", "0", db=database, env={"FLAGADMIN_AUTH_FAILURE_LIMIT": "lots"})
    assert result.exit_code != 0
    assert "FLAGADMIN_AUTH_FAILURE_LIMIT" in result.output
