"""Spec 4.4: ``GET /api/admin/archive/features``, archived feature flags (deprecated)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from flask import Blueprint, Response, current_app, stream_with_context
from marshmallow import Schema, fields
from werkzeug.http import generate_etag

from ..records import Timestamp
from ..store import archived_features
from ..web.cache import Answer
from ..web.database import connection, versions
from ..web.operations import operation
from ..web.responses import if_none_match, not_modified
from ..web.state import state

bp = Blueprint("archived_features", __name__, url_prefix="/api/admin")

#: Version of the feature schema served (spec 2.6, 9.2).
FEATURE_SCHEMA_VERSION = 2


class FeatureEnvironmentSchema(Schema):
    """An environment of an archived flag (spec 2.6, deprecated)."""

    name = fields.String(required=True)
    lastSeenAt = Timestamp(required=True, allow_none=True)
    enabled = fields.Boolean(required=True)


class ArchivedFeatureSchema(Schema):
    """An archived feature flag (spec 2.6).

    The objects sent are not dumped through it: each is built by the database, in this schema's
    keys and order, when the flag is written (``archived_feature_json`` in ``schema.sql``,
    ``flagadmin_archived_item`` in ``store/schema.postgresql.sql``). A field changed here must be
    changed there on both engines; ``tests/test_archived_features.py`` compares every stored
    item with this schema's dump of it.
    """

    name = fields.String(required=True)
    type = fields.String()
    description = fields.String(allow_none=True)
    project = fields.String(required=True, metadata={"description": "Id of the owning project."})
    stale = fields.Boolean()
    impressionData = fields.Boolean()
    createdAt = Timestamp()
    archivedAt = Timestamp()
    lastSeenAt = Timestamp(allow_none=True, metadata={"deprecated": True})
    environments = fields.List(fields.Nested(FeatureEnvironmentSchema), metadata={"deprecated": True})


class ArchivedFeaturesSchema(Schema):
    """Archived features (spec 2.6)."""

    version = fields.Integer(required=True)
    features = fields.List(fields.Nested(ArchivedFeatureSchema), required=True)


#: Archived flags per chunk of the streamed body.
ROWS_PER_CHUNK = 500


@operation(
    bp,
    "/archive/features",
    section="4.4",
    summary="Get archived features (deprecated)",
    response=ArchivedFeaturesSchema(),
    deprecated=True,
    conditional=True,
)
def get_archived_features(caller, conn):
    """Archived flags of the projects the caller sees, most recently archived first.

    Deprecated (spec 4.4, 9.3) and still served. Any valid API token. Up to the app's
    ``ARCHIVE_KEEP_WHOLE_FLAGS`` flags (default 2,500, about 400 bytes each), the answer is
    built once and kept (and its gzip made once) until the content version moves; above, the
    body is streamed in chunks as the database reads each flag's JSON, so memory does not
    grow with the number of flags. Either way each flag is its stored JSON bytes
    (:mod:`flagadmin.store.archived_features`), not built per request. The ETag names the
    content version and the caller's view of it, so If-None-Match is answered 304 without
    reading a flag.
    """
    scope = "all" if caller.sees_all_projects else f"user {caller.user_id}"
    content = versions().content
    etag = generate_etag(f"{state().instance_id} {content} {scope}".encode())
    matched = if_none_match(etag)
    if matched is not None:
        return not_modified(matched)
    kept = state().caches.archived_features
    key = (content, scope)
    answer = kept.get(key)
    if answer is not None:
        return answer
    bound = current_app.config["ARCHIVE_KEEP_WHOLE_FLAGS"]
    if bound > 0 and archived_features.count(conn, caller.user_id, caller.sees_all_projects) <= bound:
        rows = archived_features.archived_features_json(conn, caller.user_id, caller.sees_all_projects)
        body = b'{"version":%d,"features":[%s]}' % (FEATURE_SCHEMA_VERSION, b",".join(rows))
        return kept.put(key, Answer(body, etag))

    def body() -> Iterator[bytes]:
        yield b'{"version":%d,"features":[' % FEATURE_SCHEMA_VERSION
        # The request's connection, asked for again: the body is sent after the view has
        # returned, and on PostgreSQL the connection the view had went back to the pool then
        # (the request's teardown runs again once the body is sent, and gives this one back).
        rows = archived_features.archived_features_json(
            connection(), caller.user_id, caller.sees_all_projects
        )
        try:
            separator = b""
            for chunk in iter(lambda: list(islice(rows, ROWS_PER_CHUNK)), []):
                yield separator + b",".join(chunk)
                separator = b","
        finally:
            # a client gone mid-body: end the statement now, before the connection is reused
            rows.close()
        yield b"]}"

    response = Response(stream_with_context(body()), mimetype="application/json")
    response.set_etag(etag)
    return response
