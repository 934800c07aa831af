"""The reference server's permission names (spec 5.3, 7: a 403 names the one missing).

Project permissions are held through a project role (Owner, Member or a custom role, see
:mod:`flagadmin.permissions.roles`); the ones in :data:`ENVIRONMENT_PERMISSIONS` are granted per
environment, as the reference scopes them (its ``environment`` permission type), the others in
the whole project. Root roles Admin and Editor hold every permission, project and root, in
every project and environment; an admin API token acts as Admin. The root permissions
(:data:`ROOT_PERMISSIONS`) are held by root roles only: no project role grants them.

The names are those of the reference server 8.2.0 (its ``src/lib/types/permissions.ts`` and
its role migrations); flagadmin declares the ones its operations check or will check.
"""

from __future__ import annotations

CREATE_FEATURE = "CREATE_FEATURE"
UPDATE_FEATURE = "UPDATE_FEATURE"
DELETE_FEATURE = "DELETE_FEATURE"
UPDATE_FEATURE_VARIANTS = "UPDATE_FEATURE_VARIANTS"
UPDATE_FEATURE_DEPENDENCY = "UPDATE_FEATURE_DEPENDENCY"
UPDATE_PROJECT = "UPDATE_PROJECT"
DELETE_PROJECT = "DELETE_PROJECT"
UPDATE_PROJECT_SEGMENT = "UPDATE_PROJECT_SEGMENT"
CREATE_PROJECT_API_TOKEN = "CREATE_PROJECT_API_TOKEN"
DELETE_PROJECT_API_TOKEN = "DELETE_PROJECT_API_TOKEN"
READ_PROJECT_API_TOKEN = "READ_PROJECT_API_TOKEN"

# environment-scoped
CREATE_FEATURE_STRATEGY = "CREATE_FEATURE_STRATEGY"
UPDATE_FEATURE_STRATEGY = "UPDATE_FEATURE_STRATEGY"
DELETE_FEATURE_STRATEGY = "DELETE_FEATURE_STRATEGY"
UPDATE_FEATURE_ENVIRONMENT = "UPDATE_FEATURE_ENVIRONMENT"
UPDATE_FEATURE_ENVIRONMENT_VARIANTS = "UPDATE_FEATURE_ENVIRONMENT_VARIANTS"

# root (not project) permissions, held by root roles as the reference's
CREATE_SEGMENT = "CREATE_SEGMENT"
UPDATE_SEGMENT = "UPDATE_SEGMENT"
DELETE_SEGMENT = "DELETE_SEGMENT"
CREATE_STRATEGY = "CREATE_STRATEGY"
UPDATE_STRATEGY = "UPDATE_STRATEGY"
DELETE_STRATEGY = "DELETE_STRATEGY"

#: The project permissions granted per environment (``PERMISSION:ENVIRONMENT`` in ``flagadmin
#: role create``), as the reference server scopes them.
ENVIRONMENT_PERMISSIONS = frozenset(
    {
        CREATE_FEATURE_STRATEGY,
        UPDATE_FEATURE_STRATEGY,
        DELETE_FEATURE_STRATEGY,
        UPDATE_FEATURE_ENVIRONMENT,
        UPDATE_FEATURE_ENVIRONMENT_VARIANTS,
    }
)

#: Every project permission a project role can grant.
PROJECT_PERMISSIONS = frozenset(
    {
        CREATE_FEATURE,
        UPDATE_FEATURE,
        DELETE_FEATURE,
        UPDATE_FEATURE_VARIANTS,
        UPDATE_FEATURE_DEPENDENCY,
        UPDATE_PROJECT,
        DELETE_PROJECT,
        UPDATE_PROJECT_SEGMENT,
        CREATE_PROJECT_API_TOKEN,
        DELETE_PROJECT_API_TOKEN,
        READ_PROJECT_API_TOKEN,
        *ENVIRONMENT_PERMISSIONS,
    }
)

#: The root permissions: held by root roles Admin and Editor only (``flags.access.require``
#: with no project).
ROOT_PERMISSIONS = frozenset(
    {CREATE_SEGMENT, UPDATE_SEGMENT, DELETE_SEGMENT, CREATE_STRATEGY, UPDATE_STRATEGY, DELETE_STRATEGY}
)
