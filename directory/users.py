"""SCIM users (RFC 7643 section 4.1; RFC 7644 sections 3.3 create, 3.4.1 and 3.4.2 read and
list, 3.5.1 replace, 3.5.2 PATCH, 3.6 delete): a user's stored columns and its SCIM document,
and the operations of ``/Users``.

Rules (docs/scim.md): a SCIM-created user has root role Viewer; its effective
root role is the highest of its own and its groups'. A user flagadmin already had keeps its
root role, and becomes SCIM-managed (read-only outside SCIM) when SCIM first writes it.
Deactivation (``active`` false) keeps the user readable and revokes its personal access
tokens at once; a deactivated user holds no project role. DELETE leaves a tombstone: the user
answers 404 from then on and its userName and externalId are free again. Events:
``user-created``, ``user-updated``, ``user-deleted``, ``group-user-removed`` (a deleted user
leaves its groups), ``pat-deleted``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scim2_models import Context, Meta, ResponseParameters

from .. import events
from ..refusals import Invalid
from ..store import Conflict, Connection
from ..store import directory as store
from ..store.scim_filter import USER_ATTRIBUTES, group_scim_id
from .protocol import (
    POLICY,
    USER_SCHEMA,
    User,
    UserEmail,
    UserGroup,
    UserName,
    as_refusal,
    dump,
    json_kind,
    list_response,
    paging,
    response_parameters,
)
from .resources import (
    Site,
    filtered_page,
    not_found,
    read_id,
    read_patch,
    read_resource,
    read_text,
    uniqueness,
)


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
    """The columns (:data:`flagadmin.store.directory.USER_FIELDS`) a SCIM ``user`` stands for:
    booleans as 0 or 1, never NULL (``emails.primary`` absent is 0; with no email, no email
    columns at all).

    :raise Invalid: ``invalidValue`` for a missing userName, a string too long, or an
        ``active`` that is not true or false.
    """
    email = _main_email(user.emails)
    name = user.name or UserName()
    if not isinstance(user.active, bool):
        raise Invalid(
            f"active must be true or false; it was {json_kind(user.active)}.", scim_type="invalidValue"
        )
    return {
        "username": read_text(user.user_name, "userName", required=True),
        "name": read_text(user.display_name, "displayName"),
        "email": read_text(email.value if email else None, "emails.value"),
        "email_type": read_text(email.type if email else None, "emails.type"),
        "email_primary": None if email is None else int(bool(email.primary)),
        "external_id": read_text(user.external_id, "externalId"),
        "given_name": read_text(name.given_name, "name.givenName"),
        "family_name": read_text(name.family_name, "name.familyName"),
        "formatted_name": read_text(name.formatted, "name.formatted"),
        "active": int(user.active),
    }


def _stated_active(document: dict[str, Any]) -> bool:
    """Whether the POST or PUT body ``document`` states ``active`` (any case, with or without
    the core schema's URN)."""
    names = {"active", f"{USER_SCHEMA.lower()}:active"}
    return any(str(key).lower() in names for key in document)


def _read_user(document: dict[str, Any], context: Context) -> tuple[User, bool]:
    """The User of a POST or PUT body and whether it stated ``active``; a body without it is
    read as ``active: true`` (the caller decides what the absence means)."""
    stated = _stated_active(document)
    user = read_resource(User, document if stated else {**document, "active": True}, context)
    return user, stated


def user_resource(site: Site, row: dict[str, Any], groups: list[dict[str, Any]] | None) -> User:
    """The SCIM User of a stored user ``row`` and its ``groups`` (None: not read)."""
    email = None
    if row["email"] is not None:
        primary, kind = row["email_primary"], row["email_type"]
        if not row["scim_managed"] and kind is None:
            # A user flagadmin had before SCIM: its one email is its primary work email.
            kind = "work"
        if primary is None:  # never written by SCIM (primary), or before booleans were checked
            primary = not row["scim_managed"]
        email = UserEmail(value=row["email"], type=kind, primary=bool(primary))
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
        active=row["active"] != 0,
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
        "active": row["active"] != 0,
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


def user_documents(
    conn: Connection, site: Site, rows: list[dict[str, Any]], parameters: ResponseParameters[Any] | None
) -> list[dict[str, Any]]:
    """The SCIM documents of the stored users ``rows``, with the attributes ``parameters``
    select (RFC 7644 section 3.9); their groups are read, in one statement, only when the
    documents carry them."""
    groups = None
    if rows and _returned(parameters, "groups", User.__schema__):
        groups = store.groups_of_users(conn, [row["id"] for row in rows])
    return [dump(user_resource(site, row, groups[row["id"]] if groups else None), parameters) for row in rows]


def get_user(
    conn: Connection, site: Site, user_id: str, parameters: ResponseParameters[Any] | None = None
) -> dict[str, Any]:
    """``GET /Users/{id}``: the user, also when deactivated.

    :raise NotFound: an unknown or deleted user.
    """
    row = store.user(conn, read_id("user", user_id))
    if row is None:
        raise not_found("user", user_id)
    return user_documents(conn, site, [row], parameters)[0]


def list_users(conn: Connection, site: Site, args: dict[str, Any]) -> dict[str, Any]:
    """``GET /Users`` (and ``POST /Users/.search``): a ListResponse of the live users matching
    ``filter``, by id, paged by ``startIndex`` and ``count``, with the attributes asked for.

    :raise Invalid: ``invalidFilter`` or ``invalidValue`` for a bad parameter.
    """
    start, count = paging(args)
    parameters = response_parameters(User, args)
    total, rows = filtered_page(
        conn, store.users_page, USER_ATTRIBUTES, User, args.get("filter"), start, count
    )
    return list_response(total, start, user_documents(conn, site, rows, parameters))


def create_user(
    conn: Connection, site: Site, document: dict[str, Any], parameters: ResponseParameters[Any] | None = None
) -> tuple[dict[str, Any], str]:
    """``POST /Users``: create a SCIM-managed user with root role Viewer (active unless the
    body says ``active: false``); return its document and its location.

    :raise Invalid: an invalid body.
    :raise Conflict: ``uniqueness``: a live user has the userName (whatever its case) or the
        externalId.
    """
    user, _ = _read_user(document, Context.RESOURCE_CREATION_REQUEST)
    fields = user_fields(user)
    now = site.clock.now_rfc3339()
    with conn.write("directory"):
        conflict = store.user_conflict(conn, fields["username"], fields["external_id"])
        if conflict:
            raise uniqueness("user", conflict)
        try:
            user_id = store.insert_user(conn, fields, now)
        except Conflict as exc:
            raise uniqueness("user", "userName") from exc
        row = store.user(conn, user_id)
        events.record(conn, "user-created", events.SCIM_CLIENT, data=user_record(row), clock=site.clock)
    return user_documents(conn, site, [row], parameters)[0], site.location("Users", user_id)


def _write_user(conn: Connection, site: Site, row: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """Store ``fields`` for the user ``row`` (inside the open transaction): uniqueness checked,
    the change recorded, personal tokens revoked on deactivation. Returns the stored row."""
    conflict = store.user_conflict(conn, fields["username"], fields["external_id"], exclude_id=row["id"])
    if conflict:
        raise uniqueness("user", conflict)
    unchanged = all(row[name] == fields[name] for name in store.USER_FIELDS)
    if unchanged and row["scim_managed"]:
        return row
    now = site.clock.now_rfc3339()
    try:
        store.update_user(conn, row["id"], fields, now)
    except Conflict as exc:
        raise uniqueness("user", "userName") from exc
    after = store.user(conn, row["id"])
    events.record(
        conn,
        "user-updated",
        events.SCIM_CLIENT,
        data=user_record(after),
        pre_data=user_record(row),
        clock=site.clock,
    )
    if row["active"] != 0 and after["active"] == 0:  # NULL, from before booleans were checked: active
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
    ``id``, ``meta`` and ``groups`` are ignored); absent ones are cleared, except ``active``,
    which keeps its state (true or false: it is never cleared).

    :raise Invalid: an invalid body.
    :raise NotFound: an unknown user.
    :raise Conflict: ``uniqueness``, as for :func:`create_user`.
    """
    user, stated = _read_user(document, Context.RESOURCE_REPLACEMENT_REQUEST)
    fields = user_fields(user)
    number = read_id("user", user_id)
    with conn.write("directory"):
        row = store.user(conn, number)
        if row is None:
            raise not_found("user", user_id)
        if not stated:  # a PUT without active never reactivates, nor deactivates
            fields["active"] = 0 if row["active"] == 0 else 1
        after = _write_user(conn, site, row, fields)
    return user_documents(conn, site, [after], parameters)[0]


def patch_user(
    conn: Connection,
    site: Site,
    user_id: str,
    document: dict[str, Any],
    parameters: ResponseParameters[Any] | None = None,
) -> dict[str, Any]:
    """``PATCH /Users/{id}`` (RFC 7644 section 3.5.2), in every dialect
    :mod:`~flagadmin.directory.protocol` tolerates; answers the user.

    :raise Invalid: an invalid operation.
    :raise NotFound: an unknown user.
    :raise Conflict: ``uniqueness``, as for :func:`create_user`.
    """
    patch = read_patch(User, document)
    number = read_id("user", user_id)
    with conn.write("directory"):
        row = store.user(conn, number)
        if row is None:
            raise not_found("user", user_id)
        resource = user_resource(site, row, None)
        try:
            patch.patch(resource, scim_policy=POLICY)
        except Exception as exc:
            raise as_refusal(exc) from exc
        after = _write_user(conn, site, row, user_fields(resource))
    return user_documents(conn, site, [after], parameters)[0]


def delete_user(conn: Connection, site: Site, user_id: str) -> None:
    """``DELETE /Users/{id}``: tombstone the user (it answers 404 from now on; its userName
    and externalId are free), remove it from its groups and revoke its personal tokens.

    :raise NotFound: an unknown or already deleted user.
    """
    number = read_id("user", user_id)
    with conn.write("directory"):
        row = store.user(conn, number)
        if row is None:
            raise not_found("user", user_id)
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
