"""The OpenAPI document at ``/docs/openapi.json`` (no authentication)."""

from __future__ import annotations

import orjson
from flask import Blueprint, Response, current_app

from ..web.cache import Answer
from ..web.openapi import build_document
from ..web.responses import answer_response
from ..web.state import state

bp = Blueprint("docs", __name__, url_prefix="/docs")


@bp.get("/openapi.json")
def openapi_document() -> Response:
    """The OpenAPI 3 document of the admin API, built once per application from its views."""
    app_state = state()
    app = current_app._get_current_object()
    answer = app_state.caches.fixed_answers.get_or_build(
        "openapi", lambda: Answer(orjson.dumps(build_document(app, app_state.base_uri_path)))
    )
    return answer_response(answer)
