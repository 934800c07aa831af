"""The OpenFeature Remote Evaluation Protocol (OFREP v0.3.0) on its own paths: ``POST
/ofrep/v1/evaluate/flags/{key}`` (one flag) and ``POST /ofrep/v1/evaluate/flags`` (every flag,
with an ETag and 304), so that any OpenFeature provider for OFREP reads flagadmin's flags. The
values, reasons, variants and errors are :mod:`flagadmin.frontend.ofrep`'s; the evaluation is
yggdrasil-engine's (:mod:`flagadmin.frontend.engines`), as the Frontend API's.

Authentication: a frontend or a client API token in ``Authorization``, as ``Bearer <token>``
(what OFREP providers send with their ``headers``) or raw. A token of another kind is 403, no
token 401, repeated failures from one address 429 with ``Retry-After``, all in flagadmin's error
envelope (providers read these statuses, not their bodies). A failed evaluation answers the
protocol's body ``{key, errorCode, errorDetails}`` (bulk: ``{errorCode, errorDetails}``).
"""

from __future__ import annotations

from flask import Blueprint, current_app, request
from marshmallow import EXCLUDE, Schema, fields

from ..frontend import ofrep
from ..web.auth import Permission
from ..web.cache import Answer, AnswerCache
from ..web.database import versions
from ..web.jsonio import json_response
from ..web.operations import PathParameter, operation
from ..web.state import state

bp = Blueprint("ofrep", __name__, url_prefix="/ofrep/v1")

SECTION = "OFREP (the OpenFeature Remote Evaluation Protocol, v0.3.0)"

#: Where an app keeps its cache of bulk answers (``app.extensions``), and its byte bound.
CACHE = "flagadmin.ofrep_answers"
CACHE_BYTES = 16 * 1024 * 1024


@bp.record
def _make_cache(setup) -> None:
    app = setup.app
    bound = dict(app.config.get("ANSWER_CACHE_BYTES") or {}).get("ofrep_answers", CACHE_BYTES)
    app.extensions.setdefault(
        CACHE, AnswerCache("ofrep_answers", bound, enabled=bool(app.config.get("ANSWER_CACHE", True)))
    )


class EvaluationRequestSchema(Schema):
    """OFREP's ``evaluationRequest``: ``{"context": {"targetingKey": ..., attributes...}}``
    (other members are ignored, as the protocol lets a request carry them)."""

    class Meta:
        unknown = EXCLUDE

    context = fields.Dict(
        allow_none=True,
        metadata={
            "description": "targetingKey (the Unleash userId) and attributes (null or absent: none): "
            "appName, environment, "
            "sessionId, remoteAddress, currentTime stay top level, any other is a property. A value "
            "is a string, a number or a boolean, null as absent (an object or a list is INVALID_CONTEXT).",
            "additionalProperties": {
                "anyOf": [{"type": "string", "nullable": True}, {"type": "number"}, {"type": "boolean"}]
            },
        },
    )


class EvaluationSuccessSchema(Schema):
    """OFREP's ``serverEvaluationSuccess``."""

    key = fields.String(required=True)
    value = fields.Raw(metadata={"description": "Absent: use the code's default."})
    reason = fields.String(
        required=True, metadata={"enum": ["STATIC", "TARGETING_MATCH", "SPLIT", "DISABLED"]}
    )
    variant = fields.String(required=True)
    metadata = fields.Dict()


class EvaluationFailureSchema(Schema):
    """OFREP's ``evaluationFailure``: why one flag could not be evaluated."""

    key = fields.String(required=True)
    errorCode = fields.String(
        required=True,
        metadata={
            "enum": ["FLAG_NOT_FOUND", "PARSE_ERROR", "TARGETING_KEY_MISSING", "INVALID_CONTEXT", "GENERAL"]
        },
    )
    errorDetails = fields.String(metadata={"description": "What went wrong and what to do."})


class BulkEvaluationFailureSchema(Schema):
    """OFREP's ``bulkEvaluationFailure``: why no flag could be evaluated."""

    errorCode = fields.String(required=True, metadata={"enum": ["PARSE_ERROR", "INVALID_CONTEXT", "GENERAL"]})
    errorDetails = fields.String(metadata={"description": "What went wrong and what to do."})


class BulkEvaluationSchema(Schema):
    """OFREP's ``bulkEvaluationSuccess``: every flag's success or failure item."""

    flags = fields.List(fields.Dict(), required=True)


def _failure(error: ofrep.OfrepError):
    return json_response(error.body(), error.status)


def _evaluated(conn, caller):
    return state().engines.for_caller(conn, caller, revision=versions().rules)


@operation(
    bp,
    "/evaluate/flags/<key>",
    method="POST",
    section=SECTION,
    summary="Evaluate one flag for an OpenFeature context",
    response=EvaluationSuccessSchema(),
    path={"key": PathParameter("Name of the flag.")},
    permission=Permission.CLIENT_OR_FRONTEND,
    tag="ofrep",
)
def evaluate_flag(caller, conn, key):
    """The flag's value for the context, with its reason, variant and metadata (project, type,
    impressionData). A flag with a payload answers the payload typed as it says, one with
    variants and no payload the variant's name, one without variants whether it is on; one
    with variants that is off answers no value (the code's default). Errors in OFREP's body:
    404 FLAG_NOT_FOUND, 400 PARSE_ERROR (no JSON object), INVALID_CONTEXT (a context value an
    Unleash context cannot hold) or TARGETING_KEY_MISSING (a share rollout without a
    targetingKey)."""
    try:
        context = ofrep.request_context(request.get_data(), request.remote_addr, key)
        # the body is built in the schema's shape already: sent as it is, not dumped again
        return json_response(ofrep.evaluate_one(_evaluated(conn, caller), key, context))
    except ofrep.OfrepError as error:
        return _failure(error)


evaluate_flag.operation.body_schema = EvaluationRequestSchema()
evaluate_flag.operation.body_required = False
evaluate_flag.operation.error_schemas = {
    400: (
        "PARSE_ERROR, INVALID_CONTEXT or TARGETING_KEY_MISSING, in OFREP's body.",
        EvaluationFailureSchema(),
    ),
    404: (
        "FLAG_NOT_FOUND: the token reads no live flag of that name, in OFREP's body.",
        EvaluationFailureSchema(),
    ),
}


@operation(
    bp,
    "/evaluate/flags",
    method="POST",
    section=SECTION,
    summary="Evaluate every flag for an OpenFeature context",
    response=BulkEvaluationSchema(),
    permission=Permission.CLIENT_OR_FRONTEND,
    conditional=True,
    tag="ofrep",
)
def evaluate_flags(caller, conn):
    """Every live flag the token reads, evaluated for the context, in name order, as the
    single evaluation answers each (a share rollout without a targetingKey is its
    TARGETING_KEY_MISSING item). The ETag is a digest of the answer: If-None-Match with it is
    answered 304. A body that is no JSON object is 400 PARSE_ERROR, a bad context 400
    INVALID_CONTEXT."""
    try:
        context = ofrep.request_context(request.get_data(), request.remote_addr)
    except ofrep.OfrepError as error:
        return _failure(error)
    evaluated = _evaluated(conn, caller)
    cache: AnswerCache = current_app.extensions[CACHE]
    cache_key = (evaluated.environment, evaluated.projects, evaluated.etag, context.key)
    kept = cache.get(cache_key)
    if kept is None:
        made = ofrep.evaluate_all(evaluated, context)
        kept = cache.put(cache_key, Answer(made.body, made.etag))
    return kept


evaluate_flags.operation.body_schema = EvaluationRequestSchema()
evaluate_flags.operation.body_required = False
evaluate_flags.operation.error_schemas = {
    400: ("PARSE_ERROR or INVALID_CONTEXT, in OFREP's body.", BulkEvaluationFailureSchema())
}
