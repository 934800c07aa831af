"""Projects and environments, which only an operator changes (the API does not): ``project
create``, ``update`` and ``delete``, ``project role`` (a user's role in a project), and
``environment add``. Each change records its event with the command line as actor; a change
the domain refuses exits with its message and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .. import events, refusals
from ..flags import projects
from ..flags.names import ENVIRONMENT_TYPES
from .common import database_option, open_database


def _changed(database: str, change: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``change`` (a change of :mod:`flagadmin.flags.projects`) on ``database`` with the
    command line as actor and return what it returns; a :class:`~flagadmin.refusals.Refusal`
    exits with its message (exit code 1; nothing was written)."""
    with open_database(database) as conn:
        try:
            return change(conn, events.COMMAND_LINE, *args, **kwargs)
        except refusals.Refusal as exc:
            raise click.ClickException(exc.message) from exc


@click.group("project")
def project_group() -> None:
    """Create, change and delete projects, and give users roles in them. Each change records
    its event (project-created, project-updated, project-deleted, project-user-added,
    project-user-removed, project-user-role-changed). Every subcommand takes --db.

    \b
    Example:
      flagadmin project create checkout --name "Checkout"
    """


@project_group.command("create")
@database_option()
@click.argument("project_id", metavar="ID")
@click.option("--name", help="Display name (default: the id).")
@click.option("--description", help="What the project is for.")
def project_create(database: str, project_id: str, name: str | None, description: str | None) -> None:
    """Create the project ID (URL-friendly, at most 100 characters).

    \b
    Example:
      flagadmin project create checkout --name "Checkout" --description "Cart and payment"
    """
    project = _changed(database, projects.create, project_id, name, description)
    click.echo(f"Created project {project['id']} ({project['name']}).")


@project_group.command("update")
@database_option()
@click.argument("project_id", metavar="ID")
@click.option("--name", help="New display name.")
@click.option("--description", help='New description ("" removes it).')
def project_update(database: str, project_id: str, name: str | None, description: str | None) -> None:
    """Change the name or description of the project ID.

    \b
    Example:
      flagadmin project update checkout --description "Cart, payment and receipts"
    """
    if name is None and description is None:
        raise click.UsageError("Give --name, --description or both.")
    kwargs = {} if description is None else {"description": description}
    changed = _changed(database, projects.update, project_id, name, **kwargs)
    click.echo(f"Updated project {project_id}." if changed else f"Project {project_id} already was so.")


@project_group.command("delete")
@database_option()
@click.argument("project_id", metavar="ID")
def project_delete(database: str, project_id: str) -> None:
    """Delete the project ID, its members' roles, its segments, and the client and frontend
    tokens that read it alone (tokens of several projects keep the others). Refused while it
    holds flags, live or archived: archive and delete them first (the message says how).

    \b
    Example:
      flagadmin project delete checkout
    """
    _changed(database, projects.delete, project_id)
    click.echo(f"Deleted project {project_id}.")


@project_group.command("role")
@database_option()
@click.argument("project_id", metavar="PROJECT")
@click.argument("username", metavar="USER")
@click.argument("role", metavar="ROLE")
@click.option("--remove", is_flag=True, help="Take ROLE from USER instead.")
def project_role(database: str, project_id: str, username: str, role: str, remove: bool) -> None:
    """Make ROLE (Owner, Member or a custom role declared with `flagadmin role create`) USER's
    role in PROJECT, replacing any other she has there; with --remove, take ROLE from her. She
    may then do in the project what ROLE grants (`flagadmin role list`); any role lets her see
    the project's flags.

    \b
    Examples:
      flagadmin project role checkout alice Owner
      flagadmin project role checkout alice Owner --remove
    """
    if remove:
        _changed(database, projects.remove_role, project_id, username, role)
        click.echo(f"{username} no longer holds {role} in {project_id}.")
        return
    outcome = _changed(database, projects.set_role, project_id, username, role)
    click.echo(
        {
            "added": f"{username} now holds {role} in {project_id}.",
            "changed": f"{username}'s role in {project_id} is now {role}.",
            "unchanged": f"{username} already holds {role} in {project_id}.",
        }[outcome]
    )


@click.group("environment")
def environment_group() -> None:
    """Add environments to the install (environment-created). Every flag can be switched on
    and off in each of them. Every subcommand takes --db.

    \b
    Example:
      flagadmin environment add staging --type test
    """


@environment_group.command("add")
@database_option()
@click.argument("name")
@click.option(
    "--type",
    "type_",
    default="development",
    show_default=True,
    type=click.Choice(ENVIRONMENT_TYPES),
    help="Kind of environment.",
)
@click.option(
    "--sort-order",
    default=0,
    show_default=True,
    type=click.IntRange(-(2**31), 2**31 - 1),
    help="Position in lists (then name); a 32-bit integer, as in seed documents.",
)
def environment_add(database: str, name: str, type_: str, sort_order: int) -> None:
    """Add the environment NAME: every live flag gets it, switched off.

    \b
    Example:
      flagadmin environment add staging --type test --sort-order 2
    """
    environment = _changed(database, projects.add_environment, name, type_, sort_order)
    click.echo(f"Added environment {environment['name']} ({environment['type']}).")


#: The commands this module adds to ``flagadmin``.
COMMANDS = (project_group, environment_group)
