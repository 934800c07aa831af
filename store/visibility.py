"""Which projects a caller sees: SQL shared by the operations that filter by project.

Project roles are read from the ``project_roles`` view of ``schema.sql``: the roles given to a
user directly (``project_members``) and those its SCIM groups grant (``group_project_roles``,
issue 9), for active users only. Both kinds count the same everywhere.
"""

#: SQL condition on a ``project_id`` column: true when the caller sees the project.
#: Parameters: ``:sees_all`` (1 for Admins and Editors, else 0: compared with ``= 1``, since
#: PostgreSQL takes no integer as a boolean) and ``:user_id``.
VISIBLE_PROJECT = (
    "(:sees_all = 1 OR {column} IN (SELECT project_id FROM project_roles WHERE user_id = :user_id))"
)


def visible(column: str) -> str:
    """Return the visibility condition for ``column`` (a trusted column name, not input)."""
    return VISIBLE_PROJECT.format(column=column)


def project_roles(conn, user_id: int | None, project_id: str) -> set[str]:
    """Return the names of the roles ``user_id`` holds in project ``project_id`` (``Owner``,
    ``Member`` or a custom role's name); empty for no role, an unknown project, or no user
    (an admin API token).

    Reads the ``project_roles`` view: roles given to the user directly and roles granted
    through its SCIM groups (issue 9); a deactivated user holds none. Permission checks ask
    this function and nothing else.
    """
    if user_id is None:
        return set()
    return set(
        conn.values(
            "SELECT DISTINCT role FROM project_roles WHERE project_id = ? AND user_id = ?",
            [project_id, user_id],
        )
    )
