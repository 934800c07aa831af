"""What the flag views read: a project's live flags, and one live flag, once the caller may see
them (the reference server's ``GET /api/admin/projects/{projectId}/features`` and
``.../features/{featureName}``). Who may see a project is :mod:`flagadmin.flags.access`'s rule;
the shapes are :mod:`flagadmin.flags.wire`'s. Archived flags are read with spec 4.4.
"""

from __future__ import annotations

from typing import Any

from ..refusals import NotFound
from ..store import Connection
from ..store import features as store_features
from ..store.tokens import Caller
from .access import flag_in_project, project, require
from .wire import feature_wire, project_features_wire


def project_features(conn: Connection, caller: Caller, project_id: str) -> dict[str, Any]:
    """The live flags of a project, newest created first, in the reference server's
    ``projectFeaturesSchema`` shape (:func:`~flagadmin.flags.wire.project_features_wire`),
    each with whether the caller favorited it.

    :raise NotFound: no such project.
    :raise Forbidden: the caller cannot see it.
    """
    project(conn, project_id)
    require(conn, caller, project_id, None)
    return project_features_wire(store_features.project_features(conn, project_id, caller.user_id))


def get(conn: Connection, caller: Caller, project_id: str, name: str) -> dict[str, Any]:
    """One live flag of a project (``featureSchema``, :func:`~flagadmin.flags.wire.feature_wire`).

    :raise NotFound: no such project, or no such live flag in it (an archived flag is read
        with 4.4).
    :raise Forbidden: the caller cannot see the project.
    """
    flag = flag_in_project(conn, caller, project_id, name, None)
    if flag["archived_at"] is not None:
        raise NotFound(
            f'Flag "{name}" of project "{project_id}" is archived: GET /api/admin/archive/features '
            f"lists it, and POST /api/admin/archive/revive/{name} brings it back."
        )
    return feature_wire(conn, flag, caller.user_id)
