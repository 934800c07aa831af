"""Spec 4.3: GET /api/admin/ui-config, and the FLAGADMIN_* settings behind it."""

from __future__ import annotations

import pytest

from flagadmin import __version__
from flagadmin.app import create_app
from flagadmin.config import DEFAULT_RESOURCE_LIMITS, SettingsError, settings_from_env

from helpers import auth

PATH = "/api/admin/ui-config"


@pytest.mark.parametrize("who", ["admin_token", "alice", "victor"])
def test_ui_config__any_valid_token__200_with_required_fields(client, request, assert_valid, who):
    response = client.get(PATH, headers=auth(request.getfixturevalue(who)))
    assert response.status_code == 200
    assert_valid(response, PATH)
    body = response.get_json()
    assert body["version"] == __version__
    assert body["serviceUrl"] == "http://127.0.0.1:4242"
    assert body["baseUriPath"] == ""
    assert body["versionInfo"] == {
        "current": {"oss": "abc123", "enterprise": ""},
        "latest": {},
        "isLatest": True,
    }


def test_ui_config__resource_limits__documented_defaults(client, admin_token):
    body = client.get(PATH, headers=auth(admin_token)).get_json()
    assert body["resourceLimits"] == {
        "segmentValues": 1000,
        "strategySegments": 5,
        "actionSetActions": 10,
        "actionSetsPerProject": 5,
        "actionSetFilters": 5,
        "actionSetFilterValues": 25,
        "signalEndpoints": 5,
        "signalTokensPerEndpoint": 5,
        "featureEnvironmentStrategies": 30,
        "constraintValues": 250,
        "constraints": 30,
        "environments": 50,
        "apiTokens": 2000,
        "projects": 500,
        "segments": 300,
        "featureFlags": 5000,
    }
    assert body["segmentValuesLimit"] == 1000
    assert body["strategySegmentsLimit"] == 5


def test_ui_config__instance_id__stable_across_restarts(database, admin_token):
    first = create_app({"DATABASE": database}).test_client().get(PATH, headers=auth(admin_token))
    second = create_app({"DATABASE": database}).test_client().get(PATH, headers=auth(admin_token))
    assert first.get_json()["instanceId"] == second.get_json()["instanceId"]


def test_ui_config__environment_settings__served(database, admin_token, monkeypatch, assert_valid):
    # Given
    for name, value in {
        "FLAGADMIN_SERVICE_URL": "https://flags.example.com",
        "FLAGADMIN_NAME": "acme flags",
        "FLAGADMIN_SLOGAN": "ship it",
        "FLAGADMIN_AUTH_TYPE": "enterprise",
        "FLAGADMIN_FRONTEND_API_ORIGINS": "https://a.example.com, https://b.example.com",
        "FLAGADMIN_MAINTENANCE_MODE": "true",
        "FLAGADMIN_EMAIL_ENABLED": "yes",
        "FLAGADMIN_RESOURCE_LIMITS": '{"featureFlags": 10000, "segments": 0}',
        "FLAGADMIN_GIT_REVISION": "deadbeef",
    }.items():
        monkeypatch.setenv(name, value)
    app = create_app({"DATABASE": database, "BASE_URI_PATH": "/flags"})
    # When
    response = app.test_client().get(PATH, headers=auth(admin_token))
    # Then
    assert_valid(response, PATH)
    body = response.get_json()
    assert body["serviceUrl"] == "https://flags.example.com"
    assert (body["name"], body["slogan"], body["authenticationType"]) == (
        "acme flags",
        "ship it",
        "enterprise",
    )
    assert body["frontendApiOrigins"] == ["https://a.example.com", "https://b.example.com"]
    assert body["maintenanceMode"] is True and body["emailEnabled"] is True
    assert body["resourceLimits"]["featureFlags"] == 10000
    assert body["resourceLimits"]["segments"] == 0
    assert body["resourceLimits"]["projects"] == DEFAULT_RESOURCE_LIMITS["projects"]
    assert body["baseUriPath"] == "/flags"
    assert body["versionInfo"]["current"]["oss"] == "deadbeef"


@pytest.mark.parametrize(
    ("name", "value", "mentioned"),
    [
        ("FLAGADMIN_AUTH_TYPE", "ldap", "FLAGADMIN_AUTH_TYPE"),
        ("FLAGADMIN_MAINTENANCE_MODE", "maybe", "FLAGADMIN_MAINTENANCE_MODE"),
        ("FLAGADMIN_RESOURCE_LIMITS", "{not json", "not JSON"),
        ("FLAGADMIN_RESOURCE_LIMITS", '{"widgets": 3}', "widgets"),
        ("FLAGADMIN_RESOURCE_LIMITS", '{"projects": 0}', "projects"),
        ("FLAGADMIN_RESOURCE_LIMITS", '{"segments": "many"}', "segments"),
        ("FLAGADMIN_RESOURCE_LIMITS", "[1]", "JSON object"),
    ],
)
def test_settings__bad_value__refused_naming_the_variable(name, value, mentioned):
    with pytest.raises(SettingsError, match=mentioned):
        settings_from_env({name: value})


def test_ui_config__no_token__401(client):
    response = client.get(PATH)
    assert response.status_code == 401
