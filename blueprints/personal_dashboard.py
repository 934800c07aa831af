"""Spec 4.2: ``GET /api/admin/personal-dashboard``, the caller's projects and flags."""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields, post_dump, validate

from .. import auth
from ..api import operation
from ..store import personal_dashboard

bp = Blueprint("personal_dashboard", __name__, url_prefix="/api/admin")


class AdminSchema(Schema):
    """A user with the Admin root role (spec 2.4); absent values are left out."""

    id = fields.Integer(required=True)
    name = fields.String()
    username = fields.String()
    imageUrl = fields.String()
    email = fields.String()

    @post_dump
    def _drop_absent(self, data: dict, **kwargs) -> dict:
        return {key: value for key, value in data.items() if value is not None}


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


@operation(
    bp,
    "/personal-dashboard",
    section="4.2",
    summary="Get personal dashboard",
    response=PersonalDashboardSchema(),
    permission=auth.USER,
    statuses=(401, 403),
)
def get_personal_dashboard(caller, db):
    """The calling user's projects (with health), flags, the admins and the project owners.

    Needs a personal access token: an admin API token has no user and gets 403.
    """
    return {
        "admins": personal_dashboard.admins(db),
        "projectOwners": personal_dashboard.project_owners(db, caller.user_id, caller.sees_all_projects),
        "projects": personal_dashboard.projects(db, caller.user_id),
        "flags": personal_dashboard.flags(db, caller.user_id),
    }
