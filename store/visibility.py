"""Which projects a caller sees: SQL shared by the operations that filter by project."""

#: SQL condition on a ``project_id`` column: true when the caller sees the project.
#: Parameters: ``:sees_all`` (1 for Admins and Editors) and ``:user_id``.
VISIBLE_PROJECT = (
    "(:sees_all OR {column} IN (SELECT project_id FROM project_members WHERE user_id = :user_id))"
)


def visible(column: str) -> str:
    """Return the visibility condition for ``column`` (a trusted column name, not input)."""
    return VISIBLE_PROJECT.format(column=column)
