"""The archive's writes, on the reference server's paths: revive an archived flag, delete one
for good (``flagadmin.flags.changes``). Their paths name no project: the permission each needs
is checked in the flag's project. Reading the archive is 4.4 (``archived_features``)."""

from __future__ import annotations

from flask import Blueprint
from werkzeug.routing import BaseConverter

from ..flags import access, changes
from ..web.auth import Permission
from ..web.operations import PathParameter, operation
from ..web.state import state
from .features import SECTION

bp = Blueprint("feature_archive", __name__, url_prefix="/api/admin/archive")


class ArchivedFlagName(BaseConverter):
    """A flag name in ``/api/admin/archive/<name>``: any but ``features``, which is 4.4's own
    path (flagadmin refuses that name for flags, so nothing is lost)."""

    regex = r"(?!features$)[^/]+"


#: DELETE's flag name as the document gives it: :class:`ArchivedFlagName`'s rule as a pattern,
#: so that a client (or schemathesis) built from the document never sends ``features`` there,
#: where 4.4's path answers DELETE with a 405.
DELETED_FLAG = {
    "featureName": PathParameter(
        "Name of an archived flag (any but `features`, 4.4's own path).",
        {"type": "string", "pattern": f"^{ArchivedFlagName.regex}$"},
    )
}


bp.record_once(lambda setup: setup.app.url_map.converters.setdefault("archivedflag", ArchivedFlagName))

FLAG = {"featureName": PathParameter("Name of an archived flag.")}


@operation(
    bp,
    "/revive/<featureName>",
    method="POST",
    section=SECTION,
    summary="Revive an archived flag",
    response=None,
    path=FLAG,
    permission=Permission.in_project(access.UPDATE_FEATURE, "the flag's project"),
    statuses=(409,),
)
def revive_feature(caller, conn, featureName):
    """Bring the archived flag back to its project, switched off in every environment (as the
    reference server revives); it leaves 4.4 and is live again. A live flag is 409, with what
    to do instead. Past the ``featureFlags`` resource limit (live flags): 400 naming it.
    Records ``feature-revived``."""
    app_state = state()
    changes.revive(conn, caller, featureName, app_state.clock, app_state.settings.resource_limits)


@operation(
    bp,
    "/<archivedflag:featureName>",
    method="DELETE",
    section=SECTION,
    summary="Delete an archived flag",
    response=None,
    path=DELETED_FLAG,
    permission=Permission.in_project(access.DELETE_FEATURE, "the flag's project"),
    statuses=(409,),
)
def delete_feature(caller, conn, featureName):
    """Delete the archived flag for good, with its environments, tags and favorites; its
    name becomes free. A live flag is 409: archive it first. Records ``feature-deleted`` (the
    flag as ``preData``)."""
    changes.delete(conn, caller, featureName, state().clock)
