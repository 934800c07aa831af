"""The client features state: what ``GET /api/client/features`` answers a backend SDK (the
reference server's Client API, format version 2), and what the Frontend API and OFREP feed
their engines with.

:func:`client_state` builds it for one environment and a set of projects, from one snapshot
of the database (:mod:`flagadmin.store.client_features`), as a dict (``body``) and as the bytes
sent (``payload``), with an ETag that is a digest of what decides those bytes: the flags, the
segments and the resolved query, not the revision they were read at. A write anywhere moves
the rules revision (``Versions.rules``), but the ETag of a token whose view it did not change
stays the same, so its SDKs keep getting 304.

The shape (seen on the wire against the reference server, 8.2.0):
``{"version": 2, "features": [...], "segments": [...], "query": {...}, "meta": {"revisionId",
"etag", "queryHash"}}``. A feature: ``name, type, enabled`` (the environment's switch; off
too when each of its strategies there is disabled, as the reference answers),
``project, stale, strategies, variants`` (the environment's), ``description, impressionData``
and ``dependencies`` when it has a parent. A strategy: ``name, constraints, parameters,
variants`` and, for SDKs of client specification 4.2.0 or newer, ``segments`` (ids, when it
uses any); for older SDKs (or none said) each segment's constraints are appended to the
strategy's own and there is no top-level ``segments`` (``query.inlineSegmentConstraints``
says which). No strategy ids and no sort order: the reference leaves them out of the Client
API, and strategies come in their order (sort order, then id). Flags by name, by code point;
segments by id, only those the answer's strategies use.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..refusals import Invalid
from ..store import client_features as store

#: The format version of the answer (the reference's ``version``; SDK engines ignore an answer
#: without it).
FORMAT_VERSION = 2

#: The client specification from which SDKs read segments by id (the reference's
#: ``Unleash-Client-Spec`` threshold for ``segments``).
SEGMENTS_SPEC = (4, 2, 0)

#: A semantic version (semver.org 2.0.0): major, minor, patch, pre-release, build.
SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)

#: Longest value taken for a query parameter or the spec header, and most repeats of one
#: parameter: a flag name, a project id and a tag's parts are at most 100 characters.
MAX_PARAMETER_LENGTH = 200
MAX_REPEATS = 100


def segments_supported(spec: str | None) -> bool:
    """Whether an SDK that sent ``Unleash-Client-Spec: spec`` reads segments by id: a
    version of at least 4.2.0 (semver precedence, so ``4.2.0-beta`` is below it). No header
    (or an empty one): an old SDK, which gets segment constraints inlined.

    :raise Invalid: the header is not a semantic version.
    """
    if spec is None or not spec.strip():
        return False
    text = spec.strip()
    match = SEMVER.fullmatch(text) if len(text) <= MAX_PARAMETER_LENGTH else None
    if match is None:
        raise Invalid(
            f"Unleash-Client-Spec {spec[:MAX_PARAMETER_LENGTH]!r} is not a semantic version"
            " (MAJOR.MINOR.PATCH, such as 5.1.0): send the client specification version the SDK"
            " implements, or no header."
        )
    version = tuple(int(part) for part in match.group(1, 2, 3))
    return version > SEGMENTS_SPEC or (version == SEGMENTS_SPEC and match.group(4) is None)


@dataclass(frozen=True)
class ClientQuery:
    """The filters a request asks for (the reference's ``clientFeaturesQuerySchema``).

    ``projects``: the ``project`` parameters (None: not given); the token's projects narrow
    them. ``name_prefix``: flags whose name starts with it. ``tags``: ``(type, value)``, flags
    carrying at least one of them. Hashable: it is part of an answer cache's key.
    """

    projects: tuple[str, ...] | None = None
    name_prefix: str | None = None
    tags: tuple[tuple[str, str], ...] = ()


def parse_tag(text: str) -> tuple[str, str]:
    """``"type:value"`` -> ``(type, value)`` (split at the first colon).

    :raise Invalid: no colon, or an empty type or value.
    """
    type_, colon, value = text.partition(":")
    if not colon or not type_ or not value:
        raise Invalid(
            f"Query parameter tag {text[:MAX_PARAMETER_LENGTH]!r} is not a tag: give it as"
            " type:value (such as simple:payment), once per tag."
        )
    return type_, value


def parse_query(pairs: Iterable[tuple[str, str]]) -> ClientQuery:
    """The :class:`ClientQuery` of a request's query parameters ``(name, value)`` in order.

    ``project`` and ``tag`` may repeat; ``namePrefix`` is given once. ``environment`` and
    ``inlineSegmentConstraints`` are taken and ignored (the token names the environment; the
    spec header decides the segments), as are names the reference does not know, so that an
    SDK that sends more still reads its flags.

    :raise Invalid: a value is longer than :data:`MAX_PARAMETER_LENGTH` or holds a NUL, a parameter repeats
        more than :data:`MAX_REPEATS` times, ``namePrefix`` is given twice, a tag is not
        ``type:value``, or a project is empty.
    """
    projects: list[str] = []
    tags: list[tuple[str, str]] = []
    prefixes: list[str] = []
    for name, value in pairs:
        if name not in ("project", "tag", "namePrefix"):
            continue
        if len(value) > MAX_PARAMETER_LENGTH:
            raise Invalid(
                f"Query parameter {name} is {len(value)} characters long; at most"
                f" {MAX_PARAMETER_LENGTH} are taken (names and tags are at most 100)."
            )
        if "\x00" in value:
            raise Invalid(f"Query parameter {name} holds a NUL character, which no flag, project or tag has.")
        if name == "project":
            if not value:
                raise Invalid("Query parameter project is empty: give a project id, or leave it out.")
            projects.append(value)
        elif name == "tag":
            tags.append(parse_tag(value))
        else:
            prefixes.append(value)
    for name, given in (("project", projects), ("tag", tags)):
        if len(given) > MAX_REPEATS:
            raise Invalid(f"Query parameter {name} is given {len(given)} times; at most {MAX_REPEATS}.")
    if len(prefixes) > 1:
        raise Invalid("Query parameter namePrefix is given more than once; give it once.")
    return ClientQuery(
        projects=tuple(dict.fromkeys(projects)) if projects else None,
        name_prefix=prefixes[0] if prefixes and prefixes[0] else None,
        tags=tuple(dict.fromkeys(tags)),
    )


def resolve_projects(
    token_projects: Sequence[str] | None, asked: Sequence[str] | None
) -> tuple[str, ...] | None:
    """The projects an answer reads: the ``project`` parameters narrowed to the token's
    (None: every project, for a token of every project that asked for none)."""
    if asked is None:
        return None if token_projects is None else tuple(sorted(set(token_projects)))
    if token_projects is None:
        return tuple(sorted(set(asked)))
    allowed = set(token_projects)
    return tuple(sorted(project for project in set(asked) if project in allowed))


@dataclass
class ClientState:
    """One answer of ``GET /api/client/features``.

    ``revision``: the rules revision it was read at (``Versions.rules``). ``body``: the answer
    as a dict (shared: read it, do not change it). ``payload``: the answer's bytes (compact
    JSON, UTF-8). ``etag``: the opaque part of its ETag (32 hex digits), a digest of the flags,
    segments and resolved query, so the same for the same view whatever the revision; it is
    sent weak (``W/"<etag>"``, as ``meta.etag`` says), since ``meta.revisionId`` may differ
    between two answers of the same view. ``query_hash``: a digest of the resolved query.
    """

    revision: int
    body: dict[str, Any]
    payload: bytes
    etag: str
    query_hash: str
    _by_name: dict[str, dict[str, Any]] | None = field(default=None, repr=False)

    def feature(self, name: str) -> dict[str, Any] | None:
        """The feature named ``name`` in this answer, or None."""
        if self._by_name is None:
            self._by_name = {feature["name"]: feature for feature in self.body["features"]}
        return self._by_name.get(name)


def weak_etag(etag: str) -> str:
    """The ETag header value of an opaque ``etag`` (RFC 9110 section 8.8.3: weak)."""
    return f'W/"{etag}"'


def _digest(*parts: bytes) -> str:
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.hexdigest()


def _json(text: str | None, default: Any) -> Any:
    return default if text is None else orjson.loads(text)


def client_state(
    conn,
    environment: str,
    projects: Sequence[str] | None,
    *,
    query: ClientQuery | None = None,
    inline_segments: bool = False,
) -> ClientState:
    """The Client API's answer for ``environment`` and ``projects`` (the token's: None for
    every project), filtered by ``query``; with segment constraints inlined into strategies
    (and no top-level ``segments``) when ``inline_segments``, as old SDKs need.

    Reads one snapshot (one statement, :func:`flagadmin.store.client_features.client_rows`);
    builds the dict, its bytes and its ETag. Raises nothing of its own (an unknown
    environment or project simply has no flags).
    """
    query = query or ClientQuery()
    read_projects = resolve_projects(projects, query.projects)
    rows = store.client_rows(conn, environment, read_projects, name_prefix=query.name_prefix, tags=query.tags)

    segments = {
        row["id"]: {"id": row["id"], "name": row["name"], "constraints": _json(row["constraints"], [])}
        for row in sorted(rows.segments, key=lambda row: row["id"])
    }
    segment_ids: dict[str, list[int]] = {}
    for strategy_id, segment_id in rows.links:
        if segment_id in segments:
            segment_ids.setdefault(strategy_id, []).append(segment_id)

    strategies: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows.strategies, key=lambda row: (row["feature"], row["sort_order"], row["id"])):
        constraints = _json(row["constraints"], [])
        ids = sorted(segment_ids.get(row["id"], ()))
        strategy: dict[str, Any] = {
            "name": row["name"],
            "constraints": constraints,
            "parameters": _json(row["parameters"], {}),
            "variants": _json(row["variants"], []),
        }
        if ids:
            if inline_segments:
                strategy["constraints"] = [
                    *constraints,
                    *(c for segment_id in ids for c in segments[segment_id]["constraints"]),
                ]
            else:
                strategy["segments"] = ids
        strategies.setdefault(row["feature"], []).append(strategy)

    features = []
    for row in sorted(rows.features, key=lambda row: row["name"]):
        served = strategies.get(row["name"], [])
        feature: dict[str, Any] = {
            "name": row["name"],
            "type": row["type"],
            # every strategy disabled: off, as the reference answers it (no strategy at all: on)
            "enabled": bool(row["enabled"]) and (bool(served) or not row["disabled_strategies"]),
            "project": row["project"],
            "stale": bool(row["stale"]),
            "strategies": served,
            "variants": _json(row["variants"], []),
            "description": row["description"],
            "impressionData": bool(row["impression_data"]),
        }
        if row["parent"] is not None:
            dependency: dict[str, Any] = {"feature": row["parent"], "enabled": bool(row["parent_enabled"])}
            if dependency["enabled"]:
                dependency["variants"] = _json(row["parent_variants"], [])
            feature["dependencies"] = [dependency]
        features.append(feature)

    echoed: dict[str, Any] = {}
    if query.tags:
        echoed["tag"] = [list(tag) for tag in query.tags]
    if read_projects is not None:
        echoed["project"] = list(read_projects)
    if query.name_prefix:
        echoed["namePrefix"] = query.name_prefix
    echoed["environment"] = environment
    echoed["inlineSegmentConstraints"] = inline_segments

    features_bytes = orjson.dumps(features)
    segment_list = list(segments.values())
    segments_bytes = b"" if inline_segments else orjson.dumps(segment_list)
    query_bytes = orjson.dumps(echoed)
    etag = _digest(features_bytes, segments_bytes, query_bytes)
    query_hash = _digest(query_bytes)
    meta = {"revisionId": rows.revision, "etag": weak_etag(etag), "queryHash": query_hash}

    body: dict[str, Any] = {"version": FORMAT_VERSION, "features": features}
    parts = [b'{"version":%d,"features":' % FORMAT_VERSION, features_bytes]
    if not inline_segments:
        body["segments"] = segment_list
        parts += [b',"segments":', segments_bytes]
    body["query"] = echoed
    body["meta"] = meta
    parts += [b',"query":', query_bytes, b',"meta":', orjson.dumps(meta), b"}"]
    return ClientState(rows.revision, body, b"".join(parts), etag, query_hash)
