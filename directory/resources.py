"""The directory (issue 9): users and groups as identity providers provision them through SCIM
(RFC 7643, RFC 7644), and the roles groups grant in flagadmin.

Each SCIM operation reads, checks and writes in one write transaction, records its events
(spec 6: ``user-created``, ``user-updated``, ``user-deleted``, ``group-created``,
``group-updated``, ``group-deleted``, ``group-user-added``, ``group-user-removed``,
``pat-deleted``; ``createdBy`` ``scim-client``) in that transaction, and either all of it
happens or none of it: a request refused halfway leaves nothing written.

Rules (README "SCIM provisioning"):

- A SCIM-created user has root role Viewer; its effective root role is the highest of its own
  and its groups' (mapped with ``flagadmin group-role``). A user flagadmin already had keeps
  its root role, and becomes SCIM-managed (read-only outside SCIM) when SCIM first writes it.
- Deactivation (``active`` false) keeps the user readable and revokes its personal access
  tokens at once; a deactivated user holds no project role. DELETE leaves a tombstone: the
  user answers 404 from then on and its userName and externalId are free again.
- Group members are users only; adding an unknown user is refused (400 ``invalidValue``),
  removing one that is not a member changes nothing.
- Role mappings are flagadmin's (``directory/role_mappings.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scim2_models import (
    Context,
    InvalidFilterException,
    InvalidPathException,
    InvalidValueException,
    Meta,
    NotFoundException,
    PatchOp,
    PatchOperation,
    ResponseParameters,
    SearchRequest,
    UniquenessException,
)
from scim2_models.path import CompareOperator, Comparison, LogicalExpr, LogicalOperator

from .. import events
from ..store import Conflict, Connection
from ..store import directory as store
from ..store.scim_filter import (
    GROUP_ATTRIBUTES,
    GROUP_ID_PREFIX,
    USER_ATTRIBUTES,
    UnsupportedFilter,
    condition,
    group_scim_id,
    parse_id,
)
from ..timestamps import Clock
from .protocol import (
    GROUP_SCHEMA,
    MAX_MEMBERS,
    MAX_MEMBERS_PER_PAGE,
    MAX_OPERATIONS,
    MAX_STRING,
    POLICY,
    Group,
    GroupMember,
    User,
    UserEmail,
    UserGroup,
    UserName,
    as_scim_exception,
    dump,
    list_response,
    paging,
    parse_filter,
    response_parameters,
)

#: Member sub-attributes, in output order.
MEMBER_FIELDS = ("value", "$ref", "type", "display")


@dataclass(frozen=True)
class Site:
    """Where a SCIM request came in: ``base_url`` of the service provider (e.g.
    ``https://flags.example.com/scim/v2``, for ``meta.location`` and ``$ref``) and the clock
    of the app."""

    base_url: str
    clock: Clock

    def location(self, resource_type: str, resource_id: int | str) -> str:
        """The URI of a resource (``Users`` or ``Groups``)."""
        return f"{self.base_url}/{resource_type}/{resource_id}"


# --- reading ids and strings ------------------------------------------------------------------


def _not_found(kind: str, text: str) -> NotFoundException:
    return NotFoundException(detail=f"No {kind} has the id {text[:100]!r}.")


def _id(kind: str, text: str) -> int:
    number = parse_id(text, GROUP_ID_PREFIX if kind == "group" else "")
    if number is None:
        raise _not_found(kind, text)
    return number


def _text(value: Any, attribute: str, *, required: bool = False) -> str | None:
    """A string attribute as flagadmin stores it: at most :data:`MAX_STRING` characters,
    without NUL; an empty or blank required one is refused."""
    if value is None:
        if required:
            raise InvalidValueException(detail=f"{attribute} is required.")
        return None
    text = str(value)
    if required and not text.strip():
        raise InvalidValueException(detail=f"{attribute} must not be empty.")
    if len(text) > MAX_STRING:
        raise InvalidValueException(detail=f"{attribute} is longer than {MAX_STRING} characters.")
    if "\x00" in text:
        raise InvalidValueException(detail=f"{attribute} contains a NUL character.")
    return text


# --- users ------------------------------------------------------------------------------------


def _main_email(emails: list[UserEmail] | None) -> UserEmail | None:
    """The one email flagadmin keeps: the primary one, else the first work one, else the first."""
    candidates = [email for email in emails or [] if email.value]
    for email in candidates:
        if email.primary:
            return email
    for email in candidates:
        if (email.type or "").lower() == "work":
            return email
    return candidates[0] if candidates else None


def user_fields(user: User) -> dict[str, Any]:
    """The columns (:data:`flagadmin.store.directory.USER_FIELDS`) a SCIM ``user`` stands for.

    :raise SCIMException: 400 ``invalidValue`` for a missing userName or a string too long.
    """
    email = _main_email(user.emails)
    name = user.name or UserName()
    return {
        "username": _text(user.user_name, "userName", required=True),
        "name": _text(user.display_name, "displayName"),
        "email": _text(email.value if email else None, "emails.value"),
        "email_type": _text(email.type if email else None, "emails.type"),
        "email_primary": None if email is None or email.primary is None else int(email.primary),
        "external_id": _text(user.external_id, "externalId"),
        "given_name": _text(name.given_name, "name.givenName"),
        "family_name": _text(name.family_name, "name.familyName"),
        "formatted_name": _text(name.formatted, "name.formatted"),
        "active": None if user.active is None else int(user.active),
    }


def user_resource(site: Site, row: dict[str, Any], groups: list[dict[str, Any]] | None) -> User:
    """The SCIM User of a stored user ``row`` and its ``groups`` (None: not read)."""
    email = None
    if row["email"] is not None:
        primary = None if row["email_primary"] is None else bool(row["email_primary"])
        kind = row["email_type"]
        if not row["scim_managed"] and kind is None:
            # A user flagadmin had before SCIM: its one email is its primary work email.
            kind, primary = "work", True if primary is None else primary
        email = UserEmail(value=row["email"], type=kind, primary=primary)
    name = None
    if any(row[key] is not None for key in ("given_name", "family_name", "formatted_name")):
        name = UserName(
            formatted=row["formatted_name"], family_name=row["family_name"], given_name=row["given_name"]
        )
    return User(
        id=str(row["id"]),
        external_id=row["external_id"],
        user_name=row["username"],
        name=name,
        display_name=row["name"],
        active=None if row["active"] is None else bool(row["active"]),
        emails=[email] if email else None,
        groups=[
            UserGroup(
                value=group_scim_id(g["id"]),
                ref=site.location("Groups", group_scim_id(g["id"])),
                display=g["display_name"],
            )
            for g in groups
        ]
        if groups
        else None,
        meta=Meta(
            resource_type="User",
            created=row["created_at"],
            last_modified=row["last_modified"],
            location=site.location("Users", row["id"]),
            version=f'W/"{row["version"]}"',
        ),
    )


def user_record(row: dict[str, Any]) -> dict[str, Any]:
    """A user as its events carry it (``data`` / ``preData``)."""
    return {
        "id": row["id"],
        "username": row["username"],
        "name": row["name"],
        "email": row["email"],
        "givenName": row["given_name"],
        "familyName": row["family_name"],
        "externalId": row["external_id"],
        "active": None if row["active"] is None else bool(row["active"]),
        "rootRole": row["root_role"],
        "scimManaged": bool(row["scim_managed"]),
    }


def _returned(parameters: ResponseParameters[Any] | None, attribute: str, schema: str) -> bool:
    """Whether the multi-valued ``attribute`` is in the response the parameters ask for."""
    if parameters is None:
        return True

    def names(paths: Iterable[Any]) -> set[str]:
        found = set()
        for path in paths:
            text = str(path).lower()
            if text.startswith(schema.lower() + ":"):
                text = text[len(schema) + 1 :]
            found.add(text.split(".", 1)[0])
        return found

    if parameters.attributes:
        return attribute.lower() in names(parameters.attributes)
    if parameters.excluded_attributes:
        excluded = {
            str(path).lower().removeprefix(schema.lower() + ":") for path in parameters.excluded_attributes
        }
        return attribute.lower() not in excluded
    return True


def _user_documents(
    conn: Connection, site: Site, rows: list[dict[str, Any]], parameters: ResponseParameters[Any] | None
) -> list[dict[str, Any]]:
    groups = None
    if rows and _returned(parameters, "groups", User.__schema__):
        groups = store.groups_of_users(conn, [row["id"] for row in rows])
    return [dump(user_resource(site, row, groups[row["id"]] if groups else None), parameters) for row in rows]


def get_user(
    conn: Connection, site: Site, user_id: str, parameters: ResponseParameters[Any] | None = None
) -> dict[str, Any]:
    """``GET /Users/{id}``: the user, also when deactivated.

    :raise SCIMException: 404 for an unknown or deleted user.
    """
    row = store.user(conn, _id("user", user_id))
    if row is None:
        raise _not_found("user", user_id)
    return _user_documents(conn, site, [row], parameters)[0]


def _page(
    conn: Connection, page, vocabulary, model, filter_text: str | None, start: int, count: int
) -> tuple[int, list[dict[str, Any]]]:
    where = None
    if filter_text is not None and filter_text.strip():
        try:
            where = condition(parse_filter(model, filter_text), vocabulary, conn.dialect)
        except UnsupportedFilter as exc:
            raise InvalidFilterException(detail=str(exc)) from exc
    return page(conn, where, start - 1, count)


def list_users(conn: Connection, site: Site, args: dict[str, Any]) -> dict[str, Any]:
    """``GET /Users`` (and ``POST /Users/.search``): a ListResponse of the live users matching
    ``filter``, by id, paged by ``startIndex`` and ``count``, with the attributes asked for.

    :raise SCIMException: 400 ``invalidFilter`` or ``invalidValue`` for a bad parameter.
    """
    start, count = paging(args)
    parameters = response_parameters(User, args)
    total, rows = _page(conn, store.users_page, USER_ATTRIBUTES, User, args.get("filter"), start, count)
    return list_response(total, start, _user_documents(conn, site, rows, parameters))


def _read_user(document: dict[str, Any], context: Context) -> User:
    try:
        return User.model_validate(document, scim_ctx=context, scim_policy=POLICY)
    except Exception as exc:
        raise as_scim_exception(exc) from exc


def _uniqueness(kind: str, attribute: str) -> UniquenessException:
    return UniquenessException(
        attribute=attribute,
        detail=f"Another {kind} already has this {attribute} (compared whatever its case)."
        if attribute in ("userName", "displayName")
        else f"Another {kind} already has this {attribute}.",
    )


def create_user(
    conn: Connection, site: Site, document: dict[str, Any], parameters: ResponseParameters[Any] | None = None
) -> tuple[dict[str, Any], str]:
    """``POST /Users``: create a SCIM-managed user with root role Viewer; return its
    document and its location.

    :raise SCIMException: 400 for an invalid body, 409 ``uniqueness`` when a live user has
        the userName (whatever its case) or the externalId.
    """
    fields = user_fields(_read_user(document, Context.RESOURCE_CREATION_REQUEST))
    now = site.clock.now_rfc3339()
    with conn.write("directory"):
        conflict = store.user_conflict(conn, fields["username"], fields["external_id"])
        if conflict:
            raise _uniqueness("user", conflict)
        try:
            user_id = store.insert_user(conn, fields, now)
        except Conflict as exc:
            raise _uniqueness("user", "userName") from exc
        row = store.user(conn, user_id)
        events.record(conn, "user-created", events.SCIM_CLIENT, data=user_record(row), clock=site.clock)
    return _user_documents(conn, site, [row], parameters)[0], site.location("Users", user_id)


def _write_user(conn: Connection, site: Site, row: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """Store ``fields`` for the user ``row`` (inside the open transaction): uniqueness checked,
    the change recorded, personal tokens revoked on deactivation. Returns the stored row."""
    conflict = store.user_conflict(conn, fields["username"], fields["external_id"], exclude_id=row["id"])
    if conflict:
        raise _uniqueness("user", conflict)
    unchanged = all(row[name] == fields[name] for name in store.USER_FIELDS)
    if unchanged and row["scim_managed"]:
        return row
    now = site.clock.now_rfc3339()
    try:
        store.update_user(conn, row["id"], fields, now)
    except Conflict as exc:
        raise _uniqueness("user", "userName") from exc
    after = store.user(conn, row["id"])
    events.record(
        conn,
        "user-updated",
        events.SCIM_CLIENT,
        data=user_record(after),
        pre_data=user_record(row),
        clock=site.clock,
    )
    if row["active"] != 0 and after["active"] == 0:
        _revoke_tokens(conn, site, row["id"], "deactivated by the directory", now)
    return after


def _revoke_tokens(conn: Connection, site: Site, user_id: int, reason: str, now: str) -> None:
    for token in store.revoke_personal_tokens(conn, user_id, now):
        events.record(
            conn,
            "pat-deleted",
            events.SCIM_CLIENT,
            data={"id": token["id"], "name": token["name"], "userId": user_id, "reason": reason},
            clock=site.clock,
        )


def replace_user(
    conn: Connection,
    site: Site,
    user_id: str,
    document: dict[str, Any],
    parameters: ResponseParameters[Any] | None = None,
) -> dict[str, Any]:
    """``PUT /Users/{id}``: replace every attribute flagadmin keeps (read-only ones such as
    ``id``, ``meta`` and ``groups`` are ignored); absent ones are cleared.

    :raise SCIMException: 400 for an invalid body, 404 for an unknown user, 409 ``uniqueness``.
    """
    fields = user_fields(_read_user(document, Context.RESOURCE_REPLACEMENT_REQUEST))
    number = _id("user", user_id)
    with conn.write("directory"):
        row = store.user(conn, number)
        if row is None:
            raise _not_found("user", user_id)
        after = _write_user(conn, site, row, fields)
    return _user_documents(conn, site, [after], parameters)[0]


def _read_patch(model, document: dict[str, Any]) -> PatchOp[Any]:
    operations = document.get("Operations", document.get("operations"))
    if isinstance(operations, list) and len(operations) > MAX_OPERATIONS:
        raise InvalidValueException(detail=f"A PATCH takes at most {MAX_OPERATIONS} operations.")
    try:
        return PatchOp[model].model_validate(
            document, scim_ctx=Context.RESOURCE_PATCH_REQUEST, scim_policy=POLICY
        )
    except Exception as exc:
        raise as_scim_exception(exc) from exc


def patch_user(
    conn: Connection,
    site: Site,
    user_id: str,
    document: dict[str, Any],
    parameters: ResponseParameters[Any] | None = None,
) -> dict[str, Any]:
    """``PATCH /Users/{id}`` (RFC 7644 section 3.5.2), in every dialect of the module
    docstring; answers the user.

    :raise SCIMException: 400 for an invalid operation, 404 for an unknown user, 409
        ``uniqueness``.
    """
    patch = _read_patch(User, document)
    number = _id("user", user_id)
    with conn.write("directory"):
        row = store.user(conn, number)
        if row is None:
            raise _not_found("user", user_id)
        resource = user_resource(site, row, None)
        try:
            patch.patch(resource, scim_policy=POLICY)
        except Exception as exc:
            raise as_scim_exception(exc) from exc
        after = _write_user(conn, site, row, user_fields(resource))
    return _user_documents(conn, site, [after], parameters)[0]


def delete_user(conn: Connection, site: Site, user_id: str) -> None:
    """``DELETE /Users/{id}``: tombstone the user (it answers 404 from now on; its userName
    and externalId are free), remove it from its groups and revoke its personal tokens.

    :raise SCIMException: 404 for an unknown or already deleted user.
    """
    number = _id("user", user_id)
    with conn.write("directory"):
        row = store.user(conn, number)
        if row is None:
            raise _not_found("user", user_id)
        groups = store.groups_of_user(conn, number)
        now = site.clock.now_rfc3339()
        store.tombstone_user(conn, number, now)
        events.record(conn, "user-deleted", events.SCIM_CLIENT, pre_data=user_record(row), clock=site.clock)
        member = [{"id": number, "username": row["username"]}]
        for group in groups:
            events.record(
                conn,
                "group-user-removed",
                events.SCIM_CLIENT,
                data={
                    "groupId": group_scim_id(group["id"]),
                    "groupName": group["display_name"],
                    "users": member,
                },
                clock=site.clock,
            )
        _revoke_tokens(conn, site, number, "deleted by the directory", now)


# --- groups -----------------------------------------------------------------------------------


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


def _group_documents(
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

    :raise SCIMException: 404 for an unknown or deleted group.
    """
    row = store.group(conn, _id("group", group_id))
    if row is None:
        raise _not_found("group", group_id)
    return _group_documents(conn, site, [row], parameters)[0]


def list_groups(conn: Connection, site: Site, args: dict[str, Any]) -> dict[str, Any]:
    """``GET /Groups`` (and ``POST /Groups/.search``): like :func:`list_users`; a page of
    groups with their members holds about :data:`MAX_MEMBERS_PER_PAGE` members at most."""
    start, count = paging(args)
    parameters = response_parameters(Group, args)
    total, rows = _page(conn, store.groups_page, GROUP_ATTRIBUTES, Group, args.get("filter"), start, count)
    documents = _group_documents(conn, site, rows, parameters, member_budget=MAX_MEMBERS_PER_PAGE)
    return list_response(total, start, documents)


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


def _member_entries(value: Any, changes: MemberChanges, *, removing: bool = False) -> dict[int, str | None]:
    """``{user id: display}`` of the member objects ``value`` (a list, or one object;
    ``{"value": id, "display"?, "type"?, "$ref"?}``). Values that cannot be user ids are kept
    in ``changes.refused`` when adding and ignored when removing.

    :raise SCIMException: 400 ``invalidValue`` for an entry that is not a member object, a
        member of another type than User, or more than :data:`MAX_MEMBERS` entries.
    """
    if value is None:
        return {}
    entries = value if isinstance(value, list) else [value]
    if len(entries) > MAX_MEMBERS:
        raise InvalidValueException(detail=f"A request may name at most {MAX_MEMBERS} members.")
    members: dict[int, str | None] = {}
    for entry in entries:
        if isinstance(entry, GroupMember):
            entry = entry.model_dump(by_alias=True)
        if isinstance(entry, str | int) and not isinstance(entry, bool):
            entry = {"value": str(entry)}
        if not isinstance(entry, dict):
            raise InvalidValueException(detail='Each member is an object like {"value": "<user id>"}.')
        lowered = {str(key).lower(): item for key, item in entry.items()}
        kind = lowered.get("type")
        if kind is not None and str(kind).lower() != "user":
            raise InvalidValueException(
                detail=f"Group members are users; flagadmin has no nested groups (type {str(kind)[:50]!r})."
            )
        text = lowered.get("value")
        user_id = parse_id(str(text)) if isinstance(text, str | int) and not isinstance(text, bool) else None
        if user_id is None:
            if not removing:
                changes.refused.append(str(text)[:100])
            continue
        display = lowered.get("display")
        members[user_id] = _text(display, "members.display") if isinstance(display, str) else None
    return members


def _filtered_member_ids(node: Any) -> set[int]:
    """The user ids a members filter selects: ``value eq "<id>"``, joined by ``or``.

    :raise SCIMException: 400 ``invalidFilter`` for any other filter.
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
    raise InvalidFilterException(
        detail=f'flagadmin selects members by value: members[value eq "<user id>"], not {node}.'
    )


def _is_members(path: Any) -> bool:
    parts = path.parts if path is not None else ()
    schema = path.schema if path is not None else None
    return (
        bool(parts)
        and parts[0].lower() == "members"
        and (schema is None or schema.lower() == GROUP_SCHEMA.lower())
    )


def _member_operation(changes: MemberChanges, op: PatchOperation.Op, path: Any, value: Any) -> None:
    value_filter = path.value_filter if path is not None else None
    sub_attribute = path.parts[1] if path is not None and len(path.parts) > 1 else None
    if op == PatchOperation.Op.remove:
        if sub_attribute is not None:
            raise InvalidPathException(detail='Remove members as a whole: members[value eq "<user id>"].')
        if value_filter is not None:
            changes.removed(_filtered_member_ids(value_filter))
        elif value is not None and value != []:
            changes.removed(_member_entries(value, changes, removing=True))
        else:
            changes.replaced({})
        return
    if value_filter is not None or sub_attribute is not None:
        raise InvalidPathException(
            detail='Add or replace members with the path "members" and a list of {"value": "<user id>"}.'
        )
    if op == PatchOperation.Op.add:
        changes.added(_member_entries(value, changes))
    else:
        changes.replaced(_member_entries(value, changes))


def _group_fields(resource: Group) -> tuple[str, str | None]:
    return (
        _text(resource.display_name, "displayName", required=True),
        _text(resource.external_id, "externalId"),
    )


def _read_group(document: dict[str, Any], context: Context) -> Group:
    try:
        return Group.model_validate(document, scim_ctx=context, scim_policy=POLICY)
    except Exception as exc:
        raise as_scim_exception(exc) from exc


def _apply_members(
    conn: Connection, site: Site, row: dict[str, Any], name: str, changes: MemberChanges
) -> bool:
    """Write ``changes`` to the members of group ``row`` (renamed ``name``) and record them;
    return whether anything changed.

    :raise SCIMException: 400 ``invalidValue`` when a member to add is no live user.
    """
    if changes.refused:
        shown = ", ".join(repr(text) for text in changes.refused[:10])
        raise InvalidValueException(detail=f"No user has the id {shown}: members must be users' ids.")
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
        shown = ", ".join(repr(text) for text in unknown[:10])
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        raise InvalidValueException(detail=f"No user has the id {shown}{more}: members must be live users.")
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
            raise _uniqueness("group", conflict)
    members_changed = _apply_members(conn, site, row, name, changes)
    if not renamed and not members_changed:
        return row
    try:
        after = store.update_group(conn, row["id"], name, external_id, site.clock.now_rfc3339())
    except Conflict as exc:
        raise _uniqueness("group", "displayName") from exc
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

    :raise SCIMException: 400 for an invalid body or an unknown member, 409 ``uniqueness``
        when a group has the displayName (whatever its case) or the externalId.
    """
    resource = _read_group(document, Context.RESOURCE_CREATION_REQUEST)
    name, external_id = _group_fields(resource)
    changes = MemberChanges()
    changes.added(_member_entries(resource.members, changes))
    now = site.clock.now_rfc3339()
    with conn.write("directory"):
        conflict = store.group_conflict(conn, name, external_id)
        if conflict:
            raise _uniqueness("group", conflict)
        try:
            group_id = store.insert_group(conn, name, external_id, now)
        except Conflict as exc:
            raise _uniqueness("group", "displayName") from exc
        row = store.group(conn, group_id)
        events.record(conn, "group-created", events.SCIM_CLIENT, data=group_record(row), clock=site.clock)
        _apply_members(conn, site, row, name, changes)
    return _group_documents(conn, site, [row], parameters)[0], site.location(
        "Groups", group_scim_id(group_id)
    )


def replace_group(
    conn: Connection,
    site: Site,
    group_id: str,
    document: dict[str, Any],
    parameters: ResponseParameters[Any] | None = None,
) -> dict[str, Any]:
    """``PUT /Groups/{id}``: replace the displayName, externalId and the whole membership
    (absent ``members``: none).

    :raise SCIMException: 400, 404, 409 as for :func:`create_group`.
    """
    resource = _read_group(document, Context.RESOURCE_REPLACEMENT_REQUEST)
    name, external_id = _group_fields(resource)
    changes = MemberChanges()
    changes.replaced(_member_entries(resource.members, changes))
    number = _id("group", group_id)
    with conn.write("directory"):
        row = store.group(conn, number)
        if row is None:
            raise _not_found("group", group_id)
        after = _write_group(conn, site, row, name, external_id, changes)
    return _group_documents(conn, site, [after], parameters)[0]


def patch_group(
    conn: Connection,
    site: Site,
    group_id: str,
    document: dict[str, Any],
    parameters: ResponseParameters[Any] | None = None,
    *,
    answer: bool = True,
) -> dict[str, Any] | None:
    """``PATCH /Groups/{id}`` in the dialects of Okta (rename with ``id`` in a no-path value,
    ``remove`` by ``members[value eq "..."]`` plus ``add``), Entra (``Replace``, remove with a
    value list, no-path replace) and authentik (one member per operation). Operations on
    ``members`` are applied to the stored membership as sets, in order; the others (name,
    externalId) by scim2-models on the group without its members. Returns the group (None
    without ``answer``: a 10,000-member group is then not read back).

    :raise SCIMException: 400 for an invalid operation or an unknown member (nothing is
        written), 404 for an unknown group, 409 ``uniqueness`` for a rename to a taken name.
    """
    patch = _read_patch(Group, document)
    number = _id("group", group_id)
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
    with conn.write("directory"):
        row = store.group(conn, number)
        if row is None:
            raise _not_found("group", group_id)
        resource = Group(
            id=group_scim_id(row["id"]), external_id=row["external_id"], display_name=row["display_name"]
        )
        if others:
            try:
                PatchOp[Group].model_construct(operations=others).patch(resource, scim_policy=POLICY)
            except Exception as exc:
                raise as_scim_exception(exc) from exc
        name, external_id = _group_fields(resource)
        after = _write_group(conn, site, row, name, external_id, changes)
    return _group_documents(conn, site, [after], parameters)[0] if answer else None


def delete_group(conn: Connection, site: Site, group_id: str) -> None:
    """``DELETE /Groups/{id}``: remove the group and its memberships (role mappings that name
    it stay, and apply again to a group created later under the same name).

    :raise SCIMException: 404 for an unknown or deleted group.
    """
    number = _id("group", group_id)
    with conn.write("directory"):
        row = store.group(conn, number)
        if row is None:
            raise _not_found("group", group_id)
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


def search(
    conn: Connection, site: Site, resource_type: str | None, document: dict[str, Any]
) -> dict[str, Any]:
    """``POST /Users/.search``, ``POST /Groups/.search`` and ``POST /.search`` (None: both
    types; RFC 7644 section 3.4.3): the same answer as the GET with those parameters. Sorting
    is not supported and ignored.

    :raise SCIMException: 400 for an invalid request.
    """
    try:
        request = SearchRequest.model_validate(document, scim_ctx=Context.SEARCH_REQUEST, scim_policy=POLICY)
    except Exception as exc:
        raise as_scim_exception(exc) from exc
    args: dict[str, Any] = {}
    if request.filter is not None:
        args["filter"] = str(request.filter)
    for name, value in (("startIndex", request.start_index), ("count", request.count)):
        if value is not None:
            args[name] = str(value)
    if request.attributes:
        args["attributes"] = ",".join(str(path) for path in request.attributes)
    if request.excluded_attributes:
        args["excludedAttributes"] = ",".join(str(path) for path in request.excluded_attributes)
    if resource_type == "User":
        return list_users(conn, site, args)
    if resource_type == "Group":
        return list_groups(conn, site, args)
    return _list_all(conn, site, args)


def _list_all(conn: Connection, site: Site, args: dict[str, Any]) -> dict[str, Any]:
    """Users then groups, as one list paged across both (``POST /.search``); an attribute one
    type does not have makes the filter false for it (RFC 7644 section 3.4.2.1)."""
    start, count = paging(args)
    text = (args.get("filter") or "").strip()
    wheres = {}
    for model, vocabulary in ((User, USER_ATTRIBUTES), (Group, GROUP_ATTRIBUTES)):
        try:
            wheres[model] = (
                condition(parse_filter(model, text), vocabulary, conn.dialect, unknown_is_false=True)
                if text
                else None
            )
        except UnsupportedFilter as exc:
            raise InvalidFilterException(detail=str(exc)) from exc
    users_total, users = store.users_page(conn, wheres[User], start - 1, count)
    groups_total, groups = store.groups_page(
        conn, wheres[Group], max(0, start - 1 - users_total), count - len(users)
    )
    documents = _user_documents(conn, site, users, response_parameters(User, args))
    documents += _group_documents(
        conn, site, groups, response_parameters(Group, args), member_budget=MAX_MEMBERS_PER_PAGE
    )
    return list_response(users_total + groups_total, start, documents)
