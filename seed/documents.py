"""Seed documents: their format, validated with marshmallow, and how they are loaded.

A seed document is one JSON object whose keys are all optional: ``users``, ``projects``,
``environments``, ``features``, ``favorites``, ``integrations``, ``integrationEvents`` (field
names are the API's camelCase names; docs/seed-format.md documents the format).
:func:`load_documents` validates every document of one call and writes all of them in one
transaction, or refuses and writes nothing; :func:`load_files` reads files and folders of them
first.

A seed load is a bootstrap: it writes no system events (spec 2.3) and delivers nothing.

It behaves the same on both engines. No text may hold the character NUL (U+0000),
which PostgreSQL cannot store: a document with one is refused, naming where. The load
serialises with every writer of what it writes (:data:`SEED_LOCKS`): on SQLite the one writer
does that; on PostgreSQL, where each kind of change takes its own write lock, the seed takes
all of theirs, so that an id or a name it checks cannot be taken by another process before it
commits. Ids given by a seed (users, integrations) are the ones later ids continue from: both
engines give a new user or integration the largest id plus one, never a sequence's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from .. import refusals
from ..flags import changes as flag_changes
from ..flags.names import ENVIRONMENT_TYPES, NAME_MAX_LENGTH, NAME_PATTERN, NAME_RULE
from ..permissions import roles as permission_roles
from ..records import EventSchema, Timestamp, WholeMatch, validation_messages
from ..spec import FLAG_TYPES, INTEGRATION_EVENT_STATES, ROOT_ROLES
from ..store import Conflict, Connection
from ..store import seed as store_seed

_ID = validate.Range(min=1, max=2**63 - 1)
_TEXT = validate.Length(min=1)

#: The write locks of the changes whose tables a seed writes: flags, projects and environments
#: (:data:`flagadmin.flags.changes.LOCK`), users (the directory's ``max(id) + 1``), integration
#: configurations (``max(id) + 1``) and their logs (``max(seq) + 1``). See the module's text.
SEED_LOCKS: tuple[str, ...] = (flag_changes.LOCK, "directory", "integrations", "integration_events")


class SeedError(refusals.Invalid):
    """A seed load was refused and nothing was written: a refusal of invalid content
    (:class:`~flagadmin.refusals.Invalid`) whose ``problems`` (its ``details`` too) list each
    as ``file: record: field: message``; its message is the problems, one a line (what the
    command line prints)."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems), details=problems)
        self.problems = problems


def _event(value: dict) -> None:
    errors = EventSchema().validate(value)
    if errors:
        raise ValidationError(errors)


class UserSeed(Schema):
    id = fields.Integer(required=True, strict=True, validate=_ID)
    username = fields.String(required=True, validate=_TEXT)
    name = fields.String(allow_none=True)
    email = fields.String(allow_none=True)
    imageUrl = fields.String(allow_none=True)
    rootRole = fields.String(required=True, validate=validate.OneOf(ROOT_ROLES))


class MemberSeed(Schema):
    userId = fields.Integer(required=True, strict=True, validate=_ID)
    role = fields.String(required=True, validate=_TEXT)


class ProjectSeed(Schema):
    id = fields.String(required=True, validate=_TEXT)
    name = fields.String(required=True, validate=_TEXT)
    description = fields.String(allow_none=True)
    members = fields.List(fields.Nested(MemberSeed), load_default=list)


class EnvironmentSeed(Schema):
    name = fields.String(required=True, validate=_TEXT)
    enabled = fields.Boolean(load_default=False)
    lastSeenAt = Timestamp(allow_none=True, load_default=None)


class InstallEnvironmentSeed(Schema):
    """An environment of the install; the environments that flags name are added
    with the defaults when no document declares them."""

    name = fields.String(
        required=True,
        validate=[
            validate.Length(min=1, max=NAME_MAX_LENGTH),
            WholeMatch(NAME_PATTERN, error=NAME_RULE),
        ],
    )
    type = fields.String(load_default="development", validate=validate.OneOf(ENVIRONMENT_TYPES))
    sortOrder = fields.Integer(strict=True, load_default=0, validate=validate.Range(-(2**31), 2**31 - 1))


class FeatureSeed(Schema):
    name = fields.String(required=True, validate=_TEXT)
    project = fields.String(required=True, validate=_TEXT)
    type = fields.String(required=True, validate=validate.OneOf(FLAG_TYPES))
    description = fields.String(allow_none=True, load_default=None)
    stale = fields.Boolean(load_default=False)
    impressionData = fields.Boolean(load_default=False)
    createdAt = Timestamp(required=True)
    createdByUserId = fields.Integer(strict=True, allow_none=True, load_default=None, validate=_ID)
    archivedAt = Timestamp(allow_none=True, load_default=None)
    lastSeenAt = Timestamp(allow_none=True, load_default=None)
    environments = fields.List(fields.Nested(EnvironmentSeed), load_default=list)

    @validates_schema
    def _archived_after_created(self, data: dict, **kwargs: Any) -> None:
        if data.get("archivedAt") and data["archivedAt"] < data["createdAt"]:
            raise ValidationError("must not be earlier than createdAt", "archivedAt")


class FavoriteSeed(Schema):
    userId = fields.Integer(required=True, strict=True, validate=_ID)
    feature = fields.String(required=True, validate=_TEXT)


class IntegrationSeed(Schema):
    id = fields.Integer(required=True, strict=True, validate=_ID)
    provider = fields.String(required=True, validate=_TEXT)
    description = fields.String(allow_none=True, load_default=None)
    enabled = fields.Boolean(load_default=True)
    events = fields.List(fields.String(), load_default=list)
    projects = fields.List(fields.String(), load_default=list)
    environments = fields.List(fields.String(), load_default=list)
    parameters = fields.Dict(load_default=dict)


class IntegrationEventSeed(Schema):
    integrationId = fields.Integer(required=True, strict=True, validate=_ID)
    createdAt = Timestamp(required=True)
    state = fields.String(required=True, validate=validate.OneOf(INTEGRATION_EVENT_STATES))
    stateDetails = fields.String(required=True)
    event = fields.Dict(required=True, validate=_event)
    details = fields.Dict(required=True)


class SeedDocument(Schema):
    """One seed document; an unknown key outside the free-form objects is refused."""

    users = fields.List(fields.Nested(UserSeed), load_default=list)
    projects = fields.List(fields.Nested(ProjectSeed), load_default=list)
    environments = fields.List(fields.Nested(InstallEnvironmentSeed), load_default=list)
    features = fields.List(fields.Nested(FeatureSeed), load_default=list)
    favorites = fields.List(fields.Nested(FavoriteSeed), load_default=list)
    integrations = fields.List(fields.Nested(IntegrationSeed), load_default=list)
    integrationEvents = fields.List(fields.Nested(IntegrationEventSeed), load_default=list)


@dataclass
class Loaded:
    """A validated document and where it came from."""

    source: str
    data: dict[str, list[dict[str, Any]]]


def demo_files() -> list[Path]:
    """Return the files of the demo dataset shipped in the package's ``seed/`` folder."""
    folder = resources.files("flagadmin.seed")
    return sorted(Path(str(folder)).glob("*.json"))


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Turn files and folders (their ``*.json``, sorted) into a list of files."""
    out: list[Path] = []
    for path in map(Path, paths):
        out.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return out


def read(path: Path) -> Any:
    """Read one seed file's JSON.

    :raise SeedError: unreadable or not JSON; the message names the file.
    """
    try:
        return orjson.loads(path.read_bytes())
    except OSError as exc:
        raise SeedError([f"{path}: cannot read: {exc.strerror}"]) from exc
    except orjson.JSONDecodeError as exc:
        raise SeedError([f"{path}: not JSON: {exc}"]) from exc


def validate_document(source: str, raw: Any) -> Loaded:
    """Validate one seed document (already parsed JSON) that came from ``source``.

    :raise SeedError: not of the seed format; messages name the source, the record
        (``users[3]``) and the field.
    """
    if not isinstance(raw, dict):
        raise SeedError([f"{source}: a seed document is a JSON object of lists"])
    nul = _nul_problems(raw)
    if nul:
        raise SeedError([f"{source}: {_record_path(raw, p)}" for p in nul])
    try:
        return Loaded(source, SeedDocument().load(raw))
    except ValidationError as exc:
        problems = [_record_path(raw, m) for m in validation_messages(exc)]
        raise SeedError([f"{source}: {p}" for p in problems]) from exc


def _nul_problems(value: Any, path: str = "") -> list[str]:
    """Where ``value`` (parsed JSON) holds a text with NUL, as ``users.3.name: ...`` messages
    (the first few), keys included."""
    problems: list[str] = []
    if isinstance(value, str):
        if "\x00" in value:
            problems.append(f"{path}: must not contain the character NUL (U+0000)")
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if "\x00" in key:
                problems.append(f"{path or 'document'}: a key must not contain the character NUL (U+0000)")
            else:
                problems.extend(_nul_problems(item, where))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problems.extend(_nul_problems(item, f"{path}.{index}"))
    return problems[:10]


def _record_path(raw: dict, message: str) -> str:
    """Turn ``users.3.rootRole: ...`` into ``users[3] (id 4): rootRole: ...``."""
    head, _, rest = message.partition(": ")
    parts = head.split(".")
    if len(parts) >= 2 and parts[1].isdigit():
        key, index = parts[0], int(parts[1])
        record = f"{key}[{index}]"
        item = raw.get(key, [])[index] if isinstance(raw.get(key), list) else None
        if isinstance(item, dict):
            for ident in ("id", "name", "username"):
                if isinstance(item.get(ident), (str, int)):
                    record += f" ({ident} {item[ident]!r})"
                    break
        field = ".".join(parts[2:])
        return f"{record}: {field}: {rest}" if field else f"{record}: {rest}"
    return message


def check_references(conn: Connection, documents: list[Loaded]) -> list[str]:
    """Return the duplicate ids and dangling references across ``documents`` and the database."""
    existing = store_seed.existing_keys(conn)
    # a stored project or environment declared again identically is no conflict (a new
    # install's default project and environments, in a seed written for any install)
    declared = store_seed.stored_declarations(conn)
    problems: list[str] = []
    seen: dict[str, dict[Any, str]] = {kind: {} for kind in existing}

    def claim(kind: str, key: Any, where: str, label: str, same: tuple | None = None) -> None:
        if key in existing[kind] and (same is None or declared[kind].get(key) != same):
            problems.append(f"{where}: {label} {key!r} already exists in the database")
        elif key in seen[kind]:
            problems.append(f"{where}: duplicate {label} {key!r} (first in {seen[kind][key]})")
        else:
            seen[kind][key] = where

    def refer(kind: str, key: Any, where: str, label: str) -> None:
        if key is not None and key not in existing[kind] and key not in seen[kind]:
            problems.append(f"{where}: {label} {key!r} names no {kind[:-1]}")

    for doc in documents:
        for i, u in enumerate(doc.data["users"]):
            claim("users", u["id"], f"{doc.source}: users[{i}]", "id")
            claim("usernames", u["username"], f"{doc.source}: users[{i}]", "username")
        for i, p in enumerate(doc.data["projects"]):
            same = (p["name"], p.get("description"))
            claim("projects", p["id"], f"{doc.source}: projects[{i}]", "id", same)
        for i, e in enumerate(doc.data["environments"]):
            same = (e["type"], e["sortOrder"])
            claim("environments", e["name"], f"{doc.source}: environments[{i}]", "name", same)
        for i, f in enumerate(doc.data["features"]):
            claim("features", f["name"], f"{doc.source}: features[{i}]", "name")
        for i, n in enumerate(doc.data["integrations"]):
            claim("integrations", n["id"], f"{doc.source}: integrations[{i}]", "id")
    for doc in documents:
        for i, p in enumerate(doc.data["projects"]):
            for j, m in enumerate(p["members"]):
                refer("users", m["userId"], f"{doc.source}: projects[{i}].members[{j}]: userId", "user")
        for i, f in enumerate(doc.data["features"]):
            where = f"{doc.source}: features[{i}] (name {f['name']!r})"
            refer("projects", f["project"], f"{where}: project", "project")
            refer("users", f["createdByUserId"], f"{where}: createdByUserId", "user")
        for i, fav in enumerate(doc.data["favorites"]):
            where = f"{doc.source}: favorites[{i}]"
            refer("users", fav["userId"], f"{where}: userId", "user")
            refer("features", fav["feature"], f"{where}: feature", "feature")
            claim("favorites", (fav["userId"], fav["feature"]), where, "favorite")
        for i, e in enumerate(doc.data["integrationEvents"]):
            refer(
                "integrations",
                e["integrationId"],
                f"{doc.source}: integrationEvents[{i}]: integrationId",
                "integration",
            )
    return problems


def load_documents(conn: Connection, documents: Iterable[Any | tuple[str, Any]]) -> dict[str, int]:
    """Validate seed documents and load them all in one transaction; return the count of
    records per key.

    Each document is a parsed JSON object, or ``(source, object)`` where ``source`` names it
    in messages (a file name; default ``document N``).

    :raise SeedError: any document is invalid, or refers to what does not exist, or repeats
        what does; nothing was written.
    """
    loaded: list[Loaded] = []
    problems: list[str] = []
    for index, document in enumerate(documents, start=1):
        source, raw = document if isinstance(document, tuple) else (f"document {index}", document)
        try:
            loaded.append(validate_document(source, raw))
        except SeedError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SeedError(problems)
    # The check and the writes share one write transaction, so nothing can slip in between.
    try:
        with conn.write("seed"):
            store_seed.lock_also(conn, SEED_LOCKS)
            problems = check_references(conn, loaded)
            if problems:
                raise SeedError(problems)
            counts = store_seed.insert_documents(conn, [d.data for d in loaded])
            # a role a document gives without declaring it grants what every role did before
            # roles had permissions (docs/permissions.md)
            permission_roles.declare_seeded(conn)
            return counts
    except Conflict as exc:
        # only a writer that takes none of SEED_LOCKS can get here; nothing was written
        raise SeedError(
            [f"a record of the seed was stored meanwhile by another writer ({exc}); nothing was written"]
        ) from exc


def load_files(conn: Connection, paths: Iterable[str | Path]) -> dict[str, int]:
    """Read seed files (and folders of ``*.json``) and load them with :func:`load_documents`.

    :raise SeedError: a file cannot be read or is not JSON, or any document is invalid;
        nothing was written.
    """
    documents: list[tuple[str, Any]] = []
    problems: list[str] = []
    for path in expand(paths):
        try:
            documents.append((str(path), read(path)))
        except SeedError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SeedError(problems)
    return load_documents(conn, documents)
