"""The members of SCIM groups (RFC 7643 section 4.2 ``members``; RFC 7644 sections 3.3, 3.5.1
and 3.5.2): what a request does to a group's members (:class:`MemberChanges`), read from
member objects and from PATCH operations in the dialects of real identity providers, and
written to the stored membership with its events (``group-user-added``,
``group-user-removed``).

Members are users only (flagadmin has no nested groups); adding an unknown user is refused
(400 ``invalidValue``) and nothing is written, removing one that is not a member changes
nothing. A 10,000-member group is changed as sets of ids: members are never read as models.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scim2_models import PatchOp, PatchOperation
from scim2_models.path import CompareOperator, Comparison, LogicalExpr, LogicalOperator

from .. import events
from ..refusals import Invalid
from ..store import Connection
from ..store import directory as store
from ..store.scim_filter import group_scim_id, parse_id
from .protocol import GROUP_SCHEMA, MAX_MEMBERS, Group, GroupMember, quoted
from .resources import Site, read_text


@dataclass
class MemberChanges:
    """What a request does to a group's members, in the order of its operations: members to
    add or keep (with the display text sent, if any), members to remove, and whether every
    member not added is removed (a replace)."""

    replace: bool = False
    add: dict[int, str | None] = field(default_factory=dict)
    remove: set[int] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)

    def added(self, members: dict[int, str | None]) -> None:
        """Add ``members`` (``{user id: display or None}``)."""
        for user_id, display in members.items():
            self.add[user_id] = display if display is not None else self.add.get(user_id)
            self.remove.discard(user_id)

    def removed(self, user_ids: Iterable[int]) -> None:
        """Remove the users ``user_ids``."""
        for user_id in user_ids:
            self.add.pop(user_id, None)
            self.remove.add(user_id)

    def replaced(self, members: dict[int, str | None]) -> None:
        """Make ``members`` the whole membership."""
        self.replace, self.add, self.remove = True, dict(members), set()

    @property
    def any(self) -> bool:
        """Whether the request touches the members at all."""
        return self.replace or bool(self.add) or bool(self.remove)


def member_entries(value: Any, changes: MemberChanges, *, removing: bool = False) -> dict[int, str | None]:
    """``{user id: display}`` of the member objects ``value`` (a list, or one object;
    ``{"value": id, "display"?, "type"?, "$ref"?}``). Values that cannot be user ids are kept
    in ``changes.refused`` when adding and ignored when removing.

    :raise Invalid: ``invalidValue`` for an entry that is not a member object, a member of
        another type than User, or more than :data:`~flagadmin.directory.protocol.MAX_MEMBERS`
        entries.
    """
    if value is None:
        return {}
    entries = value if isinstance(value, list) else [value]
    if len(entries) > MAX_MEMBERS:
        raise Invalid(f"A request may name at most {MAX_MEMBERS} members.", scim_type="invalidValue")
    members: dict[int, str | None] = {}
    for entry in entries:
        if isinstance(entry, GroupMember):
            entry = entry.model_dump(by_alias=True)
        if isinstance(entry, str | int) and not isinstance(entry, bool):
            entry = {"value": str(entry)}
        if not isinstance(entry, dict):
            raise Invalid('Each member is an object like {"value": "<user id>"}.', scim_type="invalidValue")
        lowered = {str(key).lower(): item for key, item in entry.items()}
        kind = lowered.get("type")
        if kind is not None and str(kind).lower() != "user":
            raise Invalid(
                f"Group members are users; flagadmin has no nested groups (type {quoted(str(kind)[:50])}).",
                scim_type="invalidValue",
            )
        text = lowered.get("value")
        user_id = parse_id(str(text)) if isinstance(text, str | int) and not isinstance(text, bool) else None
        if user_id is None:
            if not removing:
                changes.refused.append(str(text)[:100])
            continue
        display = lowered.get("display")
        members[user_id] = read_text(display, "members.display") if isinstance(display, str) else None
    return members


def _filtered_member_ids(node: Any) -> set[int]:
    """The user ids a members filter selects: ``value eq "<id>"``, joined by ``or``.

    :raise Invalid: ``invalidFilter`` for any other filter.
    """
    if isinstance(node, LogicalExpr) and node.op == LogicalOperator.or_:
        return set().union(*(_filtered_member_ids(term) for term in node.terms))
    if (
        isinstance(node, Comparison)
        and node.op == CompareOperator.eq
        and node.attr_path.attr.lower() == "value"
        and node.attr_path.sub_attr is None
        and isinstance(node.value, str)
    ):
        user_id = parse_id(node.value)
        return set() if user_id is None else {user_id}
    raise Invalid(
        f'flagadmin selects members by value: members[value eq "<user id>"], not {node}.',
        scim_type="invalidFilter",
    )


def _is_members(path: Any) -> bool:
    """Whether the PATCH ``path`` is ``members`` (or below it), of the Group schema."""
    parts = path.parts if path is not None else ()
    schema = path.schema if path is not None else None
    return (
        bool(parts)
        and parts[0].lower() == "members"
        and (schema is None or schema.lower() == GROUP_SCHEMA.lower())
    )


def _member_operation(changes: MemberChanges, op: PatchOperation.Op, path: Any, value: Any) -> None:
    """Add the operation ``op`` on the members (``path`` None, ``members`` or
    ``members[value eq "<id>"]``) with ``value`` to ``changes``.

    :raise Invalid: ``invalidPath`` for a sub-attribute or a filter flagadmin does not apply
        (``invalidFilter``), ``invalidValue`` for a value that names no members.
    """
    value_filter = path.value_filter if path is not None else None
    sub_attribute = path.parts[1] if path is not None and len(path.parts) > 1 else None
    if op == PatchOperation.Op.remove:
        if sub_attribute is not None:
            raise Invalid(
                'Remove members as a whole: members[value eq "<user id>"].', scim_type="invalidPath"
            )
        if value_filter is not None:
            changes.removed(_filtered_member_ids(value_filter))
        elif value is not None and value != []:
            changes.removed(member_entries(value, changes, removing=True))
        else:
            changes.replaced({})
        return
    if value_filter is not None or sub_attribute is not None:
        raise Invalid(
            'Add or replace members with the path "members" and a list of {"value": "<user id>"}.',
            scim_type="invalidPath",
        )
    if op == PatchOperation.Op.add:
        changes.added(member_entries(value, changes))
    else:
        changes.replaced(member_entries(value, changes))


def split_patch(patch: PatchOp[Group]) -> tuple[MemberChanges, list[PatchOperation[Group]]]:
    """The operations of a group's ``patch`` in two parts: what they do to the members (in
    the dialects of Okta: ``remove`` by ``members[value eq "..."]`` plus ``add``; Entra:
    ``Replace``, remove with a value list, no-path replace; authentik: one member per
    operation) and the other operations, left to scim2-models (a no-path value loses its
    ``members`` key to the first part).

    :raise Invalid: an operation on the members that flagadmin does not apply.
    """
    changes = MemberChanges()
    others: list[PatchOperation[Group]] = []
    for operation in patch.operations or []:
        if operation.path is None or not str(operation.path):
            value = operation.value
            if isinstance(value, dict):
                rest = {}
                for key, item in value.items():
                    if str(key).lower() in ("members", GROUP_SCHEMA.lower() + ":members"):
                        _member_operation(changes, operation.op, None, item)
                    else:
                        rest[key] = item
                if rest:
                    others.append(PatchOperation[Group](op=operation.op, value=rest))
                continue
            others.append(operation)
        elif _is_members(operation.path):
            _member_operation(changes, operation.op, operation.path, operation.value)
        else:
            others.append(operation)
    return changes, others


def apply_members(
    conn: Connection, site: Site, row: dict[str, Any], name: str, changes: MemberChanges
) -> bool:
    """Write ``changes`` to the members of group ``row`` (renamed ``name``) and record them;
    return whether anything changed.

    :raise Invalid: ``invalidValue`` when a member to add is no live user (nothing is written).
    """
    if changes.refused:
        shown = ", ".join(quoted(text) for text in changes.refused[:10])
        raise Invalid(f"No user has the id {shown}: members must be users' ids.", scim_type="invalidValue")
    if not changes.any:
        stored = {}
    elif changes.replace:  # every member not named goes: all of them are needed
        stored = store.stored_members(conn, row["id"])
    else:  # only the named ones can change
        stored = store.stored_members(conn, row["id"], [*changes.add, *changes.remove])
    removed = (set(stored) - set(changes.add)) if changes.replace else (changes.remove & set(stored))
    added = [user_id for user_id in changes.add if user_id not in stored]
    writes = {
        user_id: display
        for user_id, display in changes.add.items()
        if user_id not in stored or (display is not None and display != stored[user_id])
    }
    names = store.usernames(conn, added)
    unknown = [str(user_id) for user_id in added if user_id not in names]
    if unknown:
        shown = ", ".join(quoted(text) for text in unknown[:10])
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        raise Invalid(
            f"No user has the id {shown}{more}: members must be live users.", scim_type="invalidValue"
        )
    store.remove_members(conn, row["id"], removed)
    store.write_members(conn, row["id"], writes)
    data = {"groupId": group_scim_id(row["id"]), "groupName": name}
    if added:
        users = [{"id": user_id, "username": names[user_id]} for user_id in sorted(added)]
        events.record(
            conn, "group-user-added", events.SCIM_CLIENT, data={**data, "users": users}, clock=site.clock
        )
    if removed:
        gone = store.usernames(conn, removed)
        users = [{"id": user_id, "username": gone.get(user_id)} for user_id in sorted(removed)]
        events.record(
            conn, "group-user-removed", events.SCIM_CLIENT, data={**data, "users": users}, clock=site.clock
        )
    return bool(added or removed or writes)
