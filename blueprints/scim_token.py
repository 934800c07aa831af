"""Spec 4.5: ``POST /api/admin/scim-settings/generate-new-token``."""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields

from ..store import scim_tokens
from ..web.auth import Permission
from ..web.operations import operation

bp = Blueprint("scim_token", __name__, url_prefix="/api/admin")


class ScimTokenSchema(Schema):
    """A new SCIM token (spec 2.7); it is shown once and revoked by the next one."""

    token = fields.String(required=True)


@operation(
    bp,
    "/scim-settings/generate-new-token",
    method="POST",
    section="4.5",
    summary="Generate a new SCIM token",
    response=ScimTokenSchema(),
    permission=Permission.ADMIN,
    response_headers={"Cache-Control": "no-store"},
)
def generate_new_token(caller, conn):
    """A new SCIM token; every earlier one stops working at once.

    The token is stored only as a digest, so this answer is the only time it is shown.
    """
    return {"token": scim_tokens.generate(conn)}
