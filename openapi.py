"""The OpenAPI 3 document, built from the declared operations and their marshmallow schemas."""

from __future__ import annotations

import re
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from . import __version__, auth
from .api import OPERATIONS, STATUS_DESCRIPTIONS
from .errors import ErrorSchema

SECURITY_SCHEME = "apiKey"

#: OpenAPI links of each operation's 200 response, by operationId: how a response feeds the
#: next request (also what schemathesis's stateful phase follows).
LINKS: dict[str, dict[str, Any]] = {
    "list_integration_events": {
        "EventsOfTheSameIntegration": {
            "operationId": "list_integration_events",
            "parameters": {"id": "$response.body#/integrationEvents/0/integrationId"},
            "description": "The log of the integration that handled the first listed event.",
        }
    },
}


def build_document(base_uri_path: str = "") -> dict[str, Any]:
    """Return the OpenAPI 3.0.3 document of every operation in :data:`~flagadmin.api.OPERATIONS`.

    Each operation lists its query parameters, its 200 schema and every error status it can
    answer, all with schemas; ``base_uri_path`` becomes the server URL.
    """
    spec = APISpec(
        title="flagadmin admin API",
        version=__version__,
        openapi_version="3.0.3",
        plugins=[MarshmallowPlugin()],
        info={
            "description": "Integration events, personal dashboard, UI configuration, archived "
            "features and SCIM token generation (spec/admin-api.md).",
        },
        servers=[{"url": base_uri_path or "/"}],
    )
    spec.components.security_scheme(
        SECURITY_SCHEME,
        {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "An API token, raw or as 'Bearer <token>' (spec 5).",
        },
    )
    spec.components.schema("Error", schema=ErrorSchema)
    for op in OPERATIONS:
        path = re.sub(r"<(?:[a-z]+:)?([A-Za-z_]+)>", r"{\1}", op.rule)
        spec.path(path=path, operations={op.method.lower(): _operation(op)})
    return spec.to_dict()


def _operation(op) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {
            "in": "path",
            "name": name,
            "required": True,
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
            "description": "Id of the integration configuration, a decimal integer.",
        }
        for name in re.findall(r"<(?:[a-z]+:)?([A-Za-z_]+)>", op.rule)
    ]
    if op.query_schema is not None:
        parameters.append({"in": "query", "schema": op.query_schema})
    headers = {
        name: {"schema": {"type": "string", "enum": [value]}} for name, value in op.response_headers.items()
    }
    if op.conditional:
        parameters.append(
            {
                "in": "header",
                "name": "If-None-Match",
                "required": False,
                "schema": {"type": "string"},
                "description": "An ETag from an earlier answer: 304 while it still matches.",
            }
        )
        headers["ETag"] = {"schema": {"type": "string"}, "description": "Version of this answer."}
    responses: dict[str, Any] = {
        "200": {
            "description": "OK",
            "content": {"application/json": {"schema": op.response_schema}},
            **({"headers": headers} if headers else {}),
        }
    }
    operation_id = op.endpoint.split(".")[-1]
    if operation_id in LINKS:
        responses["200"]["links"] = LINKS[operation_id]
    if op.conditional:
        responses["304"] = {"description": STATUS_DESCRIPTIONS[304]}
    for status in op.statuses:
        responses[str(status)] = {
            "description": STATUS_DESCRIPTIONS[status],
            "content": {"application/json": {"schema": "Error"}},
        }
    permission = {auth.ADMIN: "the ADMIN permission", auth.USER: "a personal access token"}.get(
        op.permission, "any valid API token"
    )
    return {
        "operationId": operation_id,
        "summary": op.summary,
        "description": f"{op.description}\n\nSpec {op.section}. Needs {permission}.",
        "tags": [op.tag],
        "deprecated": op.deprecated,
        "security": [{SECURITY_SCHEME: []}],
        "parameters": parameters,
        "responses": responses,
    }
