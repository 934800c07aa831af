"""Project roles and the permissions they grant: ``role create``, ``role update``, ``role list``
and ``role delete`` (:mod:`flagadmin.permissions.roles`). Each change records its event
(role-created, role-updated, role-deleted) with the command line as actor. A ``--permission``
the install cannot grant (an unknown permission, an environment on a permission granted in the
whole project, an environment the install lacks) is a usage error (exit status 2); a change the
domain refuses (a name taken, a built-in role, a role in use) exits with status 1. Neither
writes anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .. import events, refusals
from ..permissions import roles
from .common import database_option, open_database

PERMISSION_HELP = (
    "A permission the role grants: PERMISSION in the whole project (in every environment for one "
    "granted per environment), or PERMISSION:ENVIRONMENT in one environment. Repeat for more."
)


def _permission_option(help_text: str = PERMISSION_HELP) -> Callable[[Callable[..., Any]], Any]:
    """The ``--permission`` option (repeatable), with ``help_text``."""
    return click.option(
        "--permission", "permissions", multiple=True, metavar="PERMISSION[:ENVIRONMENT]", help=help_text
    )


def _changed(database: str, change: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``change`` (a change of :mod:`flagadmin.permissions.roles`) on ``database`` with the
    command line as actor. A ``--permission`` the role cannot grant
    (:class:`~flagadmin.permissions.roles.GrantError`) exits with status 2 (a usage error); any
    other refusal with its message and status 1."""
    with open_database(database) as conn:
        try:
            return change(conn, events.COMMAND_LINE, *args, **kwargs)
        except refusals.Refusal as exc:
            if isinstance(exc, roles.GrantError):
                raise click.BadParameter(exc.message, param_hint="'--permission'") from exc
            raise click.ClickException(exc.message) from exc


def _parsed(permissions: tuple[str, ...]) -> list[roles.Grant]:
    """``--permission`` values as grants (the environments are looked up by the change).

    :raise click.BadParameter: a value :func:`~flagadmin.permissions.roles.parse_grant` refuses.
    """
    try:
        return [roles.parse_grant(text) for text in permissions]
    except roles.GrantError as exc:
        raise click.BadParameter(exc.message, param_hint="'--permission'") from exc


def _describe(role: dict[str, Any]) -> str:
    """A role in one line: its name, built in or custom, and what it grants, in the notation
    ``--permission`` takes."""
    grants = [roles.Grant(p["name"], p.get("environment")) for p in role["permissions"]]
    granted = ", ".join(str(g) for g in grants) if grants else "no permission (read-only)"
    kind = "built in" if role["builtIn"] else "custom"
    return f"{role['name']} ({kind}): {granted}"


@click.group("role")
def role_group() -> None:
    """Declare project roles and what they grant. Owner (every project permission) and Member
    (the flags' work, not the project's administration) are built in; a custom role grants the
    permissions it is declared with, a role with none is read-only. Give a role with `flagadmin
    project role` or `flagadmin group-role`. Every subcommand takes --db.

    \b
    Example:
      flagadmin role create Shipper --permission UPDATE_FEATURE_ENVIRONMENT:production
    """


@role_group.command("create")
@database_option()
@click.argument("name")
@_permission_option()
@click.option("--description", help="What the role is for.")
def role_create(database: str, name: str, permissions: tuple[str, ...], description: str | None) -> None:
    """Declare the project role NAME granting each --permission (none: a read-only role, whose
    holders see the project's flags and change nothing). Recorded as role-created.

    \b
    Examples:
      flagadmin role create Developer --permission CREATE_FEATURE --permission UPDATE_FEATURE \\
          --permission UPDATE_FEATURE_ENVIRONMENT:development
      flagadmin role create Auditor --description "Sees every flag of its projects"
    """
    grants = _parsed(permissions)
    role = _changed(database, roles.create, name, grants=grants, description=description)
    click.echo(f"Declared role {_describe(role)}.")


@role_group.command("update")
@database_option()
@click.argument("name")
@_permission_option(PERMISSION_HELP + " Replaces every permission the role granted.")
@click.option("--read-only", is_flag=True, help="Take every permission from the role: it grants nothing.")
@click.option("--description", help='New description ("" removes it).')
def role_update(
    database: str, name: str, permissions: tuple[str, ...], read_only: bool, description: str | None
) -> None:
    """Change what the custom role NAME grants (its holders get it at once) or its
    description. Recorded as role-updated.

    \b
    Examples:
      flagadmin role update Shipper --permission UPDATE_FEATURE_ENVIRONMENT
      flagadmin role update Contractors --read-only
    """
    if permissions and read_only:
        raise click.UsageError("Give --permission or --read-only, not both.")
    if not permissions and not read_only and description is None:
        raise click.UsageError("Give --permission, --read-only or --description.")
    grants = _parsed(permissions) if permissions else ([] if read_only else None)
    role = _changed(database, roles.update, name, grants=grants, description=description)
    click.echo(f"Updated role {_describe(role)}." if role else f"Role {name} already was so.")


@role_group.command("list")
@database_option()
def role_list(database: str) -> None:
    """List the declared roles, built-in ones first: each with what it grants, as --permission
    writes it.

    \b
    Example:
      flagadmin role list
    """
    with open_database(database) as conn:
        for role in roles.list_roles(conn):
            click.echo(_describe(role))


@role_group.command("delete")
@database_option()
@click.argument("name")
def role_delete(database: str, name: str) -> None:
    """Delete the custom role NAME. Refused for a built-in role, and while a user holds it in a
    project or a SCIM group grants it (the message names them and how to take it back).
    Recorded as role-deleted.

    \b
    Example:
      flagadmin role delete Contractors
    """
    _changed(database, roles.delete, name)
    click.echo(f"Deleted role {name}.")


#: The commands this module adds to ``flagadmin``.
COMMANDS = (role_group,)
