"""Searching the directory (RFC 7644 sections 3.4.2 and 3.4.3): ``POST /Users/.search``,
``POST /Groups/.search`` and ``POST /.search``, which lists users and groups as one list
paged across both. It sits above :mod:`~flagadmin.directory.users` and
:mod:`~flagadmin.directory.groups`, so that neither imports the other.
"""

from __future__ import annotations

from typing import Any

from scim2_models import Context, SearchRequest

from ..refusals import Invalid
from ..store import Connection
from ..store import directory as store
from ..store.scim_filter import GROUP_ATTRIBUTES, USER_ATTRIBUTES, UnsupportedFilter, condition
from .groups import group_documents, list_groups
from .protocol import (
    MAX_MEMBERS_PER_PAGE,
    POLICY,
    Group,
    User,
    as_refusal,
    list_response,
    paging,
    parse_filter,
    response_parameters,
)
from .resources import Site
from .users import list_users, user_documents


def search(
    conn: Connection, site: Site, resource_type: str | None, document: dict[str, Any]
) -> dict[str, Any]:
    """``POST /Users/.search``, ``POST /Groups/.search`` and ``POST /.search`` (None: both
    types; RFC 7644 section 3.4.3): the same answer as the GET with those parameters. Sorting
    is not supported and ignored.

    :raise Invalid: an invalid request (``invalidValue``, ``invalidFilter``...).
    """
    try:
        request = SearchRequest.model_validate(document, scim_ctx=Context.SEARCH_REQUEST, scim_policy=POLICY)
    except Exception as exc:
        raise as_refusal(exc) from exc
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
            raise Invalid(str(exc), scim_type="invalidFilter") from exc
    users_total, users = store.users_page(conn, wheres[User], start - 1, count)
    groups_total, groups = store.groups_page(
        conn, wheres[Group], max(0, start - 1 - users_total), count - len(users)
    )
    documents = user_documents(conn, site, users, response_parameters(User, args))
    documents += group_documents(
        conn, site, groups, response_parameters(Group, args), member_budget=MAX_MEMBERS_PER_PAGE
    )
    return list_response(users_total + groups_total, start, documents)
