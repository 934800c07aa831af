"""The OpenAPI 3 document, built from the app's own declared views and their marshmallow schemas."""

from __future__ import annotations

from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Flask

from .. import __version__
from .auth import WRITE_METHODS
from .errors import ErrorSchema
from .operations import RULE_VARIABLE, STATUS_DESCRIPTIONS, Operation, declared_operations

SECURITY_SCHEME = "apiKey"

#: Description of each success status an operation may declare.
SUCCESS_DESCRIPTIONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content"}


def build_document(app: Flask, base_uri_path: str = "") -> dict[str, Any]:
    """Return the OpenAPI 3.0.3 document of every operation declared on ``app``'s views.

    Each operation lists its path and query parameters, its request body, its success
    schema, its links and every error status it can answer, all with schemas;
    ``base_uri_path`` becomes the server URL.
    """
    marshmallow_plugin = MarshmallowPlugin()
    spec = APISpec(
        title="flagadmin admin API",
        version=__version__,
        openapi_version="3.0.3",
        plugins=[marshmallow_plugin],
        info={
            "description": "Integration events, personal dashboard, UI configuration, archived "
            "features and SCIM token generation (spec/admin-api.md); beside them, the reference "
            "server's flag changes, integration configurations and the roles SCIM groups grant.",
        },
        servers=[{"url": base_uri_path or "/"}],
    )
    marshmallow_plugin.converter.add_attribute_function(nullable_object)
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
    paths: dict[str, dict[str, Any]] = {}
    for endpoint, op in declared_operations(app):
        path = RULE_VARIABLE.sub(r"{\1}", op.rule)
        # what maintenance mode refuses: the admin API's changes (not the SDKs' reports)
        writes = (
            op.method in WRITE_METHODS
            and not getattr(app.view_functions[endpoint], "changes_nothing", False)
            and not op.permission.for_sdks
        )
        paths.setdefault(path, {})[op.method.lower()] = _operation(endpoint.split(".")[-1], op, writes=writes)
    for path, operations in paths.items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


def nullable_object(self, field: Any, ret: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """An apispec attribute function: a nested object that may be null (a field marked
    ``metadata={"nullable_object": True}`` with ``allow_none``) as OpenAPI 3.0 says one, ``allOf``
    of its schema with ``nullable: true``, in place of apispec's ``anyOf`` of the object and
    any object (which would say that ``{}`` will do)."""
    if not field.metadata.get("nullable_object"):
        return {}
    found = [ret.pop("$ref", None)] + [
        item.get("$ref") for item in ret.pop("allOf", []) + ret.pop("anyOf", [])
    ]
    ret.pop("nullable", None)
    references = [reference for reference in found if reference]
    return {"allOf": [{"$ref": references[0]}], "nullable": True} if references else {}


#: What a 503 of an operation that writes says beyond the database's 503.
MAINTENANCE_503 = (
    " Also while maintenance mode is on (FLAGADMIN_MAINTENANCE_MODE), which refuses every change"
    " and keeps reads."
)


def _operation(operation_id: str, op: Operation, *, writes: bool = False) -> dict[str, Any]:
    """The OpenAPI operation object of ``op``; ``writes``: it changes something, so maintenance
    mode refuses it (its 503 says so)."""
    parameters: list[dict[str, Any]] = [
        {
            "in": "path",
            "name": name,
            "required": True,
            "schema": param.schema,
            "description": param.description,
        }
        for name, param in op.path_parameters.items()
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
    success: dict[str, Any] = {"description": SUCCESS_DESCRIPTIONS.get(op.success_status, "OK")}
    if op.success_status != 204 and op.response_schema is not None:
        success["content"] = {"application/json": {"schema": op.response_schema}}
    if headers:
        success["headers"] = headers
    if op.links:
        success["links"] = op.links
    responses: dict[str, Any] = {str(op.success_status): success}
    if op.conditional:
        responses["304"] = {"description": STATUS_DESCRIPTIONS[304]}
    for status in op.statuses:
        description, schema = op.error_schemas.get(status, (STATUS_DESCRIPTIONS[status], "Error"))
        responses[str(status)] = {
            "description": description + (MAINTENANCE_503 if status == 503 and writes else ""),
            "content": {"application/json": {"schema": schema}},
        }
    document: dict[str, Any] = {
        "operationId": operation_id,
        "summary": op.summary,
        "description": f"{op.description}\n\nSpec {op.section}. Needs {op.permission.value}.",
        "tags": [op.tag],
        "deprecated": op.deprecated,
        "security": [{SECURITY_SCHEME: []}],
        "parameters": parameters,
        "responses": responses,
    }
    if op.body_schema is not None:
        document["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": op.body_schema}},
        }
    return document
