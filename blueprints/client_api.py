"""The Client API's flag configuration: ``GET /api/client/features`` and
``GET /api/client/features/{featureName}``, which backend SDKs poll (the reference server's
Client API; registrations and metrics are in :mod:`flagadmin.blueprints.client_metrics`).

An answer is kept per view: the token's environment and projects, the query's filters and the
SDK's flavour (segments by id, or inlined for SDKs older than client specification 4.2.0).
Each request reads the rules revision (``Versions.rules``, one statement with the other
counters, from the database: a write of any process is seen by the next request); while it
stands, the kept answer is sent as it is (its bytes, its gzip made once, or 304 when
``If-None-Match`` names its ETag), with nothing built. Once it moves, the view is read again
(one statement) on its next request; if the answer's content is unchanged (a write elsewhere),
the kept answer, gzip and all, stays. The ETag is weak, a digest of the flags, segments and
query (:mod:`flagadmin.clients.features`): it changes exactly when what the token sees changes.
"""

from __future__ import annotations

import functools

from flask import Blueprint, Flask, current_app, request
from marshmallow import Schema, fields, validate

from ..clients import features as client_features
from ..refusals import NotFound
from ..web.auth import Permission
from ..web.cache import Answer, AnswerCache
from ..web.database import versions
from ..web.headers import NegotiatedResponse
from ..web.jsonio import JSON_MIMETYPE, json_response
from ..web.operations import PathParameter, operation
from ..web.requests import query_pairs
from ..web.responses import GZIP_MIN_BYTES, accepts_gzip, if_none_match

bp = Blueprint("client_api", __name__, url_prefix="/api/client")

SECTION = "Client API (the reference server's /api/client: the flag configuration SDKs poll)"

#: Where an app keeps its cache of client features answers (``app.extensions``).
CACHE = "flagadmin.client_features"

#: Default byte bound of that cache (``ANSWER_CACHE_BYTES["client_features"]`` overrides it):
#: an answer of 1,000 flags of realistic rules is about 440 KB (and its gzip about a tenth), so
#: 64 MiB keeps about a hundred views (tokens of distinct environments and projects, queries).
CACHE_BYTES = 64 * 1024 * 1024

#: The environment of a token that names none (the reference server's default; client tokens
#: always name one).
DEFAULT_ENVIRONMENT = "default"

#: The query of a request without filters (what SDKs send).
NO_FILTERS = client_features.ClientQuery()


@bp.record
def _make_cache(setup) -> None:
    """Give the app its cache of client features answers (once per app)."""
    app: Flask = setup.app
    bound = dict(app.config.get("ANSWER_CACHE_BYTES") or {}).get("client_features", CACHE_BYTES)
    app.extensions.setdefault(
        CACHE, AnswerCache("client_features", bound, enabled=bool(app.config.get("ANSWER_CACHE", True)))
    )


# --- the answer's schemas (the OpenAPI document; the bodies are built in clients.features) ----


class ConstraintSchema(Schema):
    """A constraint, as stored (the reference's ``constraintSchema``)."""

    contextName = fields.String(required=True)
    operator = fields.String(required=True)
    values = fields.List(fields.String())
    value = fields.String()
    inverted = fields.Boolean()
    caseInsensitive = fields.Boolean()


class PayloadSchema(Schema):
    """A variant's payload."""

    type = fields.String(required=True, validate=validate.OneOf(["json", "csv", "string", "number"]))
    value = fields.String(required=True)


class OverrideSchema(Schema):
    """A flag variant's override: the context values that always get it."""

    contextName = fields.String(required=True)
    values = fields.List(fields.String(), required=True)


class StrategyVariantSchema(Schema):
    """A strategy's variant (the reference's ``strategyVariantSchema``)."""

    name = fields.String(required=True)
    weight = fields.Integer(required=True)
    weightType = fields.String(required=True, validate=validate.OneOf(["variable", "fix"]))
    stickiness = fields.String(required=True)
    payload = fields.Nested(PayloadSchema)


class VariantSchema(StrategyVariantSchema):
    """A flag's variant in the token's environment (the reference's ``variantSchema``)."""

    overrides = fields.List(fields.Nested(OverrideSchema))


class ClientStrategySchema(Schema):
    """An enabled strategy of the token's environment, in order (no id, no sort order)."""

    name = fields.String(required=True)
    constraints = fields.List(fields.Nested(ConstraintSchema), required=True)
    parameters = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    variants = fields.List(fields.Nested(StrategyVariantSchema), required=True)
    segments = fields.List(
        fields.Integer(),
        metadata={"description": "Ids of the segments it uses (client specification 4.2.0 or newer)."},
    )


class DependencySchema(Schema):
    """The flag's parent: ``enabled`` false means the parent must be off (no variants then)."""

    feature = fields.String(required=True)
    enabled = fields.Boolean(required=True)
    variants = fields.List(fields.String())


class ClientFeatureSchema(Schema):
    """A live flag as backend SDKs read it (the reference's ``clientFeatureSchema``)."""

    name = fields.String(required=True)
    type = fields.String(required=True)
    enabled = fields.Boolean(required=True, metadata={"description": "The token environment's switch."})
    project = fields.String(required=True)
    stale = fields.Boolean(required=True)
    strategies = fields.List(fields.Nested(ClientStrategySchema), required=True)
    variants = fields.List(fields.Nested(VariantSchema), required=True)
    description = fields.String(required=True, allow_none=True)
    impressionData = fields.Boolean(required=True)
    dependencies = fields.List(
        fields.Nested(DependencySchema), metadata={"description": "Only with a parent."}
    )


class ClientSegmentSchema(Schema):
    """A segment the answer's strategies use."""

    id = fields.Integer(required=True)
    name = fields.String(required=True)
    constraints = fields.List(fields.Nested(ConstraintSchema), required=True)


class ClientQueryEchoSchema(Schema):
    """The query the answer was built for (the reference's ``clientFeaturesQuerySchema``)."""

    tag = fields.List(fields.List(fields.String()), metadata={"description": "[[type, value], ...]"})
    project = fields.List(fields.String(), metadata={"description": "Absent: every project."})
    namePrefix = fields.String()
    environment = fields.String(required=True)
    inlineSegmentConstraints = fields.Boolean(required=True)


class ClientMetaSchema(Schema):
    """What the answer was built from."""

    revisionId = fields.Integer(required=True, metadata={"description": "The rules revision it was read at."})
    etag = fields.String(required=True, metadata={"description": "Its ETag, as the header sends it."})
    queryHash = fields.String(required=True)


class ClientFeaturesSchema(Schema):
    """The flag configuration of the token's environment and projects (format version 2)."""

    version = fields.Integer(required=True)
    features = fields.List(fields.Nested(ClientFeatureSchema), required=True)
    segments = fields.List(
        fields.Nested(ClientSegmentSchema),
        metadata={"description": "Only for client specification 4.2.0 or newer (else inlined)."},
    )
    query = fields.Nested(ClientQueryEchoSchema, required=True)
    meta = fields.Nested(ClientMetaSchema, required=True)


class ClientFeaturesQuerySchema(Schema):
    """The filters of ``GET /api/client/features`` (documentation: ``project`` and ``tag``
    repeat, so :func:`flagadmin.clients.features.parse_query` reads them, with these rules)."""

    project = fields.List(
        fields.String(validate=validate.Length(min=1, max=client_features.MAX_PARAMETER_LENGTH)),
        validate=validate.Length(max=client_features.MAX_REPEATS),
        metadata={"description": "Repeatable; narrowed to the token's projects."},
    )
    namePrefix = fields.String(
        validate=validate.Length(max=client_features.MAX_PARAMETER_LENGTH),
        metadata={"description": "Flags whose name starts with it (case and all)."},
    )
    tag = fields.List(
        fields.String(
            validate=[
                validate.Length(min=3, max=client_features.MAX_PARAMETER_LENGTH),
                validate.Regexp(r"^[^:]+:.+$"),
            ]
        ),
        validate=validate.Length(max=client_features.MAX_REPEATS),
        metadata={"description": "type:value, repeatable: flags with any of them."},
    )


# --- answering --------------------------------------------------------------------------------


def _kept_answer(caller, conn, query: client_features.ClientQuery, inline: bool) -> Answer:
    """The answer of this view at the current rules revision: kept, or built and kept.

    The cache holds each view's latest :class:`Answer`, its ``version`` the rules revision it
    holds at. At a newer revision the view is read again; if its ETag did not change (the
    write was elsewhere), the kept answer stays, its ``version`` moved on, so its gzip is not
    made again.
    """
    environment = caller.environment or DEFAULT_ENVIRONMENT
    key = (environment, caller.projects, query, inline)
    cache: AnswerCache = current_app.extensions[CACHE]
    revision = versions().rules
    kept = cache.get(key)
    if kept is not None and kept.version == revision:
        return kept
    state = client_features.client_state(
        conn, environment, caller.projects, query=query, inline_segments=inline
    )
    if kept is not None and kept.etag == state.etag:
        kept.version = state.revision
        return kept
    return cache.put(key, Answer(state.payload, state.etag, version=state.revision))


def _takes_gzip(environ: dict) -> bool:
    """Whether the request's ``Accept-Encoding`` takes gzip: read from the raw header when it
    names gzip with no quality anywhere (what SDKs send), else parsed (:func:`accepts_gzip`)."""
    sent = environ.get("HTTP_ACCEPT_ENCODING", "")
    if "gzip" not in sent:
        return False
    return "q=" not in sent or accepts_gzip()


def _respond(answer: Answer) -> NegotiatedResponse:
    """Send a kept answer under its weak ETag: 304 when ``If-None-Match`` names it (or its gzip
    variant's, ``W/"<etag>:gzip"``), else its gzip made once (clients that take gzip, bodies of
    at least 1 KiB) or its bytes. As :func:`flagadmin.web.responses.answer_response`, with the
    ETag weak (two answers of the same view may differ in ``meta.revisionId`` alone), and with
    the headers SDKs send compared as they come before any parsing: this is the request every
    SDK makes every few seconds."""
    environ = request.environ
    etag = answer.etag
    sent = environ.get("HTTP_IF_NONE_MATCH")
    if sent:
        plain, gzipped = f'W/"{etag}"', f'W/"{etag}:gzip"'
        matched = sent if sent in (plain, gzipped) else None
        if matched is None:
            found = if_none_match(etag)
            matched = None if found is None else f'W/"{found}"'
        if matched is not None:
            return NegotiatedResponse(status=304, headers={"ETag": matched})
    if answer.length >= GZIP_MIN_BYTES and _takes_gzip(environ):
        headers = {"Content-Encoding": "gzip", "ETag": f'W/"{etag}:gzip"'}
        return NegotiatedResponse(answer.gzipped(), headers=headers, content_type=JSON_MIMETYPE)
    return NegotiatedResponse(answer.body, headers={"ETag": f'W/"{etag}"'}, content_type=JSON_MIMETYPE)


@functools.lru_cache(maxsize=256)
def _inlines(spec: str | None) -> bool:
    """:func:`_flavour` of one header value, answered once (SDKs send a handful of versions;
    a header that is not a version raises, which nothing keeps)."""
    return not client_features.segments_supported(spec)


def _flavour() -> bool:
    """True when this SDK needs segment constraints inlined (no ``Unleash-Client-Spec`` of at
    least 4.2.0). :raise Invalid: the header is not a semantic version (400)."""
    return _inlines(request.environ.get("HTTP_UNLEASH_CLIENT_SPEC"))


@operation(
    bp,
    "/features",
    section=SECTION,
    summary="Get the flag configuration of the token's environment",
    response=ClientFeaturesSchema(),
    permission=Permission.CLIENT,
    conditional=True,
    tag="client",
)
def get_client_features(caller, conn):
    """The live flags of the token's projects with their rules in the token's environment:
    what backend SDKs poll. Archived flags and disabled strategies are left out. Filters:
    ``project`` (repeatable; narrowed to the token's projects), ``namePrefix``, ``tag``
    (``type:value``, repeatable: flags with any of them). SDKs that send
    ``Unleash-Client-Spec`` 4.2.0 or newer get ``segments`` and each strategy's segment ids;
    others get segment constraints inlined into strategies (``query.inlineSegmentConstraints``);
    a header that is not a semantic version is a 400. The weak ETag changes exactly when this
    answer's flags, segments or query change; ``If-None-Match`` with it is answered 304 with
    no body. A change is in the next request's answer, from any process.
    """
    inline = _flavour()
    query = client_features.parse_query(query_pairs()) if request.query_string else NO_FILTERS
    return _respond(_kept_answer(caller, conn, query, inline))


@operation(
    bp,
    "/features/<featureName>",
    section=SECTION,
    summary="Get one flag's configuration in the token's environment",
    response=ClientFeatureSchema(),
    permission=Permission.CLIENT,
    path={"featureName": PathParameter("Name of a live flag of the token's projects.")},
    tag="client",
)
def get_client_feature(caller, conn, featureName):
    """One live flag of the token's projects as ``GET /api/client/features`` shows it (same
    spec header rules), read afresh (SDKs do not call it); 404 for a flag that is unknown,
    archived or of another project."""
    inline = _flavour()
    feature = None
    if len(featureName) <= client_features.MAX_PARAMETER_LENGTH and "\x00" not in featureName:
        environment = caller.environment or DEFAULT_ENVIRONMENT
        query = client_features.ClientQuery(name_prefix=featureName)
        state = client_features.client_state(
            conn, environment, caller.projects, query=query, inline_segments=inline
        )
        feature = state.feature(featureName)
    if feature is None:
        raise NotFound(
            f"Could not find feature flag {featureName[:100]!r} among the live flags this token reads."
        )
    return json_response(feature)


# The document lists the filters; the view reads them itself (project and tag repeat, which
# the operation's query loading refuses), so they are declared after the operation is made.
get_client_features.operation.query_schema = ClientFeaturesQuerySchema()
