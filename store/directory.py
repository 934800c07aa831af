"""SQL of the SCIM directory: users as SCIM sees them, groups and their members, and
the roles groups grant (root roles and project roles, owned by flagadmin).

Rows come back as dicts keyed by column name. Functions that write must run inside the
caller's write transaction (``with conn.write("directory"):``), so that a request's reads and
writes, and its events, are one transaction (on PostgreSQL the lock name also serialises the
writers of every process: a new user's id is the highest one plus 1, read and written under it).
Lists of ids are sent as ``IN (?, ?, ...)`` in chunks of :data:`CHUNK` (one statement for any
realistic request); multi-row ``VALUES`` and ``ON CONFLICT`` upserts read the same on both engines.

Case-insensitive names (userName, a group's displayName, role mappings' group names) are folded
the same way on both engines: ASCII letters to lower case, nothing else (:func:`fold`,
:data:`FOLD`), which is SQLite's ``lower()``; PostgreSQL's ``lower()`` folds every letter its
database's locale knows, so there it runs under the ``"C"`` collation, which folds ASCII only.
Text is ordered by code point on both (:data:`~flagadmin.store.collation.BINARY`), whatever the
database's collation.

It is over 400 lines because it is one subject's SQL (users, groups, members, tokens revoked
with them, the roles groups grant), on both dialects, side by side.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .collation import FOLD, fold
from .engine import Connection
from .scim_filter import Condition

#: Ids per ``IN (...)`` list, rows per multi-row ``VALUES``: under PostgreSQL's 65,535
#: parameters and SQLite's limit, and more than any single SCIM request carries.
CHUNK = 10_000
ROWS_PER_INSERT = 2_000

#: SQL of a user's displayed name (alias ``u``): its displayName, else name.formatted, else
#: its given and family names; NULL when it has none of them.
DISPLAY_NAME = (
    "coalesce(nullif(u.name, ''), nullif(u.formatted_name, ''),"
    " nullif(trim(coalesce(u.given_name, '') || ' ' || coalesce(u.family_name, '')), ''))"
)

#: The columns a SCIM client writes, as :func:`insert_user` and :func:`update_user` take them.
USER_FIELDS = (
    "username",
    "name",
    "email",
    "email_type",
    "email_primary",
    "external_id",
    "given_name",
    "family_name",
    "formatted_name",
    "active",
)

_USER_COLUMNS = (
    "u.id, u.username, u.name, u.email, u.email_type, u.email_primary, u.external_id, u.given_name,"
    " u.family_name, u.formatted_name, u.active, u.scim_managed, u.root_role, u.created_at,"
    " u.last_modified, u.version"
)
_GROUP_FIELDS = ("id", "display_name", "external_id", "created_at", "last_modified", "version")
_GROUP_COLUMNS = ", ".join(f"g.{name}" for name in _GROUP_FIELDS)


def _chunks(values: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _marks(n: int) -> str:
    return ", ".join("?" * n)


# --- users ----------------------------------------------------------------------------------


def user(conn: Connection, user_id: int) -> dict[str, Any] | None:
    """The live (not deleted) user ``user_id``: the columns of :data:`USER_FIELDS` plus ``id``,
    ``scim_managed``, ``root_role``, ``created_at``, ``last_modified``, ``version``; or None."""
    return conn.one(f"SELECT {_USER_COLUMNS} FROM users u WHERE u.id = ? AND u.deleted_at IS NULL", [user_id])


def users_page(
    conn: Connection, where: Condition | None, offset: int, limit: int
) -> tuple[int, list[dict[str, Any]]]:
    """Live users matching ``where`` (a filter's condition; None: all): their total count, and
    ``limit`` of them after the first ``offset``, by id (a stable order). ``limit`` 0 reads the
    count alone."""
    condition = f" AND {where.sql}" if where else ""
    params = where.params if where else []
    total = conn.value(f"SELECT count(*) FROM users u WHERE u.deleted_at IS NULL{condition}", params)
    if limit == 0 or total <= offset:
        return total, []
    rows = conn.all(
        f"SELECT {_USER_COLUMNS} FROM users u WHERE u.deleted_at IS NULL{condition}"
        " ORDER BY u.id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return total, rows


def user_conflict(
    conn: Connection, username: str, external_id: str | None, exclude_id: int | None = None
) -> str | None:
    """The SCIM attribute (``userName`` or ``externalId``) that another live user already
    holds (userName whatever its case), or None."""
    other = exclude_id or 0
    if conn.value(
        f"SELECT 1 FROM users WHERE {FOLD[conn.dialect].format('username')} = ? AND deleted_at IS NULL"
        " AND id <> ?",
        [fold(username), other],
    ):
        return "userName"
    if external_id is not None and conn.value(
        "SELECT 1 FROM users WHERE external_id = ? AND id <> ?", [external_id, other]
    ):
        return "externalId"
    return None


def insert_user(conn: Connection, fields: dict[str, Any], now: str) -> int:
    """Insert a SCIM-managed user (root role Viewer) with ``fields`` (keys of
    :data:`USER_FIELDS`); return its id: the highest id plus 1, as SQLite gives a rowid (users
    have explicit ids from seeds, so PostgreSQL has no sequence for them). Call it inside
    ``conn.write("directory")``, which serialises the writers that compute ids.

    :raise flagadmin.store.Conflict: the userName or externalId is taken.
    """
    columns = ", ".join(USER_FIELDS)
    return conn.insert(
        f"INSERT INTO users (id, {columns}, root_role, scim_managed, created_at, last_modified, version)"
        f" VALUES ((SELECT coalesce(max(id), 0) + 1 FROM users), {_marks(len(USER_FIELDS))},"
        " 'Viewer', 1, ?, ?, 1)",
        [*(fields[name] for name in USER_FIELDS), now, now],
    )


def update_user(conn: Connection, user_id: int, fields: dict[str, Any], now: str) -> None:
    """Set ``fields`` (keys of :data:`USER_FIELDS`) of user ``user_id``, mark it SCIM-managed,
    and move its ``last_modified`` and ``version``.

    :raise flagadmin.store.Conflict: the userName or externalId is taken.
    """
    assignments = ", ".join(f"{name} = ?" for name in USER_FIELDS)
    conn.run(
        f"UPDATE users SET {assignments}, scim_managed = 1, last_modified = ?, version = version + 1"
        " WHERE id = ?",
        [*(fields[name] for name in USER_FIELDS), now, user_id],
    )


def tombstone_user(conn: Connection, user_id: int, now: str) -> None:
    """Delete user ``user_id`` as SCIM does: keep the row (its flags and events still name it)
    but free its userName and externalId, deactivate it, and remove it from its groups."""
    conn.run("DELETE FROM directory_group_members WHERE user_id = ?", [user_id])
    conn.run(
        "UPDATE users SET username = ?, external_id = NULL, active = 0, deleted_at = ?,"
        " scim_managed = 1, last_modified = ?, version = version + 1 WHERE id = ?",
        [f"deleted:{user_id}:{secrets.token_hex(8)}", now, now, user_id],
    )


def revoke_personal_tokens(conn: Connection, user_id: int, now: str) -> list[dict[str, Any]]:
    """Revoke every unrevoked personal access token of ``user_id`` at ``now``; return them
    (``{"id", "name"}``), oldest first."""
    tokens = conn.all(
        "SELECT id, name FROM api_tokens WHERE user_id = ? AND revoked_at IS NULL ORDER BY id", [user_id]
    )
    if tokens:
        conn.run(
            "UPDATE api_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", [now, user_id]
        )
    return tokens


def groups_of_users(conn: Connection, user_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """The groups of each user (``{"id", "display_name"}`` by group id), for every id given."""
    found: dict[int, list[dict[str, Any]]] = {user_id: [] for user_id in user_ids}
    for chunk in _chunks(list(user_ids)):
        for row in conn.all(
            "SELECT m.user_id, g.id, g.display_name FROM directory_group_members m"
            f" JOIN directory_groups g ON g.id = m.group_id WHERE m.user_id IN ({_marks(len(chunk))})"
            " ORDER BY m.user_id, g.id",
            list(chunk),
        ):
            found[row.pop("user_id")].append(row)
    return found


def usernames(conn: Connection, user_ids: Iterable[int]) -> dict[int, str]:
    """``{id: username}`` of the live users among ``user_ids`` (unknown and deleted ids are
    left out)."""
    ids = sorted(set(user_ids))
    found: dict[int, str] = {}
    for chunk in _chunks(ids):
        for row in conn.all(
            f"SELECT id, username FROM users WHERE deleted_at IS NULL AND id IN ({_marks(len(chunk))})",
            list(chunk),
        ):
            found[row["id"]] = row["username"]
    return found


def bulk_insert_users(conn: Connection, users: Iterable[dict[str, Any]], now: str) -> None:
    """Insert SCIM-managed users from dicts of :data:`USER_FIELDS` (missing keys: NULL) in
    multi-row statements, with ids following the highest one (as :func:`insert_user`): test
    fixtures and benchmarks build thousands this way. Call it inside ``conn.write("directory")``."""
    first = conn.value("SELECT coalesce(max(id), 0) + 1 FROM users")
    rows = [(first + n, *(user.get(name) for name in USER_FIELDS)) for n, user in enumerate(users)]
    columns = ", ".join(USER_FIELDS)
    one = f"(?, {_marks(len(USER_FIELDS))}, 'Viewer', 1, ?, ?, 1)"
    for chunk in _chunks(rows, ROWS_PER_INSERT):
        conn.run(
            f"INSERT INTO users (id, {columns}, root_role, scim_managed, created_at, last_modified, version)"
            f" VALUES {', '.join([one] * len(chunk))}",
            [value for row in chunk for value in (*row, now, now)],
        )


# --- groups ---------------------------------------------------------------------------------


def group(conn: Connection, group_id: int) -> dict[str, Any] | None:
    """Group ``group_id``: ``{"id", "display_name", "external_id", "created_at",
    "last_modified", "version"}``, or None."""
    return conn.one(f"SELECT {_GROUP_COLUMNS} FROM directory_groups g WHERE g.id = ?", [group_id])


def groups_page(
    conn: Connection, where: Condition | None, offset: int, limit: int
) -> tuple[int, list[dict[str, Any]]]:
    """Groups matching ``where`` (None: all): their total count and ``limit`` of them after
    the first ``offset``, by id. ``limit`` 0 reads the count alone."""
    condition = f" WHERE {where.sql}" if where else ""
    params = where.params if where else []
    total = conn.value(f"SELECT count(*) FROM directory_groups g{condition}", params)
    if limit == 0 or total <= offset:
        return total, []
    rows = conn.all(
        f"SELECT {_GROUP_COLUMNS} FROM directory_groups g{condition} ORDER BY g.id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return total, rows


def group_conflict(
    conn: Connection, display_name: str, external_id: str | None, exclude_id: int | None = None
) -> str | None:
    """The SCIM attribute (``displayName`` whatever its case, or ``externalId``) that another
    group already holds, or None."""
    other = exclude_id or 0
    if conn.value(
        "SELECT 1 FROM directory_groups WHERE name_key = ? AND id <> ?",
        [fold(display_name), other],
    ):
        return "displayName"
    if external_id is not None and conn.value(
        "SELECT 1 FROM directory_groups WHERE external_id = ? AND id <> ?", [external_id, other]
    ):
        return "externalId"
    return None


def insert_group(conn: Connection, display_name: str, external_id: str | None, now: str) -> int:
    """Insert a group; return its id (never one a deleted group had).

    :raise flagadmin.store.Conflict: the displayName or externalId is taken.
    """
    return conn.insert(
        "INSERT INTO directory_groups (display_name, name_key, external_id, created_at, last_modified,"
        " version) VALUES (?, ?, ?, ?, ?, 1)",
        [display_name, fold(display_name), external_id, now, now],
    )


def update_group(
    conn: Connection, group_id: int, display_name: str, external_id: str | None, now: str
) -> dict[str, Any] | None:
    """Set a group's displayName and externalId and move its ``last_modified`` and ``version``
    (also when only its members changed); return the stored row as :func:`group` reads it
    (None: no such group), in the same statement.

    :raise flagadmin.store.Conflict: the displayName or externalId is taken.
    """
    rows = conn.all(
        "UPDATE directory_groups SET display_name = ?, name_key = ?, external_id = ?,"
        " last_modified = ?, version = version + 1 WHERE id = ?"
        f" RETURNING {', '.join(_GROUP_FIELDS)}",
        [display_name, fold(display_name), external_id, now, group_id],
    )
    return rows[0] if rows else None


def delete_group(conn: Connection, group_id: int) -> None:
    """Remove group ``group_id`` and its memberships (its role mappings stay: they belong to
    flagadmin, by name)."""
    conn.run("DELETE FROM directory_group_members WHERE group_id = ?", [group_id])
    conn.run("DELETE FROM directory_groups WHERE id = ?", [group_id])


def member_counts(conn: Connection, group_ids: Sequence[int]) -> dict[int, int]:
    """``{group id: number of members}`` for every id given."""
    counts = dict.fromkeys(group_ids, 0)
    for chunk in _chunks(list(group_ids)):
        for row in conn.all(
            "SELECT group_id, count(*) AS n FROM directory_group_members"
            f" WHERE group_id IN ({_marks(len(chunk))}) GROUP BY group_id",
            list(chunk),
        ):
            counts[row["group_id"]] = row["n"]
    return counts


def members(conn: Connection, group_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """The members of each group, by user id: ``{"user_id", "display"}`` where ``display`` is
    what the client sent, else the user's displayed name, else its username."""
    found: dict[int, list[dict[str, Any]]] = {group_id: [] for group_id in group_ids}
    for chunk in _chunks(list(group_ids)):
        for row in conn.all(
            f"SELECT m.group_id, m.user_id, coalesce(m.display, {DISPLAY_NAME}, u.username) AS display"
            " FROM directory_group_members m JOIN users u ON u.id = m.user_id"
            f" WHERE m.group_id IN ({_marks(len(chunk))}) ORDER BY m.group_id, m.user_id",
            list(chunk),
        ):
            found[row.pop("group_id")].append(row)
    return found


def stored_members(
    conn: Connection, group_id: int, user_ids: Iterable[int] | None = None
) -> dict[int, str | None]:
    """``{user id: display as the client sent it (or None)}`` of group ``group_id``: every
    member, or (``user_ids`` given) those of ``user_ids`` that are members, each looked up in
    the membership's primary key, so that a PATCH naming one member of a 10,000-member group
    reads one row, not 10,000."""
    if user_ids is None:
        rows = conn.all("SELECT user_id, display FROM directory_group_members WHERE group_id = ?", [group_id])
        return {row["user_id"]: row["display"] for row in rows}
    found: dict[int, str | None] = {}
    for chunk in _chunks(sorted(set(user_ids))):
        for row in conn.all(
            "SELECT user_id, display FROM directory_group_members"
            f" WHERE group_id = ? AND user_id IN ({_marks(len(chunk))})",
            [group_id, *chunk],
        ):
            found[row["user_id"]] = row["display"]
    return found


def write_members(conn: Connection, group_id: int, members: dict[int, str | None]) -> None:
    """Add each user of ``members`` to group ``group_id``, or set the display of one already
    in it (a None display keeps the stored one)."""
    rows = list(members.items())
    for chunk in _chunks(rows, ROWS_PER_INSERT):
        conn.run(
            "INSERT INTO directory_group_members (group_id, user_id, display)"
            f" VALUES {', '.join(['(?, ?, ?)'] * len(chunk))}"
            # the stored row by the table's name: PostgreSQL finds a bare column ambiguous
            " ON CONFLICT (group_id, user_id) DO UPDATE"
            " SET display = coalesce(excluded.display, directory_group_members.display)",
            [value for user_id, display in chunk for value in (group_id, user_id, display)],
        )


def remove_members(conn: Connection, group_id: int, user_ids: Iterable[int]) -> None:
    """Remove the users ``user_ids`` from group ``group_id`` (absent ones are ignored)."""
    ids = sorted(set(user_ids))
    for chunk in _chunks(ids):
        conn.run(
            f"DELETE FROM directory_group_members WHERE group_id = ? AND user_id IN ({_marks(len(chunk))})",
            [group_id, *chunk],
        )


def groups_of_user(conn: Connection, user_id: int) -> list[dict[str, Any]]:
    """The groups user ``user_id`` is a member of: ``{"id", "display_name"}``, by id."""
    return conn.all(
        "SELECT g.id, g.display_name FROM directory_group_members m"
        " JOIN directory_groups g ON g.id = m.group_id WHERE m.user_id = ? ORDER BY g.id",
        [user_id],
    )


# --- the roles groups grant (owned by flagadmin) ---------------------------------------------


def group_key(group_name: str) -> str:
    """The key a group name is mapped under: the name folded by :func:`fold`, the same fold as
    the groups' ``name_key``."""
    return fold(group_name)


def group_role_mappings(conn: Connection, group_name: str | None = None) -> list[dict[str, Any]]:
    """What each mapped group grants, by group key (one group's when ``group_name`` is given):
    ``{"group", "root_role" (or None), "projects": {project id: [roles, sorted]},
    "group_id" (the SCIM group's id, or None when SCIM has not created it), "members"}``."""
    key = None if group_name is None else group_key(group_name)
    where = "" if key is None else " WHERE group_key = ?"
    params = [] if key is None else [key]
    mappings: dict[str, dict[str, Any]] = {}

    def entry(row: dict[str, Any]) -> dict[str, Any]:
        return mappings.setdefault(
            row["group_key"], {"group": row["group_name"], "root_role": None, "projects": {}}
        )

    for row in conn.all(f"SELECT group_key, group_name, root_role FROM group_root_roles{where}", params):
        entry(row)["root_role"] = row["root_role"]
    for row in conn.all(
        f"SELECT group_key, group_name, project_id, role FROM group_project_roles{where}", params
    ):
        entry(row)["projects"].setdefault(row["project_id"], []).append(row["role"])
    for mapping in mappings.values():
        # by code point, on either engine (not by a PostgreSQL database's locale)
        mapping["projects"] = {
            project: sorted(mapping["projects"][project]) for project in sorted(mapping["projects"])
        }
    for group_key_, mapping in mappings.items():
        found = conn.one(
            "SELECT g.id, g.display_name, (SELECT count(*) FROM directory_group_members m"
            " WHERE m.group_id = g.id) AS n FROM directory_groups g WHERE g.name_key = ?",
            [group_key_],
        )
        mapping["group_id"] = found["id"] if found else None
        mapping["members"] = found["n"] if found else 0
        if found:
            mapping["group"] = found["display_name"]
    return [mappings[key_] for key_ in sorted(mappings)]


def root_role_of_group(conn: Connection, group_name: str) -> str | None:
    """The root role group ``group_name`` grants, or None."""
    return conn.value("SELECT root_role FROM group_root_roles WHERE group_key = ?", [fold(group_name)])


def set_root_role_of_group(conn: Connection, group_name: str, root_role: str | None) -> None:
    """Make group ``group_name`` grant ``root_role`` (None: none)."""
    if root_role is None:
        conn.run("DELETE FROM group_root_roles WHERE group_key = ?", [fold(group_name)])
        return
    conn.run(
        "INSERT INTO group_root_roles (group_key, group_name, root_role) VALUES (?, ?, ?)"
        " ON CONFLICT (group_key) DO UPDATE SET group_name = excluded.group_name,"
        " root_role = excluded.root_role",
        [fold(group_name), group_name, root_role],
    )


def project_roles_of_group(conn: Connection, group_name: str, project_id: str) -> list[str]:
    """The roles group ``group_name`` grants in project ``project_id``, sorted by code point."""
    return sorted(
        conn.values(
            "SELECT role FROM group_project_roles WHERE group_key = ? AND project_id = ?",
            [fold(group_name), project_id],
        )
    )


def add_project_role_of_group(conn: Connection, group_name: str, project_id: str, role: str) -> None:
    """Make group ``group_name`` grant ``role`` in ``project_id`` (idempotent)."""
    conn.run(
        "INSERT INTO group_project_roles (group_key, group_name, project_id, role)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (group_key, project_id, role) DO NOTHING",
        [fold(group_name), group_name, project_id, role],
    )


def remove_project_role_of_group(conn: Connection, group_name: str, project_id: str, role: str) -> None:
    """Stop group ``group_name`` granting ``role`` in ``project_id`` (idempotent)."""
    conn.run(
        "DELETE FROM group_project_roles WHERE group_key = ? AND project_id = ? AND role = ?",
        [fold(group_name), project_id, role],
    )


def project_exists(conn: Connection, project_id: str) -> bool:
    """True when project ``project_id`` exists."""
    return conn.value("SELECT 1 FROM projects WHERE id = ?", [project_id]) is not None


def is_scim_managed(conn: Connection, username: str) -> bool:
    """True when the live user ``username`` is managed by SCIM: read-only outside SCIM."""
    return bool(
        conn.value("SELECT scim_managed FROM users WHERE username = ? AND deleted_at IS NULL", [username])
    )


def is_active(conn: Connection, username: str) -> bool:
    """True when the live user ``username`` is active (not deactivated by the directory)."""
    return bool(
        conn.value(
            "SELECT 1 FROM users WHERE username = ? AND deleted_at IS NULL AND coalesce(active, 1) = 1",
            [username],
        )
    )
