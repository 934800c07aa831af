"""The OpenAPI document: valid, complete, and kept by every response (schemathesis)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate

from flagadmin.api import OPERATIONS
from flagadmin.app import create_app
from flagadmin.config import Settings

SECTIONS = {"4.1", "4.2", "4.3", "4.4", "4.5"}


def test_document__valid_openapi_3(openapi_document):
    validate(openapi_document)
    assert openapi_document["openapi"].startswith("3.")


def test_document__five_operations_of_the_spec(openapi_document):
    assert {op.section for op in OPERATIONS} == SECTIONS
    assert set(openapi_document["paths"]) == {
        "/api/admin/addons/{id}/events",
        "/api/admin/personal-dashboard",
        "/api/admin/ui-config",
        "/api/admin/archive/features",
        "/api/admin/scim-settings/generate-new-token",
    }


def test_document__security_scheme_and_error_statuses(openapi_document):
    scheme = openapi_document["components"]["securitySchemes"]["apiKey"]
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "Authorization"}
    for path, operations in openapi_document["paths"].items():
        for operation in operations.values():
            assert operation["security"] == [{"apiKey": []}]
            assert {"200", "401"} <= set(operation["responses"]), path
    events = openapi_document["paths"]["/api/admin/addons/{id}/events"]["get"]
    assert set(events["responses"]) == {"200", "400", "401", "403", "404", "429", "503"}


def test_document__no_auth_needed(client):
    response = client.get("/docs/openapi.json")
    assert response.status_code == 200
    assert response.get_json()["info"]["title"]


@pytest.fixture
def api_schema(db_path):
    # schemathesis's ignored_auth check sends hundreds of unauthenticated requests a minute from
    # one address and wants 401 to each: the throttle (tested in test_credentials.py) would
    # rightly answer 429 past the limit, so this app allows far more failures than the default.
    settings = Settings(git_revision="abc123", auth_failure_limit="100000/minute")
    app = create_app({"DATABASE": str(db_path), "SETTINGS": settings, "TESTING": True})
    return schemathesis.openapi.from_wsgi("/docs/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_api__schemathesis_finds_nothing(case, admin_token):
    # Every check schemathesis has, on positive and negative data, with a valid admin token
    # identity: the in-process WSGI transport hands schemathesis the raw bytes, gzip undecoded
    case.call_and_validate(headers={"Authorization": admin_token, "Accept-Encoding": "identity"})
