"""SCIM groups (RFC 7643 section 4.2; RFC 7644 sections 3.3 create, 3.4.1 and 3.4.2 read and
list, 3.5.1 replace, 3.5.2 PATCH, 3.6 delete): a group's SCIM document, written from its rows,
and the operations of ``/Groups``; what they do to members is
:mod:`~flagadmin.directory.members`'.

Groups are named by their displayName, unique whatever its case; the roles a group grants are
flagadmin's (:mod:`~flagadmin.directory.role_mappings`), by that name, and outlive the group.
Events: ``group-created``, ``group-updated`` (a rename), ``group-deleted``, and the members'
``group-user-added`` and ``group-user-removed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scim2_models import Context, Meta, PatchOp, ResponseParameters

from .. import events
from ..store import Conflict, Connection
from ..store import directory as store
from ..store.scim_filter import GROUP_ATTRIBUTES, group_scim_id
from .members import MemberChanges, apply_members, member_entries, split_patch
from .protocol import (
    GROUP_SCHEMA,
    MAX_MEMBERS_PER_PAGE,
    POLICY,
    Group,
    as_refusal,
    dump,
    list_response,
    paging,
    response_parameters,
)
from .resources import (
    MEMBER_FIELDS,
    Site,
    filtered_page,
    not_found,
    read_id,
    read_patch,
    read_resource,
    read_text,
    uniqueness,
)


def group_record(row: dict[str, Any]) -> dict[str, Any]:
    """A group as its events carry it (``id``: its SCIM id)."""
    return {
        "id": group_scim_id(row["id"]),
        "displayName": row["display_name"],
        "externalId": row["external_id"],
    }


def _member_fields(parameters: ResponseParameters[Any] | None) -> tuple[str, ...]:
    """The member sub-attributes the response carries (empty: no ``members`` at all)."""
    if parameters is None:
        return MEMBER_FIELDS
    prefix = GROUP_SCHEMA.lower() + ":"

    def names(paths: Iterable[Any]) -> list[str]:
        return [str(path).lower().removeprefix(prefix) for path in paths]

    if parameters.attributes:
        selected = names(parameters.attributes)
        if "members" in selected:
            return MEMBER_FIELDS
        subs = {name.split(".", 1)[1] for name in selected if name.startswith("members.")}
        return tuple(name for name in MEMBER_FIELDS if name.lower() in subs)
    if parameters.excluded_attributes:
        excluded = names(parameters.excluded_attributes)
        if "members" in excluded:
            return ()
        subs = {name.split(".", 1)[1] for name in excluded if name.startswith("members.")}
        return tuple(name for name in MEMBER_FIELDS if name.lower() not in subs)
    return MEMBER_FIELDS


def group_documents(
    conn: Connection,
    site: Site,
    rows: list[dict[str, Any]],
    parameters: ResponseParameters[Any] | None,
    member_budget: int | None = None,
) -> list[dict[str, Any]]:
    """The documents of groups ``rows``. Members are written straight from their rows (a
    10,000-member group is read in one statement and never becomes 10,000 models), only when
    the response carries them; with ``member_budget`` the list stops before the group that
    would take the members past it (the first group always comes)."""
    fields = _member_fields(parameters)
    if fields and member_budget is not None and rows:
        counts = store.member_counts(conn, [row["id"] for row in rows])
        kept, total = [], 0
        for row in rows:
            total += counts[row["id"]]
            if kept and total > member_budget:
                break
            kept.append(row)
        rows = kept
    members = store.members(conn, [row["id"] for row in rows]) if fields and rows else {}
    documents = []
    for row in rows:
        resource = Group(
            id=group_scim_id(row["id"]),
            external_id=row["external_id"],
            display_name=row["display_name"],
            meta=Meta(
                resource_type="Group",
                created=row["created_at"],
                last_modified=row["last_modified"],
                location=site.location("Groups", group_scim_id(row["id"])),
                version=f'W/"{row["version"]}"',
            ),
        )
        document = dump(resource, parameters)
        if fields:
            document["members"] = [
                _member_document(site, member, fields) for member in members.get(row["id"], [])
            ]
        documents.append(document)
    return documents


def _member_document(site: Site, member: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """A member's object in a group's document, with the sub-attributes ``fields``."""
    values = {
        "value": str(member["user_id"]),
        "$ref": site.location("Users", member["user_id"]),
        "type": "User",
        "display": member["display"],
    }
    return {name: values[name] for name in fields if values[name] is not None}


def get_group(
    conn: Connection, site: Site, group_id: str, parameters: ResponseParameters[Any] | None = None
) -> dict[str, Any]:
    """``GET /Groups/{id}``.

    :raise NotFound: an unknown or deleted group.
    """
    row = store.group(conn, read_id("group", group_id))
    if row is None:
        raise not_found("group", group_id)
    return group_documents(conn, site, [row], parameters)[0]


def list_groups(conn: Connection, site: Site, args: dict[str, Any]) -> dict[str, Any]:
    """``GET /Groups`` (and ``POST /Groups/.search``): like
    :func:`~flagadmin.directory.users.list_users`; a page of groups with their members holds
    about :data:`~flagadmin.directory.protocol.MAX_MEMBERS_PER_PAGE` members at most.

    :raise Invalid: ``invalidFilter`` or ``invalidValue`` for a bad parameter.
    """
    start, count = paging(args)
    parameters = response_parameters(Group, args)
    total, rows = filtered_page(
        conn, store.groups_page, GROUP_ATTRIBUTES, Group, args.get("filter"), start, count
    )
    documents = group_documents(conn, site, rows, parameters, member_budget=MAX_MEMBERS_PER_PAGE)
    return list_response(total, start, documents)


def _group_fields(resource: Group) -> tuple[str, str | None]:
    """The displayName and externalId of ``resource``, as flagadmin stores them.

    :raise Invalid: ``invalidValue`` for a missing displayName or a string too long.
    """
    return (
        read_text(resource.display_name, "displayName", required=True),
        read_text(resource.external_id, "externalId"),
    )


def _write_group(
    conn: Connection,
    site: Site,
    row: dict[str, Any],
    name: str,
    external_id: str | None,
    changes: MemberChanges,
) -> dict[str, Any]:
    """Store a group's new name, externalId and member changes (inside the open transaction);
    returns the stored row."""
    renamed = (name, external_id) != (row["display_name"], row["external_id"])
    if renamed:  # unchanged ones are the group's own: the unique indexes keep them so
        conflict = store.group_conflict(conn, name, external_id, exclude_id=row["id"])
        if conflict:
            raise uniqueness("group", conflict)
    members_changed = apply_members(conn, site, row, name, changes)
    if not renamed and not members_changed:
        return row
    try:
        after = store.update_group(conn, row["id"], name, external_id, site.clock.now_rfc3339())
    except Conflict as exc:
        raise uniqueness("group", "displayName") from exc
    if renamed:
        events.record(
            conn,
            "group-updated",
            events.SCIM_CLIENT,
            data=group_record(after),
            pre_data=group_record(row),
            clock=site.clock,
        )
    return after


def create_group(
    conn: Connection, site: Site, document: dict[str, Any], parameters: ResponseParameters[Any] | None = None
) -> tuple[dict[str, Any], str]:
    """``POST /Groups``: create a group, with the members it names (users' ids).

    :raise Invalid: an invalid body or an unknown member.
    :raise Conflict: ``uniqueness``: a group has the displayName (whatever its case) or the
        externalId.
    """
    resource = read_resource(Group, document, Context.RESOURCE_CREATION_REQUEST)
    name, external_id = _group_fields(resource)
    changes = MemberChanges()
    changes.added(member_entries(resource.members, changes))
    now = site.clock.now_rfc3339()
    with conn.write("directory"):
        conflict = store.group_conflict(conn, name, external_id)
        if conflict:
            raise uniqueness("group", conflict)
        try:
            group_id = store.insert_group(conn, name, external_id, now)
        except Conflict as exc:
            raise uniqueness("group", "displayName") from exc
        row = store.group(conn, group_id)
        events.record(conn, "group-created", events.SCIM_CLIENT, data=group_record(row), clock=site.clock)
        apply_members(conn, site, row, name, changes)
    return group_documents(conn, site, [row], parameters)[0], site.location("Groups", group_scim_id(group_id))


def replace_group(
    conn: Connection,
    site: Site,
    group_id: str,
    document: dict[str, Any],
    parameters: ResponseParameters[Any] | None = None,
) -> dict[str, Any]:
    """``PUT /Groups/{id}``: replace the displayName, externalId and the whole membership
    (absent ``members``: none).

    :raise Invalid: as for :func:`create_group`.
    :raise NotFound: an unknown group.
    :raise Conflict: as for :func:`create_group`.
    """
    resource = read_resource(Group, document, Context.RESOURCE_REPLACEMENT_REQUEST)
    name, external_id = _group_fields(resource)
    changes = MemberChanges()
    changes.replaced(member_entries(resource.members, changes))
    number = read_id("group", group_id)
    with conn.write("directory"):
        row = store.group(conn, number)
        if row is None:
            raise not_found("group", group_id)
        after = _write_group(conn, site, row, name, external_id, changes)
    return group_documents(conn, site, [after], parameters)[0]


def patch_group(
    conn: Connection,
    site: Site,
    group_id: str,
    document: dict[str, Any],
    parameters: ResponseParameters[Any] | None = None,
    *,
    answer: bool = True,
) -> dict[str, Any] | None:
    """``PATCH /Groups/{id}`` (RFC 7644 section 3.5.2) in the dialects of Okta (rename with
    ``id`` in a no-path value, ``remove`` by ``members[value eq "..."]`` plus ``add``), Entra
    (``Replace``, remove with a value list, no-path replace) and authentik (one member per
    operation), split by :func:`~flagadmin.directory.members.split_patch`. Operations on
    ``members`` are applied to the stored membership as sets, in order; the others (name,
    externalId) by scim2-models on the group without its members. Returns the group (None
    without ``answer``: a 10,000-member group is then not read back).

    :raise Invalid: an invalid operation or an unknown member (nothing is written).
    :raise NotFound: an unknown group.
    :raise Conflict: ``uniqueness`` for a rename to a taken name.
    """
    patch = read_patch(Group, document)
    number = read_id("group", group_id)
    changes, others = split_patch(patch)
    with conn.write("directory"):
        row = store.group(conn, number)
        if row is None:
            raise not_found("group", group_id)
        resource = Group(
            id=group_scim_id(row["id"]), external_id=row["external_id"], display_name=row["display_name"]
        )
        if others:
            try:
                PatchOp[Group].model_construct(operations=others).patch(resource, scim_policy=POLICY)
            except Exception as exc:
                raise as_refusal(exc) from exc
        name, external_id = _group_fields(resource)
        after = _write_group(conn, site, row, name, external_id, changes)
    return group_documents(conn, site, [after], parameters)[0] if answer else None


def delete_group(conn: Connection, site: Site, group_id: str) -> None:
    """``DELETE /Groups/{id}``: remove the group and its memberships (role mappings that name
    it stay, and apply again to a group created later under the same name).

    :raise NotFound: an unknown or deleted group.
    """
    number = read_id("group", group_id)
    with conn.write("directory"):
        row = store.group(conn, number)
        if row is None:
            raise not_found("group", group_id)
        member_ids = list(store.stored_members(conn, number))
        names = store.usernames(conn, member_ids)
        store.delete_group(conn, number)
        if member_ids:
            users = [{"id": user_id, "username": names.get(user_id)} for user_id in sorted(member_ids)]
            events.record(
                conn,
                "group-user-removed",
                events.SCIM_CLIENT,
                data={"groupId": group_scim_id(number), "groupName": row["display_name"], "users": users},
                clock=site.clock,
            )
        events.record(conn, "group-deleted", events.SCIM_CLIENT, pre_data=group_record(row), clock=site.clock)
