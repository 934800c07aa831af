"""The applications SDKs make, on the admin API (``GET /api/admin/metrics/applications``,
``/applications/{appName}``, ``/unknown-flags``), on both engines: the reference's 8.2.0
shapes (validated against its schemas), search, order and pages, what a caller who does not
see every project is shown, 404 and 400."""

from __future__ import annotations

import pytest
from openapi_schema_validator import OAS30Validator
from test_client_metrics import METRICS, REGISTER, REGISTRATION, metrics_body

from flagadmin import events
from flagadmin.tokens import changes
from flagadmin.web.state import state

from flag_helpers import REFERENCE, assert_reference
from helpers import auth

APPLICATIONS = "/api/admin/metrics/applications"
UNKNOWN_FLAGS = "/api/admin/metrics/unknown-flags"

#: The reference's ``unknownFlagsResponseSchema`` and ``unknownFlagSchema`` (Unleash 8.2.0's
#: OpenAPI document; not among tests/reference's schemas), their descriptions left out.
UNKNOWN_FLAGS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["unknownFlags"],
    "properties": {
        "unknownFlags": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "lastSeenAt"],
                "properties": {
                    "name": {"type": "string"},
                    "lastSeenAt": {"type": "string", "format": "date-time"},
                    "lastEventAt": {"type": "string", "format": "date-time", "nullable": True},
                    "reports": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["appName", "environments"],
                            "properties": {
                                "appName": {"type": "string"},
                                "environments": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "additionalProperties": False,
                                        "required": ["environment", "seenAt"],
                                        "properties": {
                                            "environment": {"type": "string"},
                                            "seenAt": {"type": "string", "format": "date-time"},
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        }
    },
}

#: What one application's answer holds beyond ``applicationSchema`` (the reference's answer
#: holds them too, although its schema forbids any property it does not list).
DETAIL_EXTRAS = ("createdAt", "instances", "seenToggles", "links")


@pytest.fixture
def sdk_token(db):
    def make(environment: str = "development", projects: list[str] | None = None) -> str:
        secret, _ = changes.create_api_token(
            db,
            events.COMMAND_LINE,
            type="client",
            name="sdk",
            environment=environment,
            projects=projects or ["*"],
        )
        return secret

    return make


@pytest.fixture
def report(client, sdk_token):
    """``report(app, flags, environment=, projects=)``: an SDK of ``app`` registers and reports
    ``flags`` (each counted once) with a token of ``environment`` and ``projects``; then the
    reports are written."""

    def send(
        app: str, flags=(), environment: str = "development", projects=None, instance: str = "pod-1"
    ) -> None:
        token = sdk_token(environment, projects)
        client.post(
            REGISTER, json={**REGISTRATION, "appName": app, "instanceId": instance}, headers=auth(token)
        )
        body = metrics_body({name: {"yes": 1, "no": 0} for name in flags}, app=app, instance=instance)
        assert client.post(METRICS, json=body, headers=auth(token)).status_code == 202
        state(client.application).client_metrics.flush()

    return send


def get(client, token, path, **query):
    response = client.get(path, headers=auth(token), query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_applications__none_yet__empty(client, admin_token, assert_valid):
    response = client.get(APPLICATIONS, headers=auth(admin_token))
    assert response.get_json() == {"applications": [], "total": 0}
    assert_valid(response, APPLICATIONS)


def test_applications__the_references_shape(client, admin_token, report, assert_valid):
    report("checkout-service", ["checkout-v2"], projects=["default", "payments"])
    report("checkout-service", ["checkout-v2"], environment="production", projects=["default"])
    response = client.get(APPLICATIONS, headers=auth(admin_token))
    assert_valid(response, APPLICATIONS)
    body = response.get_json()
    assert_reference(body, "applicationsSchema")
    assert body == {
        "applications": [
            {
                "appName": "checkout-service",
                "strategies": ["default", "gradualRollout"],
                "usage": [
                    {"project": "default", "environments": ["development", "production"]},
                    {"project": "payments", "environments": ["development"]},
                ],
            }
        ],
        "total": 1,
    }


def test_applications__search_order_and_pages(client, admin_token, report):
    for name in ("beta-web", "Alpha-api", "alpha-worker", "gamma"):
        report(name)
    names = lambda body: [a["appName"] for a in body["applications"]]  # noqa: E731
    assert names(get(client, admin_token, APPLICATIONS)) == ["Alpha-api", "alpha-worker", "beta-web", "gamma"]
    found = get(client, admin_token, APPLICATIONS, query="ALPHA")
    assert (names(found), found["total"]) == (["Alpha-api", "alpha-worker"], 2)
    page = get(client, admin_token, APPLICATIONS, sortOrder="desc", offset=1, limit=2)
    assert (names(page), page["total"]) == (["beta-web", "alpha-worker"], 4)
    assert names(get(client, admin_token, APPLICATIONS, sortBy="createdAt")) == [
        "beta-web",
        "Alpha-api",
        "alpha-worker",
        "gamma",
    ]


@pytest.mark.parametrize(
    "query", [{"sortBy": "name"}, {"sortOrder": "up"}, {"limit": "0"}, {"limit": "1001"}, {"offset": "-1"}]
)
def test_applications__a_bad_parameter__400(client, admin_token, query, assert_valid):
    response = client.get(APPLICATIONS, headers=auth(admin_token), query_string=query)
    assert response.status_code == 400
    assert_valid(response, APPLICATIONS)


def test_applications__a_client_token__403(client, sdk_token):
    response = client.get(APPLICATIONS, headers=auth(sdk_token()))
    assert response.status_code == 403


def test_application__the_references_shape(client, admin_token, report, assert_valid):
    report("checkout-service", ["checkout-v2", "new-pricing", "no-such-flag"], projects=["default"])
    report("checkout-service", ["checkout-v2"], environment="production", instance="pod-2")
    response = client.get(f"{APPLICATIONS}/checkout-service", headers=auth(admin_token))
    assert_valid(response, APPLICATIONS + "/{appName}")
    body = response.get_json()
    assert_reference({k: v for k, v in body.items() if k not in DETAIL_EXTRAS}, "applicationSchema")
    assert body["appName"] == "checkout-service"
    assert body["strategies"] == ["default", "gradualRollout"]
    assert [(i["instanceId"], i["environment"], i["sdkType"]) for i in body["instances"]] == [
        ("pod-2", "production", "backend"),
        ("pod-1", "development", "backend"),
    ]
    assert body["seenToggles"] == [
        {
            "name": "checkout-v2",
            "project": "default",
            "type": "release",
            "description": body["seenToggles"][0]["description"],
            "stale": False,
        },
        {
            "name": "new-pricing",
            "project": "default",
            "type": "experiment",
            "description": "Pricing page experiment",
            "stale": False,
        },
    ]
    assert body["links"] == {"self": "/api/admin/metrics/applications/checkout-service"}


def test_application__a_flag_deleted_since__not_found(client, admin_token, report, db):
    report("checkout-service", ["temp-flag"])
    client.delete("/api/admin/archive/temp-flag", headers=auth(admin_token))
    body = get(client, admin_token, f"{APPLICATIONS}/checkout-service")
    assert body["seenToggles"] == [{"name": "temp-flag", "notFound": True}]


def test_application__a_name_with_a_slash_and_spaces(client, admin_token, report):
    report("shop / checkout v2")
    body = get(client, admin_token, f"{APPLICATIONS}/shop%20/%20checkout%20v2")
    assert body["appName"] == "shop / checkout v2"
    assert body["links"]["self"] == "/api/admin/metrics/applications/shop%20%2F%20checkout%20v2"


def test_application__unknown__404(client, admin_token, assert_valid):
    response = client.get(f"{APPLICATIONS}/nobody", headers=auth(admin_token))
    assert response.status_code == 404
    assert "nobody" in response.get_json()["message"]
    assert_valid(response, APPLICATIONS + "/{appName}")


def test_applications__a_viewer__the_usage_and_flags_of_its_projects(client, victor, report):
    """victor is a Member of mobile only: usage of other projects and their flags are left out."""
    report("mixed", ["mobile-dark-mode", "checkout-v2"], projects=["default", "mobile"])
    report("mixed", ["mobile-dark-mode"], environment="production")
    listed = get(client, victor, APPLICATIONS)
    assert listed["applications"][0]["usage"] == [
        {"project": "*", "environments": ["production"]},
        {"project": "mobile", "environments": ["development"]},
    ]
    detail = get(client, victor, f"{APPLICATIONS}/mixed")
    assert [f["name"] for f in detail["seenToggles"]] == ["mobile-dark-mode"]


def test_unknown_flags__the_references_shape(client, admin_token, report, assert_valid):
    report("checkout-service", ["no-such-flag", "checkout-v2", "zz-missing"])
    report("other", ["no-such-flag"], environment="production")
    response = client.get(UNKNOWN_FLAGS, headers=auth(admin_token))
    assert_valid(response, UNKNOWN_FLAGS)
    body = response.get_json()
    OAS30Validator(UNKNOWN_FLAGS_SCHEMA).validate(body)
    assert [f["name"] for f in body["unknownFlags"]] == ["no-such-flag", "zz-missing"]
    first = body["unknownFlags"][0]
    assert [(r["appName"], [e["environment"] for e in r["environments"]]) for r in first["reports"]] == [
        ("checkout-service", ["development"]),
        ("other", ["production"]),
    ]
    assert first["lastSeenAt"] == max(e["seenAt"] for r in first["reports"] for e in r["environments"])


def test_unknown_flags__a_name_that_becomes_a_flag__kept_as_reported(client, admin_token, report):
    """A report is about the moment it was made: a name stays listed for the day after."""
    report("checkout-service", ["soon-a-flag"])
    client.post(
        "/api/admin/projects/default/features", json={"name": "soon-a-flag"}, headers=auth(admin_token)
    )
    assert [f["name"] for f in get(client, admin_token, UNKNOWN_FLAGS)["unknownFlags"]] == ["soon-a-flag"]


def test_reference_schemas__the_ones_these_tests_use_are_there():
    for name in ("applicationsSchema", "applicationSchema", "clientApplicationSchema", "clientMetricsSchema"):
        assert name in REFERENCE["components"]["schemas"]
