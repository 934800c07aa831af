"""API tokens through the admin API, on the reference server's paths and bodies:
``GET``/``POST /api/admin/api-tokens``, ``PUT``/``DELETE /api/admin/api-tokens/{token}``, and
a project's tokens, ``GET``/``POST /api/admin/projects/{projectId}/api-tokens`` and ``DELETE
/api/admin/projects/{projectId}/api-tokens/{token}``. The reference server's ``GET
/api/admin/api-tokens/{name}`` is left out: its path is the PUT's and DELETE's with another
meaning, which one OpenAPI path cannot say.

The bodies are the reference server's ``createApiTokenSchema``, ``createProjectApiTokenSchema``,
``updateApiTokenSchema``, ``apiTokenSchema`` and ``apiTokensSchema``. A token is named in a path
by its secret, as the reference server names it; flagadmin keeps only the secret's digest, so a
secret is answered once, by the create, and never listed. The rules and the events are in
``flagadmin.tokens.changes``. ``/api/admin/api-tokens`` needs the ADMIN permission (as the
reference server's); a project's tokens need the project's token permissions.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from .. import events
from ..flags import access
from ..permissions import names
from ..records import Timestamp, WholeMatch
from ..refusals import Invalid
from ..tokens import changes
from ..web.auth import Permission
from ..web.operations import PathParameter, operation
from ..web.state import state

bp = Blueprint("api_tokens", __name__, url_prefix="/api/admin")

#: The section of the spec these operations belong to.
SECTION = "5 (API tokens for the SDKs, on the reference server's paths)"

#: The reference server's pattern of a type made through these paths, any case.
TYPE_PATTERN = "^([Cc][Ll][Ii][Ee][Nn][Tt]|[Bb][Aa][Cc][Kk][Ee][Nn][Dd]|[Ff][Rr][Oo][Nn][Tt][Ee][Nn][Dd])$"

TOKEN = {"token": PathParameter("The token's secret, as the create answered it.")}
PROJECT = {"projectId": PathParameter("Id of the project.")}


def _type() -> fields.String:
    return fields.String(
        required=True,
        validate=WholeMatch(
            TYPE_PATTERN, error="must be client, backend (the newer name of client) or frontend, in any case"
        ),
        metadata={
            "description": "client, backend (the same as client) or frontend; any case.",
            "example": "backend",
        },
    )


def _token_name() -> fields.String:
    return fields.String(
        required=True,
        validate=validate.Length(min=1, max=changes.MAX_NAME_LENGTH),
        metadata={"description": "A name for the token.", "example": "checkout-service"},
    )


def _environment() -> fields.String:
    return fields.String(
        validate=validate.Length(min=1, max=100),
        metadata={
            "description": 'The one environment the token reads; default "default".',
            "example": "development",
        },
    )


def _expires_at() -> Timestamp:
    return Timestamp(metadata={"description": "When the token stops working; absent: never."})


class CreateApiTokenSchema(Schema):
    """A new client or frontend token (the reference server's ``createApiTokenSchema``)."""

    tokenName = _token_name()
    type = _type()
    environment = _environment()
    project = fields.String(
        validate=validate.Length(min=1, max=100),
        metadata={"description": 'One project the token reads ("*": every project); not with projects.'},
    )
    projects = fields.List(
        fields.String(validate=validate.Length(min=1, max=100)),
        metadata={"description": 'The projects the token reads (["*"]: every project, the default).'},
    )
    expiresAt = _expires_at()

    @validates_schema
    def _one_of_project_and_projects(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "project" in data and "projects" in data:
            raise ValidationError("give project or projects, not both", "projects")


class CreateProjectApiTokenSchema(Schema):
    """A new client or frontend token of the path's project (the reference server's
    ``createProjectApiTokenSchema``)."""

    tokenName = _token_name()
    type = _type()
    environment = _environment()
    expiresAt = _expires_at()


class UpdateApiTokenSchema(Schema):
    """A token's new expiry (the reference server's ``updateApiTokenSchema``)."""

    expiresAt = Timestamp(required=True, metadata={"description": "When the token stops working."})


class ApiTokenSchema(Schema):
    """An API token (the reference server's ``apiTokenSchema``); ``secret`` only in the
    create's answer."""

    secret = fields.String(
        metadata={"description": "The token itself, answered once: only its digest is kept."}
    )
    tokenName = fields.String(required=True)
    type = fields.String(required=True, metadata={"description": "client, backend, frontend or admin."})
    environment = fields.String(metadata={"description": 'The environment it reads ("*": every one).'})
    project = fields.String(metadata={"description": 'Its projects joined by commas ("*": every project).'})
    projects = fields.List(fields.String(), required=True, metadata={"description": '["*"]: every project.'})
    expiresAt = Timestamp(allow_none=True)
    createdAt = Timestamp(required=True)
    seenAt = Timestamp(allow_none=True, metadata={"description": "When it was last used; null: never."})
    alias = fields.String(allow_none=True, metadata={"description": "Always null."})
    secure = fields.Boolean(
        allow_none=True, metadata={"description": "Always true: the secret cannot be shown again."}
    )


class ApiTokensSchema(Schema):
    """API tokens (the reference server's ``apiTokensSchema``)."""

    tokens = fields.List(fields.Nested(ApiTokenSchema), required=True)


def _limits():
    return state().settings.resource_limits


def _project_tokens_allowed(conn, caller, project_id: str, permission: str) -> None:
    """404 for an unknown project, then 403 without ``permission`` in it."""
    access.project(conn, project_id)
    access.require(conn, caller, project_id, permission)


@operation(
    bp,
    "/api-tokens",
    section=SECTION,
    summary="List API tokens",
    response=ApiTokensSchema(),
    permission=Permission.ADMIN,
)
def list_api_tokens(caller, conn):
    """Every admin, client and frontend token not deleted, oldest first, without its secret
    (flagadmin keeps only digests). Expired tokens are listed until they are deleted;
    personal access tokens are not API tokens."""
    return {"tokens": changes.list_api_tokens(conn)}


@operation(
    bp,
    "/api-tokens",
    method="POST",
    section=SECTION,
    summary="Create an API token",
    response=ApiTokenSchema(),
    body=CreateApiTokenSchema(),
    status=201,
    permission=Permission.ADMIN,
)
def create_api_token(caller, conn, body):
    """Create a client (``client`` or ``backend``) or frontend token for one environment and
    some or all projects. The answer holds the ``secret``, shown this once. 400 when the
    environment or a project does not exist (``Project=x does not exist``), for ``*`` as
    the environment, and past the ``apiTokens`` resource limit. Records ``api-token-created``
    (never with the secret)."""
    projects = [body["project"]] if "project" in body else body.get("projects")
    _, token = changes.create_api_token(
        conn,
        events.Actor.of_caller(caller),
        type=body["type"],
        name=body["tokenName"],
        environment=body.get("environment", "default"),
        projects=projects,
        expires_at=body.get("expiresAt"),
        limits=_limits(),
    )
    return token


@operation(
    bp,
    "/api-tokens/<token>",
    method="PUT",
    section=SECTION,
    summary="Change an API token's expiry",
    response=None,
    body=UpdateApiTokenSchema(),
    path=TOKEN,
    permission=Permission.ADMIN,
)
def update_api_token(caller, conn, token, body):
    """Give the token whose secret is in the path a new ``expiresAt``; it takes effect from
    the next request, in every process. Records ``api-token-updated``. A token that does not
    exist (or was deleted): 200 all the same, nothing changed, as the reference server."""
    changes.update_api_token(conn, events.Actor.of_caller(caller), token, body["expiresAt"])


@operation(
    bp,
    "/api-tokens/<token>",
    method="DELETE",
    section=SECTION,
    summary="Delete an API token",
    response=None,
    path=TOKEN,
    permission=Permission.ADMIN,
)
def delete_api_token(caller, conn, token):
    """Delete the token whose secret is in the path: it gets 401 from the next request, in
    every process. Records ``api-token-deleted``. A token that does not exist (or was deleted
    already): 200 all the same, nothing changed, as the reference server."""
    changes.delete_api_token(conn, events.Actor.of_caller(caller), token)


@operation(
    bp,
    "/projects/<projectId>/api-tokens",
    section=SECTION,
    summary="List a project's API tokens",
    response=ApiTokensSchema(),
    path=PROJECT,
    permission=Permission.in_project(names.READ_PROJECT_API_TOKEN),
)
def list_project_api_tokens(caller, conn, projectId):
    """The client and frontend tokens that name the project among their projects (not the
    tokens of every project), without their secrets."""
    _project_tokens_allowed(conn, caller, projectId, names.READ_PROJECT_API_TOKEN)
    return {"tokens": changes.list_api_tokens(conn, projectId)}


@operation(
    bp,
    "/projects/<projectId>/api-tokens",
    method="POST",
    section=SECTION,
    summary="Create a project API token",
    response=ApiTokenSchema(),
    body=CreateProjectApiTokenSchema(),
    path=PROJECT,
    status=201,
    permission=Permission.in_project(names.CREATE_PROJECT_API_TOKEN),
)
def create_project_api_token(caller, conn, projectId, body):
    """Create a client or frontend token that reads this project alone, in one environment;
    the answer holds the ``secret``, shown this once. 400 for an unknown environment and past
    the ``apiTokens`` resource limit. Records ``api-token-created``."""
    _project_tokens_allowed(conn, caller, projectId, names.CREATE_PROJECT_API_TOKEN)
    _, token = changes.create_api_token(
        conn,
        events.Actor.of_caller(caller),
        type=body["type"],
        name=body["tokenName"],
        environment=body.get("environment", "default"),
        projects=[projectId],
        expires_at=body.get("expiresAt"),
        limits=_limits(),
    )
    return token


@operation(
    bp,
    "/projects/<projectId>/api-tokens/<token>",
    method="DELETE",
    section=SECTION,
    summary="Delete a project API token",
    response=None,
    path={**PROJECT, **TOKEN},
    permission=Permission.in_project(names.DELETE_PROJECT_API_TOKEN),
    statuses=(400,),
)
def delete_project_api_token(caller, conn, projectId, token):
    """Delete a token of this project alone: it gets 401 from the next request. A token that
    does not exist: 200, nothing changed. A token that reads other projects too: 400, nothing
    changed (delete it at ``/api/admin/api-tokens/{token}``). Records ``api-token-deleted``."""
    _project_tokens_allowed(conn, caller, projectId, names.DELETE_PROJECT_API_TOKEN)
    deleted = changes.delete_api_token(conn, events.Actor.of_caller(caller), token, project=projectId)
    if deleted is False:
        raise Invalid(
            f'The token reads other projects than "{projectId}": a project deletes only its own tokens. '
            "Delete it at /api/admin/api-tokens/{token} with the ADMIN permission."
        )
