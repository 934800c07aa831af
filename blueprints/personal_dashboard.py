"""Spec 4.2: ``GET /api/admin/personal-dashboard``, the caller's projects and flags."""

from __future__ import annotations

import orjson
from flask import Blueprint
from marshmallow import Schema, fields, validate
from werkzeug.http import generate_etag

from ..spec import OWNER_TYPES
from ..store import personal_dashboard
from ..web.auth import Permission
from ..web.cache import Answer
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


def dashboard(conn, caller, now: str) -> dict:
    """The personal dashboard of ``caller`` at ``now``, in its wire shape (spec 2.4)."""
    return {
        "admins": [
            {key: value for key, value in admin.items() if value is not None}
            for admin in personal_dashboard.admins(conn)
        ],
        "projectOwners": personal_dashboard.project_owners(conn, caller.user_id, caller.sees_all_projects),
        "projects": personal_dashboard.projects(conn, caller.user_id, now),
        "flags": personal_dashboard.flags(conn, caller.user_id),
    }


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

    Needs a personal access token: an admin API token has no user and gets 403. An answer is
    reused while the content version is unchanged and no flag of the caller's projects has
    reached its type's lifetime since: the same bytes and ETag, computed once.
    """
    now = state().clock.now_rfc3339()
    version = versions().content

    def fresh(answer: Answer) -> bool:
        return answer.version == version and (answer.valid_until is None or now < answer.valid_until)

    def build() -> Answer:
        body = orjson.dumps(dashboard(conn, caller, now))
        valid_until = personal_dashboard.next_health_change(conn, caller.user_id, now)
        return Answer(body, generate_etag(body), valid_until=valid_until, version=version)

    return state().caches.personal_dashboards.get_or_build(caller.user_id, build, fresh)
