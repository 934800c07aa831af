"""Project roles: the built-in Owner and Member, and custom roles declared with the permissions
they grant (``flagadmin role create|update|list|delete``), each change recorded as the reference
server records it (``role-created``, ``role-updated``, ``role-deleted``, spec 6).

What the built-in roles grant, as the reference server's role migrations give them (8.2.0):

- **Owner**: every project permission (:data:`~flagadmin.permissions.names.PROJECT_PERMISSIONS`),
  in every environment.
- **Member**: the flag work of a project, in every environment: CREATE_FEATURE,
  UPDATE_FEATURE, DELETE_FEATURE, UPDATE_FEATURE_VARIANTS, UPDATE_FEATURE_DEPENDENCY, the
  strategies (CREATE/UPDATE/DELETE_FEATURE_STRATEGY), switching environments
  (UPDATE_FEATURE_ENVIRONMENT) and their variants (UPDATE_FEATURE_ENVIRONMENT_VARIANTS), and the
  project's API tokens (READ/CREATE/DELETE_PROJECT_API_TOKEN); not the project's administration
  (UPDATE_PROJECT, DELETE_PROJECT) nor its segments (UPDATE_PROJECT_SEGMENT, which the
  reference gives Owner only).

A custom role grants what it is declared with: a project permission in the whole project, or an
environment-scoped one (:data:`~flagadmin.permissions.names.ENVIRONMENT_PERMISSIONS`) in every
environment or in the environments named (``PERMISSION:ENVIRONMENT``). A role that grants
nothing is read-only: its holders see the project's flags and change nothing. Roles are given
with ``flagadmin project role`` and ``flagadmin group-role`` (:func:`require_declared`). Role
changes share the flags' lock, as the roles given in projects do (permission checks read them
in the flag changes' transactions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import events
from ..events import Actor
from ..records import as_json
from ..refusals import Conflict, Invalid, NotFound
from ..store import Connection
from ..store import environments as store_environments
from ..store import roles as store_roles
from ..store.seed import lock_also
from ..timestamps import SYSTEM_CLOCK, Clock
from . import names
from .names import ENVIRONMENT_PERMISSIONS, PROJECT_PERMISSIONS

#: The lock of role changes: the flags' (``flags.changes.LOCK``), under which project roles are
#: given and permissions checked. Deleting a role takes the SCIM group mappings' lock too.
LOCK = "features"
DIRECTORY_LOCK = "directory"

OWNER = "Owner"
MEMBER = "Member"

#: What Member grants, in every environment (the reference server's Member; see the module's
#: docstring).
MEMBER_PERMISSIONS = PROJECT_PERMISSIONS - {
    names.UPDATE_PROJECT,
    names.DELETE_PROJECT,
    names.UPDATE_PROJECT_SEGMENT,
}

#: The built-in project roles and the permissions each grants in every environment. The schema
#: files seed them (``schema.sql``, ``store/schema.postgresql.sql``); a test holds both equal.
BUILT_IN: dict[str, frozenset[str]] = {OWNER: PROJECT_PERMISSIONS, MEMBER: MEMBER_PERMISSIONS}

#: Characters of a role's name at most (the name it is given by in ``project_members``).
MAX_NAME_LENGTH = 100
#: Characters of a role's description at most.
MAX_DESCRIPTION_LENGTH = 1000

#: The description of a role a seed document named without declaring it.
SEEDED_DESCRIPTION = (
    "Declared by a seed load that named it: every project permission in every environment, "
    "as every role had before roles had permissions."
)


class GrantError(Invalid):
    """400: a permission a role cannot grant as written (an unknown permission, an environment
    on one granted in the whole project, an environment the install lacks)."""


@dataclass(frozen=True)
class Grant:
    """One permission a role grants: ``permission`` (a name of :mod:`~flagadmin.permissions.names`)
    in ``environment`` (None: every environment)."""

    permission: str
    environment: str | None = None

    def __str__(self) -> str:
        """The grant as ``flagadmin role create --permission`` takes it: ``PERMISSION`` or
        ``PERMISSION:ENVIRONMENT``."""
        return self.permission if self.environment is None else f"{self.permission}:{self.environment}"

    def key(self) -> tuple[str, str]:
        """Its order among grants: by permission, then environment (every environment first)."""
        return (self.permission, self.environment or "")

    def wire(self) -> dict[str, str]:
        """The grant as the reference's role events carry it: ``{"name"[, "environment"]}``."""
        return {"name": self.permission} | (
            {} if self.environment is None else {"environment": self.environment}
        )

    @classmethod
    def stored(cls, permission: str, environment: str) -> Grant:
        """The grant of a ``role_permissions`` row (environment ``''``: every environment)."""
        return cls(permission, environment or None)


def parse_grant(text: str) -> Grant:
    """``PERMISSION`` or ``PERMISSION:ENVIRONMENT`` as a :class:`Grant` (the environment is not
    looked up here: :func:`create` does).

    :raise GrantError: the permission is not a project permission, or an environment is named for
        one that is not granted per environment; the message lists what is accepted.
    """
    permission, sep, environment = (text or "").strip().partition(":")
    permission = permission.strip()
    environment = environment.strip()
    if permission not in PROJECT_PERMISSIONS:
        what = (
            "is a root permission, held by root roles Admin and Editor only, which no project role grants"
            if permission in names.ROOT_PERMISSIONS
            else "is not a project permission"
        )
        raise GrantError(
            f"{as_json(permission)} {what}. A project role grants: {', '.join(sorted(PROJECT_PERMISSIONS))}."
        )
    if sep and not environment:
        raise GrantError(
            f"{as_json(text)} names no environment after the colon: write {permission}:ENVIRONMENT."
        )
    if environment and permission not in ENVIRONMENT_PERMISSIONS:
        raise GrantError(
            f"{permission} is granted in the whole project, not per environment: write {permission} "
            "alone. The permissions granted per environment are "
            f"{', '.join(sorted(ENVIRONMENT_PERMISSIONS))}."
        )
    return Grant(permission, environment or None)


def _grants(conn: Connection, grants: Iterable[str | Grant]) -> list[Grant]:
    """``grants`` parsed, their environments checked, each once; a grant in every environment
    makes the same permission's grants in single environments redundant (they are dropped).

    :raise GrantError: a grant :func:`parse_grant` refuses, or an environment the install lacks.
    """
    parsed = {g if isinstance(g, Grant) else parse_grant(g) for g in grants}
    known = {e["name"] for e in store_environments.list_all(conn)}
    for grant in sorted(parsed, key=Grant.key):
        if grant.environment is not None and grant.environment not in known:
            raise GrantError(
                f"{grant}: there is no environment {as_json(grant.environment)} (the install has: "
                f"{', '.join(sorted(known)) or 'none'}; an operator adds one with "
                "`flagadmin environment add NAME`)."
            )
    everywhere = {g.permission for g in parsed if g.environment is None}
    return sorted(
        (g for g in parsed if g.environment is None or g.permission not in everywhere), key=Grant.key
    )


def _check_name(name: str) -> str:
    """:raise Invalid: ``name`` is empty, has white space at either end, holds a control
    character or is longer than :data:`MAX_NAME_LENGTH`."""
    if not name or not name.strip():
        raise Invalid("A role needs a name that is not empty or blank.")
    if name != name.strip():
        raise Invalid(f"The role name {as_json(name)} has white space at its start or end: leave it out.")
    if len(name) > MAX_NAME_LENGTH:
        raise Invalid(f"A role's name has at most {MAX_NAME_LENGTH} characters.")
    if re.search(r"[\x00-\x1f\x7f]", name):
        raise Invalid(f"The role name {as_json(name)} holds a control character.")
    return name


def _description(description: str | None) -> str | None:
    """:raise Invalid: longer than :data:`MAX_DESCRIPTION_LENGTH`."""
    if description is not None and len(description) > MAX_DESCRIPTION_LENGTH:
        raise Invalid(f"A role's description has at most {MAX_DESCRIPTION_LENGTH} characters.")
    return description or None


def role_document(role: dict[str, Any]) -> dict[str, Any]:
    """A stored role (``store.roles.get``) as flagadmin shows it and the reference's role events
    carry it: ``{"name", "description", "type" ("project" for a built-in, "custom"),
    "builtIn", "permissions": [{"name"[, "environment"]}]}``."""
    return {
        "name": role["name"],
        "description": role["description"],
        "type": "project" if role["built_in"] else "custom",
        "builtIn": role["built_in"],
        "permissions": [Grant.stored(p, e).wire() for p, e in role["permissions"]],
    }


def list_roles(conn: Connection) -> list[dict[str, Any]]:
    """Every declared role, Owner and Member first, then by name, each as :func:`role_document`."""
    order = list(BUILT_IN)
    stored = store_roles.all_roles(conn)
    # the built-in roles in BUILT_IN's order (Owner, Member), then the others as stored
    stored.sort(key=lambda role: order.index(role["name"]) if role["built_in"] else len(order))
    return [role_document(role) for role in stored]


def _existing(conn: Connection, name: str) -> dict[str, Any]:
    role = store_roles.get(conn, name)
    if role is None:
        raise NotFound(f"There is no role {as_json(name)}. {_declared_sentence(conn)}")
    return role


def _declared_sentence(conn: Connection) -> str:
    return (
        f"The declared roles are {', '.join(r['name'] for r in list_roles(conn))}; an operator declares "
        "another with `flagadmin role create NAME --permission PERMISSION[:ENVIRONMENT] ...`."
    )


def _refuse_built_in(role: dict[str, Any], what: str) -> None:
    if role["built_in"]:
        raise Conflict(
            f"{role['name']} is a built-in role and cannot be {what}. Declare a custom role with "
            "`flagadmin role create NAME --permission PERMISSION[:ENVIRONMENT] ...` instead."
        )


def create(
    conn: Connection,
    actor: Actor,
    name: str,
    grants: Sequence[str | Grant] = (),
    description: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> dict[str, Any]:
    """Declare the custom project role ``name`` granting ``grants`` (``PERMISSION`` or
    ``PERMISSION:ENVIRONMENT`` texts, or :class:`Grant`; none: a read-only role); record
    ``role-created`` with the role as ``data`` (:func:`role_document`). Returns that document.

    :raise Invalid: a bad name or description, a grant :func:`parse_grant` refuses, or an
        environment the install lacks.
    :raise Conflict: a role has that name (or the same name in another case).
    """
    name = _check_name(name)
    description = _description(description)
    with conn.write(LOCK):
        parsed = _grants(conn, grants)
        taken = [n for n in store_roles.names(conn) if n.casefold() == name.casefold()]
        if taken:
            raise Conflict(
                f"A role named {as_json(taken[0])} exists already: choose another name, or change it with "
                "`flagadmin role update`."
            )
        store_roles.insert(
            conn,
            name,
            description,
            clock.now_rfc3339(),
            [(g.permission, g.environment or "") for g in parsed],
        )
        document = role_document(_existing(conn, name))
        events.record(conn, "role-created", actor, data=document, clock=clock)
    return document


def update(
    conn: Connection,
    actor: Actor,
    name: str,
    grants: Sequence[str | Grant] | None = None,
    description: Any = None,
    clock: Clock = SYSTEM_CLOCK,
) -> dict[str, Any] | None:
    """Change what the custom role ``name`` grants (``grants``: all it grants from now on, an
    empty sequence for read-only; None: unchanged) and its description (None: unchanged; ``""``
    removes it); record ``role-updated`` with ``data`` and ``preData``. Its holders get the new
    permissions at once. Returns the role (:func:`role_document`), or None when nothing changed.

    :raise NotFound: no such role.
    :raise Conflict: it is built in.
    :raise Invalid: as :func:`create`.
    """
    with conn.write(LOCK):
        before = _existing(conn, name)
        _refuse_built_in(before, "changed")
        if grants is not None:
            parsed = _grants(conn, grants)
            store_roles.replace_grants(conn, name, [(g.permission, g.environment or "") for g in parsed])
        if description is not None:
            store_roles.set_description(conn, name, _description(description))
        after = _existing(conn, name)
        if role_document(after) == role_document(before):
            return None
        events.record(
            conn,
            "role-updated",
            actor,
            data=role_document(after),
            pre_data=role_document(before),
            clock=clock,
        )
        return role_document(after)


def delete(conn: Connection, actor: Actor, name: str, clock: Clock = SYSTEM_CLOCK) -> None:
    """Delete the custom role ``name``; record ``role-deleted`` with the role as ``preData``.
    Refused while a user holds it in a project or a SCIM group grants it, as the reference
    refuses a role in use.

    :raise NotFound: no such role.
    :raise Conflict: it is built in, or in use (the message names who holds it and how to take
        it back).
    """
    with conn.write(LOCK):
        lock_also(conn, [DIRECTORY_LOCK])
        role = _existing(conn, name)
        _refuse_built_in(role, "deleted")
        held = store_roles.holders(conn, name)
        if held["users"] or held["groups"]:
            raise Conflict(_in_use_message(name, held))
        store_roles.delete(conn, name)
        events.record(conn, "role-deleted", actor, pre_data=role_document(role), clock=clock)


def _in_use_message(name: str, held: dict[str, list[tuple[str, str]]], shown: int = 10) -> str:
    """Why role ``name`` cannot be deleted: who holds it (at most ``shown`` of each kind) and
    how to take it back."""
    parts = []
    for kind, pairs, how in (
        ("user", held["users"], f"`flagadmin project role PROJECT USER {as_json(name)} --remove`"),
        (
            "SCIM group",
            held["groups"],
            f"`flagadmin group-role GROUP --project PROJECT --role {as_json(name)} --remove`",
        ),
    ):
        if not pairs:
            continue
        listed = ", ".join(f"{as_json(who)} in {project}" for who, project in pairs[:shown])
        more = f" and {len(pairs) - shown} more" if len(pairs) > shown else ""
        parts.append(f"{kind}s {listed}{more} (take it back with {how})")
    return (
        f"The role {as_json(name)} is in use, and a role in use cannot be deleted: it is held by "
        + "; ".join(parts)
        + ". Nothing was changed."
    )


def require_declared(conn: Connection, role: str) -> None:
    """Check that ``role`` is a declared role, before it is given in a project.

    :raise Invalid: it is not; the message lists the declared roles and how to declare one.
    """
    if store_roles.get(conn, role) is None:
        raise Invalid(f"There is no role {as_json(role)}. {_declared_sentence(conn)}")


def grantors(permission: str) -> list[str]:
    """The built-in roles that grant ``permission`` (in every environment)."""
    return [name for name, granted in BUILT_IN.items() if permission in granted]


def declare_seeded(conn: Connection, clock: Clock = SYSTEM_CLOCK) -> list[str]:
    """Declare the roles that seed documents gave in projects without declaring them, each with
    every project permission in every environment (what every role granted before roles had
    permissions, so that a seed document means what it meant); call inside the seed load's
    write transaction. Records nothing (a seed load is a bootstrap). Returns their names."""
    declared = store_roles.undeclared_member_roles(conn)
    owner = store_roles.grants(conn, OWNER)
    for name in declared:
        store_roles.insert(conn, name, SEEDED_DESCRIPTION, clock.now_rfc3339(), owner)
    return declared
