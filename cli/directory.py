"""The roles SCIM groups grant: ``group-role`` shows or changes what the members of a group
(named by its displayName) get, a root role or a role in a project, as the admin API's group
role mappings do. Each change records its event with the command line as actor.
"""

from __future__ import annotations

from typing import Any

import click

from .. import events, refusals
from ..directory import role_mappings
from ..spec import ROOT_ROLES
from ..timestamps import SYSTEM_CLOCK
from .common import database_option, open_database


def _describe_mapping(mapping: dict[str, Any]) -> str:
    """What a group grants (a mapping in the admin API's shape), in one line."""
    grants = []
    if mapping["rootRole"]:
        grants.append(f"root role {mapping['rootRole']}")
    grants += [f"{', '.join(p['roles'])} in project {p['project']}" for p in mapping["projects"]]
    scim = (
        f"SCIM group id {mapping['scimGroupId']}, {mapping['members']} members"
        if mapping["scimGroupId"]
        else "no SCIM group of this name yet"
    )
    return f"Group {mapping['group']!r} grants {'; '.join(grants) if grants else 'nothing'} ({scim})."


@click.command("group-role")
@database_option()
@click.argument("group")
@click.option("--root-role", type=click.Choice(ROOT_ROLES), help="A root role for its members.")
@click.option("--project", "project_id", metavar="ID", help="A project to give its members a role in.")
@click.option(
    "--role",
    metavar="ROLE",
    help="With --project: Owner, Member or a declared custom role (`flagadmin role list`).",
)
@click.option("--remove", is_flag=True, help="Take the root role or project role back instead.")
def group_role(
    database: str, group: str, root_role: str | None, project_id: str | None, role: str | None, remove: bool
) -> None:
    """Decide what the members of the SCIM group GROUP (its displayName, any case) get: a root
    role (they get the highest of their own and their groups'), or a role in a project, as if
    given to each of them. The group may not exist yet. With no option, show what GROUP grants.
    Recorded as group-updated (root role) or project-access-group-roles-updated.

    \b
    Examples:
      flagadmin group-role "Flag admins" --root-role Admin
      flagadmin group-role "Checkout team" --project checkout --role Owner
      flagadmin group-role "Checkout team" --project checkout --role Owner --remove
    """
    wants_project = project_id is not None or role is not None
    if root_role is not None and wants_project:
        raise click.UsageError("Give --root-role, or --project with --role, not both.")
    if wants_project and (project_id is None or role is None):
        raise click.UsageError("--project and --role go together.")
    if remove and root_role is None and not wants_project:
        raise click.UsageError("--remove needs --root-role, or --project with --role.")
    with open_database(database) as conn:
        try:
            if root_role is not None:
                change = role_mappings.remove_group_root_role if remove else role_mappings.set_group_root_role
                mapping = change(conn, group, root_role, events.COMMAND_LINE, SYSTEM_CLOCK)
            elif wants_project:
                mapping = role_mappings.change_group_project_role(
                    conn,
                    group,
                    project_id,
                    role,
                    remove=remove,
                    actor=events.COMMAND_LINE,
                    clock=SYSTEM_CLOCK,
                )
            else:
                found = role_mappings.group_roles(conn, group)
                mapping = found[0] if found else role_mappings.unmapped(group)
        except refusals.Refusal as exc:
            raise click.ClickException(f"{exc.message} Nothing was changed.") from exc
    click.echo(_describe_mapping(mapping))


#: The commands this module adds to ``flagadmin``.
COMMANDS = (group_role,)
