"""Spec 4.2: ``GET /api/admin/personal-dashboard``, the caller's projects and flags."""

from __future__ import annotations

import orjson
from flask import Blueprint
from marshmallow import Schema, fields, validate
from werkzeug.http import generate_etag

from ..spec import OWNER_TYPES
from ..store import personal_dashboard
from ..web.auth import Permission
from ..web.cache import Answer, SplicedAnswer
from ..web.database import versions
from ..web.operations import operation
from ..web.state import state

bp = Blueprint("personal_dashboard", __name__, url_prefix="/api/admin")


class AdminSchema(Schema):
    """A user with the Admin root role (spec 2.4); absent values are left out."""

    id = fields.Integer(required=True)
    name = fields.String()
    username = fields.String()
    imageUrl = fields.String()
    email = fields.String()


class ProjectOwnerSchema(Schema):
    """An owner of a project the caller sees (spec 2.4)."""

    ownerType = fields.String(required=True, validate=validate.OneOf(OWNER_TYPES))
    name = fields.String(required=True)
    imageUrl = fields.String(required=True, allow_none=True)
    email = fields.String(required=True, allow_none=True)


class DashboardProjectSchema(Schema):
    """A project the caller has a role in (spec 2.4)."""

    id = fields.String(required=True)
    name = fields.String(required=True)
    health = fields.Integer(required=True, validate=validate.Range(0, 100))
    memberCount = fields.Integer(required=True, validate=validate.Range(min=0))
    featureCount = fields.Integer(required=True, validate=validate.Range(min=0))


class DashboardFlagSchema(Schema):
    """A live flag the caller created or favorited (spec 2.4)."""

    name = fields.String(required=True)
    project = fields.String(required=True)
    type = fields.String(required=True)


class PersonalDashboardSchema(Schema):
    """The personal dashboard (spec 2.4)."""

    admins = fields.List(fields.Nested(AdminSchema), required=True)
    projectOwners = fields.List(fields.Nested(ProjectOwnerSchema), required=True)
    projects = fields.List(fields.Nested(DashboardProjectSchema), required=True)
    flags = fields.List(fields.Nested(DashboardFlagSchema), required=True)


def _part(key: tuple, version, build) -> Answer:
    """A part of the dashboard shared by many callers, kept per content version in the
    ``dashboard_parts`` cache: its JSON bytes and their ETag, built once per version, not once
    per caller, and held once by every dashboard that holds it (see
    :class:`~flagadmin.web.cache.SplicedAnswer`)."""
    parts = state().caches.dashboard_parts

    def made() -> Answer:
        body = orjson.dumps(build())
        return Answer(body, generate_etag(body), version=version)

    return parts.get_or_build((*key, version), made)


def dashboard(conn, caller, now: str, version) -> tuple[tuple[bytes, ...], int, str, str | None]:
    """The personal dashboard of ``caller`` at ``now`` (spec 4.2): the parts of its JSON bytes
    (joined, they are the answer), how many of those bytes are the caller's alone, its ETag,
    and the first moment after ``now`` at which its projects' health changes with time alone
    (None: never, while the data stays as it is).

    The admins, and the owners of all projects (for callers who see every project), are the
    same for every caller: they are built once per content ``version``, and the parts are
    those very bytes objects. The ETag is a digest of the caller's own bytes and of the shared
    parts' digests (each after a NUL byte, which JSON text never holds), not of the whole
    body: the shared parts (up to hundreds of KB) are hashed once per version, not once per
    caller, and any change of any byte still changes it.
    """
    admins = _part(
        ("admins",),
        version,
        lambda: [
            {key: value for key, value in admin.items() if value is not None}
            for admin in personal_dashboard.admins(conn)
        ],
    )
    if caller.sees_all_projects:
        owners = _part(("owners", "all"), version, lambda: personal_dashboard.project_owners(conn, 0, True))
        owners_body, owners_digest, shared = owners.body, b"\0" + owners.etag.encode(), len(owners.body)
    else:
        owners_body = orjson.dumps(personal_dashboard.project_owners(conn, caller.user_id, False))
        owners_digest = owners_body
        shared = 0
    projects, valid_until = personal_dashboard.projects(
        conn, caller.user_id, now, personal_dashboard.lifetimes(conn)
    )
    # the object's last two members, with its closing brace: '"projects":[...],"flags":[...]}'
    rest = orjson.dumps({"projects": projects, "flags": personal_dashboard.flags(conn, caller.user_id)})[1:]
    parts = (b'{"admins":', admins.body, b',"projectOwners":', owners_body, b",", rest)
    etag = generate_etag(b"".join((b"\0", admins.etag.encode(), b"|", owners_digest, b"|", rest)))
    return parts, sum(map(len, parts)) - len(admins.body) - shared, etag, valid_until


@operation(
    bp,
    "/personal-dashboard",
    section="4.2",
    summary="Get personal dashboard",
    response=PersonalDashboardSchema(),
    permission=Permission.USER,
    conditional=True,
)
def get_personal_dashboard(caller, conn):
    """The calling user's projects (with health), flags, the admins and the project owners.

    An admin API token has no user and gets 403. An answer is
    reused while the content version is unchanged and no flag of the caller's projects has
    reached its type's lifetime since: the same bytes and ETag, computed once. It is kept as
    its parts (the shared ones by reference) with its gzip once made, so that the cache holds
    each caller's own bytes, not a copy of the admins and owners per caller.
    """
    now = state().clock.now_rfc3339()
    version = versions().content

    def fresh(kept: SplicedAnswer) -> bool:
        return kept.version == version and (kept.valid_until is None or now < kept.valid_until)

    def build() -> SplicedAnswer:
        parts, own, etag, valid_until = dashboard(conn, caller, now, version)
        return SplicedAnswer(parts, own, etag, valid_until=valid_until, version=version)

    return state().caches.personal_dashboards.get_or_build(caller.user_id, build, fresh)
