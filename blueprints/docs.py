"""The OpenAPI document at ``/docs/openapi.json`` (no authentication)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app

from ..jsonio import json_response
from ..openapi import build_document

bp = Blueprint("docs", __name__, url_prefix="/docs")


@bp.get("/openapi.json")
def openapi_document() -> Response:
    """The OpenAPI 3 document of the admin API, built once per application."""
    document = current_app.extensions.get("flagadmin.openapi")
    if document is None:
        document = build_document(current_app.config["BASE_URI_PATH"])
        current_app.extensions["flagadmin.openapi"] = document
    return json_response(document)
