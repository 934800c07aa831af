"""The Frontend API on the reference server's paths (Unleash 8.2.0), which browser and mobile
SDKs call (npm ``unleash-proxy-client`` and the React and Vue SDKs on it): ``GET
/api/frontend`` with the context in the query string, ``POST /api/frontend`` with it in the
body, ``POST /api/frontend/client/metrics`` and ``/register``; frontend tokens only.

Evaluation is yggdrasil-engine's (:mod:`flagadmin.frontend.engines`), on the state the Client
API serves for the token's environment and projects; the context is read as
:mod:`flagadmin.frontend.context` says. Answers are kept in the ``frontend_answers`` cache
(bytes, weak ETag, gzip made once) per token view (environment, projects), content digest of
the state the engine was fed, and context as sent: a GET's query string and the caller's
address (the context is not even parsed on a hit), a POST's normalised context. A browser
polling with the same context costs a token check, the rules revision's read and a lookup, and
``If-None-Match`` with the kept ETag is answered 304 without evaluating anything.
``Cache-Control: no-cache``, as the reference's.

CORS for every path under ``/api/frontend`` (answers, errors, preflights), from the origins in
force (:mod:`flagadmin.frontend.cors`), read from the database on each request that carries an
``Origin``: a preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) is
answered 204 before any token check, as the reference's, with ``Access-Control-Allow-Origin``,
``-Allow-Methods``, ``-Allow-Headers`` echoing the request's, ``-Expose-Headers: ETag`` and
``-Max-Age: 86400``; an answer to an allowed origin carries ``Access-Control-Allow-Origin`` and
``-Expose-Headers: ETag``; a refused origin gets no CORS header. flask-cors (which serves the
admin API's ``FLAGADMIN_CORS_ORIGINS``) is not used here: it takes its origins once, at start,
where these change through the API and from other processes.

``/api/frontend/client/features``, ``/health`` and ``/internal-backstage/prometheus`` answer 405
``NotImplementedError``, as the reference's; ``/api/frontend/features/{name}`` does not exist
(404).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from flask import Blueprint, Flask, Response, current_app, request
from marshmallow import EXCLUDE, Schema, fields

from ..frontend import api as frontend_api
from ..frontend import context as frontend_context
from ..frontend import cors
from ..store import StoreError
from ..web import telemetry
from ..web.auth import Permission
from ..web.cache import Answer, AnswerCache
from ..web.database import connection, versions
from ..web.errors import APIError
from ..web.headers import NegotiatedResponse, is_preflight
from ..web.jsonio import JSON_MIMETYPE
from ..web.operations import operation
from ..web.requests import query_pairs
from ..web.responses import GZIP_MIN_BYTES, accepts_gzip, if_none_match
from ..web.state import state
from .client_metrics import MAX_BODY, ClientApplicationSchema, ClientMetricsSchema

log = logging.getLogger("flagadmin.frontend")

PREFIX = "/api/frontend"

bp = Blueprint("frontend_api", __name__, url_prefix=PREFIX)

SECTION = "Frontend API (the reference server's /api/frontend: flags evaluated for a context)"

#: Where an app keeps its cache of Frontend API answers (``app.extensions``).
CACHE = "flagadmin.frontend_answers"

#: Default byte bound of that cache (``ANSWER_CACHE_BYTES["frontend_answers"]`` overrides it).
#: An answer is about 140 bytes a flag on for the context: at 1,000 flags of which 300 are on,
#: some 40 KB, so 32 MiB keeps about 800 such contexts (browsers polling), and some 10,000
#: answers of 20 flags on; docs/architecture.md gives the figure that justifies the cache.
CACHE_BYTES = 32 * 1024 * 1024

#: ``Cache-Control`` of the answers, as the reference's.
NO_CACHE = "no-cache"

#: What a preflight allows (the reference's CORS middleware's defaults).
ALLOW_METHODS = "GET,HEAD,PUT,PATCH,POST,DELETE"
MAX_AGE = "86400"
EXPOSE_HEADERS = "ETag"


class NotImplementedByFrontendApi(APIError):
    """405: a path of the reference's Frontend API that it answers as not implemented."""

    status, name = 405, "NotImplementedError"


@bp.record
def _make_cache(setup) -> None:
    """Give the app its cache of Frontend API answers (once per app)."""
    app: Flask = setup.app
    bound = dict(app.config.get("ANSWER_CACHE_BYTES") or {}).get("frontend_answers", CACHE_BYTES)
    app.extensions.setdefault(
        CACHE, AnswerCache("frontend_answers", bound, enabled=bool(app.config.get("ANSWER_CACHE", True)))
    )


# --- schemas ------------------------------------------------------------------------------------


class FrontendContextQuerySchema(Schema):
    """The context of ``GET /api/frontend`` (documentation: the view reads the query itself).
    Any other parameter is a property; ``properties[name]=value`` names one explicitly."""

    appName = fields.String()
    environment = fields.String(
        metadata={"description": "A context value only: the token names the environment."}
    )
    userId = fields.String()
    sessionId = fields.String(metadata={"description": "Absent: one derived from the rest of the context."})
    remoteAddress = fields.String(metadata={"description": "Absent: the caller's address."})
    currentTime = fields.String(metadata={"description": "RFC 3339 date-time the rules are evaluated at."})


class FrontendFeaturesPostSchema(Schema):
    """The reference's ``frontendApiFeaturesPostSchema``: ``{"context": {...}}``."""

    class Meta:
        unknown = EXCLUDE

    context = fields.Raw(
        allow_none=True,
        metadata={
            "type": "object",
            "description": "appName, environment, userId, sessionId, remoteAddress, currentTime, "
            "properties {name: value}; any other key is a property.",
        },
    )


class FrontendVariantSchema(Schema):
    """A flag's variant for the context."""

    name = fields.String(required=True)
    enabled = fields.Boolean(required=True)
    payload = fields.Dict(metadata={"description": "{type, value}: only when the variant has one."})
    feature_enabled = fields.Boolean()
    featureEnabled = fields.Boolean(metadata={"deprecated": True})


class FrontendToggleSchema(Schema):
    """A flag on for the context (the reference's ``frontendApiFeatureSchema``)."""

    name = fields.String(required=True)
    enabled = fields.Boolean(required=True, metadata={"description": "Always true."})
    variant = fields.Nested(FrontendVariantSchema)
    impressionData = fields.Boolean(required=True)


class FrontendFeaturesSchema(Schema):
    """The flags on for the context (the reference's ``frontendApiFeaturesSchema``)."""

    toggles = fields.List(fields.Nested(FrontendToggleSchema), required=True)


# --- answering ----------------------------------------------------------------------------------


@dataclass
class KeptAnswer(Answer):
    """An :class:`Answer` kept with its ETag header's value made once (``W/"<etag>"``), whose
    size counts the bytes of its key too (a query string may be far longer than its answer)."""

    header: str = ""
    key_bytes: int = 0

    @property
    def size(self) -> int:
        return len(self.body) + len(self.body) // 8 + self.key_bytes


def _answer(caller, conn, request_key: tuple, key_bytes: int, context_of) -> KeptAnswer:
    """The answer to this request under the caller's token: kept by (the token's view, the
    state's digest, ``request_key``), or evaluated for ``context_of()`` (the request's
    :class:`~flagadmin.frontend.context.Context`, read only then) and kept. ``request_key``
    names the request's context as sent (with the caller's address, which fills a missing
    ``remoteAddress``): the same request always gets the same answer while the state stands."""
    evaluated = state().engines.for_caller(conn, caller, revision=versions().rules)
    cache: AnswerCache = current_app.extensions[CACHE]
    key = (evaluated.environment, evaluated.projects, evaluated.etag, *request_key)
    kept = cache.get(key)
    if kept is not None:
        return kept
    made = frontend_api.answer(evaluated, context_of())
    return cache.put(key, KeptAnswer(made.body, made.etag, header=f'W/"{made.etag}"', key_bytes=key_bytes))


def _respond(answer: KeptAnswer) -> NegotiatedResponse:
    """A kept answer under its weak ETag: 304 when ``If-None-Match`` names it (or its gzip
    variant's, ``W/"<etag>:gzip"``), else its gzip made once (clients that take gzip, bodies
    of at least 1 KiB) or its bytes; ``Cache-Control: no-cache``, as the reference's."""
    sent = request.environ.get("HTTP_IF_NONE_MATCH")
    if sent is not None:
        matched = answer.header if sent == answer.header else if_none_match(answer.etag)
        if matched is not None:
            response = NegotiatedResponse(status=304)
            response.headers["ETag"] = matched if matched.startswith("W/") else f'W/"{matched}"'
            response.headers["Cache-Control"] = NO_CACHE
            return response
    if answer.length >= GZIP_MIN_BYTES and accepts_gzip():
        response = NegotiatedResponse(answer.gzipped(), mimetype=JSON_MIMETYPE)
        response.headers["Content-Encoding"] = "gzip"
        response.headers["ETag"] = f'W/"{answer.etag}:gzip"'
    else:
        response = NegotiatedResponse(answer.body, mimetype=JSON_MIMETYPE)
        response.headers["ETag"] = answer.header
    response.headers["Cache-Control"] = NO_CACHE
    return response


@operation(
    bp,
    "",
    section=SECTION,
    summary="Get the flags on for a context (context in the query string)",
    response=FrontendFeaturesSchema(),
    permission=Permission.FRONTEND,
    tag="frontend",
)
def get_frontend_features(caller, conn):
    """The flags of the token's environment and projects that are on for the context, each
    with its variant and impressionData, evaluated by yggdrasil-engine. The context:
    appName, environment, userId, sessionId, remoteAddress, currentTime, properties[name]=value
    (any other parameter is a property too). A missing remoteAddress is the caller's address; a
    missing sessionId one derived from the rest of the context, so that the same context gets
    the same answer; currentTime, when given, is the time date constraints compare with. The
    weak ETag is a digest of the answer: If-None-Match with it is answered 304. A change is in
    the next request's answer, from any process. A parameter given twice, a currentTime that
    is no date-time or a context past its limits is a 400."""
    query, client_ip = request.query_string, request.remote_addr
    return _respond(
        _answer(
            caller,
            conn,
            ("GET", query, client_ip),
            len(query),
            lambda: frontend_context.from_query(query_pairs(), client_ip),
        )
    )


# The document lists the context's fields; the view reads the query itself (properties[name]
# and any other name are properties), so they are declared after the operation is made.
get_frontend_features.operation.query_schema = FrontendContextQuerySchema()


@operation(
    bp,
    "",
    method="POST",
    section=SECTION,
    summary="Get the flags on for a context (context in the body)",
    response=FrontendFeaturesSchema(),
    body=FrontendFeaturesPostSchema(),
    permission=Permission.FRONTEND,
    tag="frontend",
)
def post_frontend_features(caller, conn, body):
    """As GET /api/frontend, with the context in the body: {"context": {...}} (the browser
    SDK's usePOSTrequests). Numbers and booleans are taken as their JSON text; null is
    absent; an object or a list other than properties is a 400."""
    context = frontend_context.from_mapping(body.get("context"), request.remote_addr)
    return _respond(_answer(caller, conn, ("POST", context.key), len(repr(context.key)), lambda: context))


# Both answer with their own Cache-Control (no-cache, as the reference's), so their operations
# are declared without conditional=True (which sets "private, no-cache"); the OpenAPI document
# still shows their If-None-Match and 304, from the flag set here.
get_frontend_features.operation.conditional = True
post_frontend_features.operation.conditional = True


@operation(
    bp,
    "/client/metrics",
    method="POST",
    section=SECTION,
    summary="Report how often a browser SDK evaluated flags",
    response=None,
    body=ClientMetricsSchema(),
    permission=Permission.FRONTEND,
    tag="frontend",
)
def frontend_metrics(caller, conn, body):
    """A browser SDK's counts for one window (the reference's clientMetricsSchema), recorded as
    a backend SDK's are: hourly counts per flag, the lastSeenAt of each flag counted and of its
    environment (the token's), the application and its instance (SDK type frontend), all
    written within FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL seconds. 200, as the reference."""
    state().client_metrics.record_metrics(
        caller, body, request.remote_addr, "frontend", sdk_version=request.headers.get("unleash-sdk") or None
    )
    telemetry.sdk_metrics_post("frontend")


frontend_metrics.max_content_length = MAX_BODY


@operation(
    bp,
    "/client/register",
    method="POST",
    section=SECTION,
    summary="Register a browser SDK",
    response=None,
    body=ClientApplicationSchema(),
    permission=Permission.FRONTEND,
    tag="frontend",
)
def frontend_register(caller, conn, body):
    """A browser SDK says it started (the reference's frontendApiClientSchema): its application
    and instance (SDK type frontend) are recorded as a backend SDK's registration is, where the
    reference records nothing. 200, as the reference."""
    state().client_metrics.record_registration(caller, body, request.remote_addr, "frontend")
    telemetry.sdk_registration("frontend")


frontend_register.max_content_length = MAX_BODY


def _not_implemented() -> Response:
    raise NotImplementedByFrontendApi("The frontend API does not support this endpoint.")


for _path, _name in (
    ("/client/features", "not_implemented_client_features"),
    ("/health", "not_implemented_health"),
    ("/internal-backstage/prometheus", "not_implemented_prometheus"),
):
    bp.add_url_rule(_path, endpoint=_name, view_func=_not_implemented, methods=["GET"])


# --- CORS ---------------------------------------------------------------------------------------


def _under_prefix(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def _origins() -> tuple[str, ...] | None:
    """The origins in force, or None when the database cannot be read (no CORS then)."""
    try:
        return cors.current_origins(connection(), state().settings.frontend_api_origins)
    except StoreError:
        log.warning("CORS origins of the Frontend API unreadable; answering without CORS headers")
        return None


def _allowed(origin: str) -> tuple[str | None, bool]:
    """``(Access-Control-Allow-Origin or None, whether the answer varies by Origin)``."""
    origins = _origins()
    if origins is None:
        return None, True
    allowed = cors.allowed_origin(origins, origin)
    return allowed, allowed != "*"


@bp.before_app_request
def _preflight() -> Response | None:
    """Answer a CORS preflight to any path under /api/frontend, before any token check."""
    if request.method != "OPTIONS" or not _under_prefix(request.path) or not is_preflight():
        return None
    response = Response(status=204)
    del response.headers["Content-Type"]
    allowed, varies = _allowed(request.headers["Origin"])
    if varies:
        response.vary.add("Origin")
    if allowed is None:
        return response
    headers = response.headers
    headers["Access-Control-Allow-Origin"] = allowed
    headers["Access-Control-Allow-Methods"] = ALLOW_METHODS
    asked = request.headers.get("Access-Control-Request-Headers")
    if asked:
        headers["Access-Control-Allow-Headers"] = asked
        response.vary.add("Access-Control-Request-Headers")
    headers["Access-Control-Max-Age"] = MAX_AGE
    headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
    return response


@bp.after_app_request
def _cors(response: Response) -> Response:
    """CORS headers on every answer under /api/frontend (errors included) to a request with an
    ``Origin`` (a preflight has them already)."""
    environ = request.environ
    origin = environ.get("HTTP_ORIGIN")
    if origin is None or not _under_prefix(environ.get("PATH_INFO", "")):
        return response
    if environ.get("REQUEST_METHOD") == "OPTIONS" and is_preflight():
        return response
    allowed, varies = _allowed(origin)
    if varies:
        response.vary.add("Origin")
    if allowed is not None:
        response.headers["Access-Control-Allow-Origin"] = allowed
        response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
    return response
