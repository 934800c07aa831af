"""Which projects a caller sees: SQL shared by the operations that filter by project.

Project roles are read from the ``project_roles`` view of ``schema.sql``: the roles given to a
user directly (``project_members``) and those its SCIM groups grant (``group_project_roles``),
for active users only. Both kinds count the same everywhere.
"""

#: The SQL dialects of the store (``conn.dialect``), for statements built per dialect.
DIALECTS = ("sqlite", "postgresql")

#: SQL condition on a ``project_id`` column for a caller who sees only the projects where it
#: holds a role, per dialect. Parameter: ``:user_id``. On PostgreSQL the caller's projects are
#: read first, as an array (an InitPlan), and the column is matched against it: with ``IN
#: (SELECT ...)`` the planner joined every project owner (1,000 at the reference size) to
#: every active user to keep the few in the caller's projects, where the array lets it seek
#: each project in the ``(role, project_id)`` index: a Viewer's project owners (4.2) 2.4-3.1 ms
#: -> 0.25-0.30 ms, 4.4's rows and count unchanged (bench/journal/). SQLite's planner does
#: the seek with ``IN`` already.
VISIBLE_PROJECT = {
    "sqlite": "{column} IN (SELECT project_id FROM project_roles WHERE user_id = :user_id)",
    "postgresql": "{column} = ANY (ARRAY(SELECT project_id FROM project_roles WHERE user_id = :user_id))",
}


def visible(column: str, sees_all: bool, dialect: str) -> str:
    """Return the visibility condition for ``column`` (a trusted column name, not input) in
    ``dialect`` (``"sqlite"`` or ``"postgresql"``): none (``1 = 1``) for a caller who sees every
    project (Admins and Editors), else :data:`VISIBLE_PROJECT`. Two statements rather than one
    with ``:sees_all = 1 OR ...``: with the OR, SQLite's planner cannot use the ``(project_id,
    ...)`` indexes for the caller who sees few projects, and reads every row (4.4 of a Viewer:
    32 ms instead of 0.3 ms).

    :raise KeyError: ``dialect`` is neither.
    """
    return "1 = 1" if sees_all else VISIBLE_PROJECT[dialect].format(column=column)


def project_roles(conn, user_id: int | None, project_id: str) -> set[str]:
    """Return the names of the roles ``user_id`` holds in project ``project_id`` (``Owner``,
    ``Member`` or a custom role's name); empty for no role, an unknown project, or no user
    (an admin API token).

    Reads the ``project_roles`` view: roles given to the user directly and roles granted
    through its SCIM groups; a deactivated user holds none. Permission checks ask
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
