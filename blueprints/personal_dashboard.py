"""Spec 4.2: ``GET /api/admin/personal-dashboard``, the caller's projects and flags."""

from __future__ import annotations

from dataclasses import dataclass
from threading import Lock

import orjson
from cachetools import LRUCache
from flask import Blueprint, Response, current_app
from marshmallow import Schema, fields, validate
from werkzeug.http import generate_etag

from .. import auth
from ..api import operation
from ..store import personal_dashboard
from ..store import settings as store_settings
from ..timestamps import now_rfc3339

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

    ownerType = fields.String(required=True, validate=validate.OneOf(["user"]))
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


#: Cached answers per app: at most this many bytes of bodies, least recently used dropped.
CACHE_BYTES = 32 * 1024 * 1024
CACHE = "flagadmin.personal_dashboard"


@dataclass(frozen=True)
class _Cached:
    data_version: int
    valid_until: str | None  # the next moment a health changes; None: never by time alone
    body: bytes
    etag: str


def dashboard(db, caller, now: str) -> dict:
    """The personal dashboard of ``caller`` at ``now``, in its wire shape (spec 2.4)."""
    return {
        "admins": [
            {key: value for key, value in admin.items() if value is not None}
            for admin in personal_dashboard.admins(db)
        ],
        "projectOwners": personal_dashboard.project_owners(db, caller.user_id, caller.sees_all_projects),
        "projects": personal_dashboard.projects(db, caller.user_id, now),
        "flags": personal_dashboard.flags(db, caller.user_id),
    }


@operation(
    bp,
    "/personal-dashboard",
    section="4.2",
    summary="Get personal dashboard",
    response=PersonalDashboardSchema(),
    permission=auth.USER,
    statuses=(401, 403),
    conditional=True,
)
def get_personal_dashboard(caller, db):
    """The calling user's projects (with health), flags, the admins and the project owners.

    Needs a personal access token: an admin API token has no user and gets 403. An answer is
    reused while the data is unchanged (``data_version``) and no flag of the caller's
    projects has reached its type's lifetime since: the same bytes, computed once.
    """
    now = now_rfc3339()
    version = store_settings.data_version(db)
    cache, lock = current_app.extensions[CACHE]
    with lock:
        cached = cache.get(caller.user_id)
    fresh = (
        cached is not None
        and cached.data_version == version
        and (cached.valid_until is None or now < cached.valid_until)
    )
    if not fresh:
        body = orjson.dumps(dashboard(db, caller, now))
        valid_until = personal_dashboard.next_health_change(db, caller.user_id, now)
        cached = _Cached(version, valid_until, body, generate_etag(body))
        with lock:
            cache[caller.user_id] = cached
    response = Response(cached.body, mimetype="application/json")
    response.set_etag(cached.etag)
    return response


def init_app(app) -> None:
    """Give ``app`` its cache of personal dashboards."""
    app.extensions[CACHE] = (LRUCache(maxsize=CACHE_BYTES, getsizeof=lambda c: len(c.body) + 200), Lock())
