"""The SCIM 2.0 protocol as flagadmin speaks it (RFC 7643, RFC 7644), on scim2-models.

What is here is protocol only, no storage: the resource models of what flagadmin keeps
(:class:`User`, :class:`Group`; their ``/Schemas`` are generated from them, so the schemas
cannot claim an attribute flagadmin does not keep), the tolerances that let the dialects of
real identity providers through (:data:`POLICY`), the discovery documents, the limits, the
parsing of requests (JSON body, paging, ``attributes``, ``filter``) and the one way errors are
written (:func:`error_body`).

Decisions where the RFCs leave a choice (see docs/scim.md):

- Unknown attributes and schema URNs (the enterprise extension, Entra's ADSCIM group schema,
  Okta's ``password``, ``locale``) are accepted and ignored, never refused.
- A ``remove`` that carries a ``value`` removes those values (Microsoft Entra without
  ``aadOptscim062020``, authentik); a path filter that matches nothing in an ``add`` or
  ``replace`` adds the value it describes (Entra's ``emails[type eq "work"].value``).
- ``op`` is case-insensitive and ``"False"``/``"True"`` strings are booleans (Entra).
- A user has at most one email: the primary one, else the first ``work`` one, else the first.

Refusals: every function here refuses a request with :mod:`flagadmin.refusals` (an
:class:`~flagadmin.refusals.Invalid` carrying RFC 7644 section 3.12's ``scimType``), never with
scim2-models' own exceptions: :func:`as_refusal` converts those where scim2-models parses for
flagadmin, so that nothing past the directory's edge knows them.

The module is over 400 lines on purpose: it has one job, saying what SCIM is to flagadmin
(RFC 7643 sections 4.1 and 4.2 for the models, 5-7 for the discovery documents and schemas;
RFC 7644 sections 3.4.2, 3.9 and 3.12 for the requests read and the errors written, section 4
for discovery), and its parts are read together: the models are what the schemas, the
filters and the response parameters are generated from.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar

import orjson
from pydantic import Field, ValidationError
from scim2_models import (
    URN,
    AuthenticationScheme,
    Bulk,
    CaseExact,
    ChangePassword,
    ComplexAttribute,
    Context,
    Error,
    ETag,
    Filter,
    Meta,
    Mutability,
    Pagination,
    Patch,
    Reference,
    Required,
    Resource,
    ResourceType,
    ResponseParameters,
    SCIMException,
    ScimFilter,
    ScimPolicy,
    ServiceProviderConfig,
    Sort,
    Uniqueness,
)

from ..refusals import Conflict, Invalid, NotFound, Refusal
from ..timestamps import format_rfc3339, parse_rfc3339

MEDIA_TYPE = "application/scim+json"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST_RESPONSE_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"

#: Resources per list page at most (``filter.maxResults``, ``pagination.maxPageSize``); also
#: the page size when a request gives no ``count``.
MAX_RESULTS = 200

#: The largest ``startIndex`` taken: a signed 64-bit integer (what JSON encoders and the
#: databases' OFFSET take); a larger one is refused, never answered 500.
MAX_START_INDEX = 2**63 - 1
#: Request bodies larger than this are refused with 413 (a PUT of a 10,000-member group is
#: about 600 KB).
MAX_BODY_BYTES = 2 * 1024 * 1024
#: JSON nesting deeper than this is refused (the deepest real payload, a PATCH adding members,
#: is 5 levels deep).
MAX_JSON_DEPTH = 12
#: Operations per PATCH request at most (authentik sends one per member when it may).
MAX_OPERATIONS = 10_000
#: Members one request may name at most; a group may hold more.
MAX_MEMBERS = 100_000
#: Characters of a filter at most.
MAX_FILTER_LENGTH = 4_096
#: Characters of one string attribute at most (userName, names, emails, externalId).
MAX_STRING = 1_024
#: A page of groups with their members holds about this many members at most: the page ends
#: before the group that would pass it (``itemsPerPage`` says how many groups came).
MAX_MEMBERS_PER_PAGE = 100_000

#: How flagadmin reads what identity providers send: everything RFC 7644 allows, plus the
#: tolerances of the module docstring.
POLICY = ScimPolicy(
    unknown=ScimPolicy.Unknown.ignore,
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)


# --- the resources flagadmin keeps (RFC 7643 sections 4.1, 4.2) ------------------------------


class UserName(ComplexAttribute):
    """The parts of a user's name that flagadmin keeps."""

    formatted: str | None = None
    """The full name, formatted for display."""

    family_name: str | None = None
    """The family name (last name in most Western languages)."""

    given_name: str | None = None
    """The given name (first name in most Western languages)."""


class UserEmail(ComplexAttribute):
    """A user's email. flagadmin keeps one per user (the primary one)."""

    value: str | None = None
    """The email address."""

    type: str | None = Field(None, examples=["work", "home", "other"])
    """What the address is for, e.g. 'work'."""

    primary: bool | None = None
    """Whether it is the user's preferred address (absent: false; null is refused)."""


class UserGroup(ComplexAttribute):
    """A group the user is a member of (read-only: groups change through /Groups)."""

    value: Annotated[str | None, Mutability.read_only, CaseExact.true] = None
    """The group's id."""

    ref: Annotated[Reference[Group] | None, Mutability.read_only] = Field(
        None, serialization_alias="$ref", validation_alias="$ref"
    )
    """The group's URI."""

    display: Annotated[str | None, Mutability.read_only] = None
    """The group's displayName."""


class User(Resource[Any]):
    """A flagadmin user: who may call the admin API with a personal access token."""

    __schema__ = URN(USER_SCHEMA)

    user_name: Annotated[str | None, Uniqueness.server, Required.true] = None
    """Unique identifier of the user, whatever its case (flagadmin's username)."""

    name: UserName | None = None
    """The components of the user's real name."""

    Name: ClassVar[type[ComplexAttribute]] = UserName

    display_name: str | None = None
    """The name of the user, shown to other users (the personal dashboard's admins and owners)."""

    active: Annotated[bool | None, Required.true] = None
    """True: the user may sign in. False: it is deactivated, its personal access tokens are
    revoked. Always one of the two: null is refused and it cannot be removed; a POST without it
    creates an active user, a PUT without it leaves it as it was."""

    emails: list[UserEmail] | None = None
    """The user's email; flagadmin keeps one (the primary one)."""

    Emails: ClassVar[type[ComplexAttribute]] = UserEmail

    groups: Annotated[list[UserGroup] | None, Mutability.read_only] = None
    """The groups the user is a member of."""

    Groups: ClassVar[type[ComplexAttribute]] = UserGroup


class GroupMember(ComplexAttribute):
    """A member of a group: a user (flagadmin has no nested groups)."""

    value: Annotated[str | None, Mutability.immutable, CaseExact.true] = None
    """The member user's id."""

    ref: Annotated[Reference[User] | None, Mutability.immutable] = Field(
        None, serialization_alias="$ref", validation_alias="$ref"
    )
    """The member user's URI."""

    type: Annotated[str | None, Mutability.immutable] = Field(None, examples=["User"])
    """Always 'User'."""

    display: str | None = None
    """The member's display text as the client sent it, else the user's displayed name."""


class Group(Resource[Any]):
    """A group of users; the roles it grants are set in flagadmin (flagadmin group-role)."""

    __schema__ = URN(GROUP_SCHEMA)

    display_name: Annotated[str | None, Required.true, Uniqueness.server] = None
    """The group's name, unique whatever its case; role mappings name groups by it."""

    members: list[GroupMember] | None = None
    """The group's members."""

    Members: ClassVar[type[ComplexAttribute]] = GroupMember


User.model_rebuild()
Group.model_rebuild()
UserGroup.model_rebuild()
GroupMember.model_rebuild()

#: Resource models by resource type name.
MODELS: dict[str, type[Resource[Any]]] = {"User": User, "Group": Group}
ENDPOINTS = {"User": "/Users", "Group": "/Groups"}


# --- errors (RFC 7644 section 3.12) ------------------------------------------------------------


#: Words of pydantic's and Python's that never reach a client: a detail holding one is replaced
#: by flagadmin's own.
_FOREIGN_WORDS = (
    "pydantic",
    "input should",
    "validation error",
    "[type=",
    "<class",
    "object at 0x",
    "traceback",
)

#: What a value of each of pydantic's error types should have been, by the type's first word.
_ACCEPTED = {
    "string": "a string",
    "bool": "true or false",
    "model": "an object",
    "dict": "an object",
    "list": "an array",
    "iterable": "an array",
    "tuple": "an array",
    "int": "a number",
    "float": "a number",
    "datetime": "an RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z",
    "url": "a URI",
}


def quoted(text: str) -> str:
    """``text`` in double quotes as JSON writes it (never a Python repr), for messages that
    show what a request sent (a lone surrogate, which orjson refuses, as a ``\\u`` escape)."""
    try:
        return orjson.dumps(text).decode()
    except orjson.JSONEncodeError:
        return json.dumps(text)


def json_kind(value: Any) -> str:
    """What a JSON value is, in words (``null``, ``true``, ``a number``, ``a string``...), for
    messages that say what a request sent without echoing it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object"


def _attribute_name(location: tuple[Any, ...] | list[Any], whole: str) -> str:
    """The SCIM path of a pydantic error location: ``("emails", 0, "primary")`` ->
    ``emails[0].primary``, field names in camelCase (``user_name`` -> ``userName``)."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        name = str(part)
        if name.startswith(("function-", "json-or-python", "union[")) or name in ("str", "bool", "list"):
            continue
        name = name if name.startswith("$") else _camel(name)
        text = f"{text}.{name}" if text else name
    return text or whole


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _clean(detail: str, attribute: str | None = None) -> str:
    """``detail`` when it is in flagadmin's words; else flagadmin's words for it."""
    lowered = detail.lower()
    if detail and not any(word.lower() in lowered for word in _FOREIGN_WORDS):
        return detail
    if attribute:
        return f"{attribute} has a value of the wrong type: see /Schemas for what it takes."
    return "The request is not a valid SCIM request: see /Schemas for the attributes and their types."


def _validation_message(error: Any, whole: str = "the body") -> str:
    """flagadmin's words for one pydantic error (``{"type", "loc", "msg", "input"}``): which
    attribute was wrong, what it takes, and what kind of value it had."""
    location = error.get("loc") or ()
    attribute = _attribute_name(location, whole)
    kind = str(error.get("type") or "")
    message = str(error.get("msg") or "")
    if kind == "missing" or (location and "is required but value is missing" in message):
        return f"{attribute} is required."
    named = re.match(r"Field '([\w.$]+)' is required", message)
    if named:
        return f"{named.group(1)} is required."
    accepted = _ACCEPTED.get(kind.split("_", 1)[0])
    if accepted is None:
        return _clean(message, attribute if location else None)
    return f"{attribute} must be {accepted}; it was {json_kind(error.get('input'))}."


def _validation_error(exc: BaseException | None) -> ValidationError | None:
    """The pydantic ValidationError ``exc`` is or was raised from, if any."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, ValidationError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def as_refusal(exc: Exception, whole: str = "the body") -> Refusal:
    """The refusal a failure of scim2-models to read a request stands for, in flagadmin's words
    (never pydantic's text, links or Python reprs): scim2-models' own exceptions keep their
    status and ``scimType``; a pydantic validation error (raised alone or behind one of
    scim2-models') says which attribute was wrong, what it takes and what kind of value it
    had (``invalidValue``, or the ``scimType`` scim2-models gave it); anything else is
    ``invalidSyntax``. ``whole`` names what a problem without an attribute is about. RFC 7644
    section 3.12."""
    validation = _validation_error(exc)
    if validation is not None and validation.errors():
        errors = validation.errors()
        scim_type = exc.scim_type if isinstance(exc, SCIMException) and exc.scim_type else None
        if scim_type is None:
            scim_type = Error.from_validation_error(errors[0]).scim_type or "invalidValue"
        detail = _validation_message(errors[0], whole)
        if len(errors) > 1:
            detail = f"{detail} (and {len(errors) - 1} more problems)"
        return Invalid(detail, scim_type=scim_type)
    if not isinstance(exc, SCIMException):
        return Invalid(
            "The request is not a valid SCIM request: see /Schemas for the attributes and their types.",
            scim_type="invalidSyntax",
        )
    error = exc.to_error()
    attribute = exc.context.get("attribute")
    detail = _clean(error.detail or "", str(attribute) if attribute else None)
    if error.status == NotFound.status:
        return NotFound(detail, scim_type=error.scim_type)
    if error.status == Conflict.status:
        return Conflict(detail, scim_type=error.scim_type)
    return Invalid(detail, scim_type=error.scim_type or "invalidValue")


def error_body(status: int, detail: str, scim_type: str | None = None) -> dict[str, Any]:
    """RFC 7644 section 3.12's error body: ``schemas``, ``status`` (a string), ``scimType``
    (when there is one) and ``detail``."""
    error = Error(status=status, scim_type=scim_type, detail=detail)
    return error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


# --- discovery (RFC 7644 section 4) ------------------------------------------------------------


def service_provider_config(base_url: str) -> dict[str, Any]:
    """``/ServiceProviderConfig``: what flagadmin supports, truthfully: PATCH, filters
    (``maxResults`` :data:`MAX_RESULTS`), index paging; no bulk, sort, ETags or password
    changes."""
    config = ServiceProviderConfig(
        documentation_uri=None,
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_RESULTS),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        pagination=Pagination(
            cursor=False,
            index=True,
            default_pagination_method="index",
            default_page_size=MAX_RESULTS,
            max_page_size=MAX_RESULTS,
        ),
        authentication_schemes=[
            AuthenticationScheme(
                type="oauthbearertoken",
                name="SCIM token",
                description="The token from POST /api/admin/scim-settings/generate-new-token, sent as "
                "'Authorization: Bearer <token>'. Generating a new token revokes the previous one.",
                primary=True,
            )
        ],
        meta=Meta(resource_type="ServiceProviderConfig", location=f"{base_url}/ServiceProviderConfig"),
    )
    return config.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def resource_types(base_url: str) -> list[dict[str, Any]]:
    """``/ResourceTypes``: User at ``/Users`` and Group at ``/Groups``, without extensions
    (the enterprise extension is accepted and ignored, so it is not announced)."""
    documents = []
    for name, model in MODELS.items():
        resource_type = ResourceType(
            id=name,
            name=name,
            endpoint=ENDPOINTS[name],
            description=(model.__doc__ or name).strip(),
            schema_=URN(str(model.__schema__)),
            meta=Meta(resource_type="ResourceType", location=f"{base_url}/ResourceTypes/{name}"),
        )
        documents.append(resource_type.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    return documents


def schemas(base_url: str) -> list[dict[str, Any]]:
    """``/Schemas``: the schemas of :class:`User` and :class:`Group`, generated from the models
    (so they list exactly the attributes flagadmin keeps)."""
    documents = []
    for name, model in MODELS.items():
        schema = model.to_schema()
        schema.name = name
        schema.description = (model.__doc__ or name).strip()
        schema.meta = Meta(resource_type="Schema", location=f"{base_url}/Schemas/{model.__schema__}")
        documents.append(schema.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    return documents


# --- reading requests ----------------------------------------------------------------------------


def parse_json(data: bytes) -> Any:
    """The JSON document of a request body.

    :raise Invalid: ``invalidSyntax`` when the body is empty, not JSON, nested deeper than
        :data:`MAX_JSON_DEPTH`, or not an object.
    """
    if not data.strip():
        raise Invalid("The request needs a JSON body; it had none.", scim_type="invalidSyntax")
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise Invalid(f"The request body is not valid JSON: {exc}", scim_type="invalidSyntax") from exc
    if _depth(document) > MAX_JSON_DEPTH:
        raise Invalid(
            f"The request body is nested more than {MAX_JSON_DEPTH} levels deep.", scim_type="invalidSyntax"
        )
    if not isinstance(document, dict):
        raise Invalid("The request body must be a JSON object.", scim_type="invalidSyntax")
    return document


def _depth(document: Any) -> int:
    """How deeply ``document`` nests (a scalar: 0), without recursion."""
    deepest = 0
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _integer(args: dict[str, str], name: str) -> int | None:
    text = args.get(name)
    if text is None or not text.strip():
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise Invalid(
            f"{name} must be an integer; it was {quoted(text[:50])}.", scim_type="invalidValue"
        ) from None


def paging(args: dict[str, str]) -> tuple[int, int]:
    """``(startIndex, count)`` of a list request (RFC 7644 section 3.4.2.4): ``startIndex`` is
    1-based (below 1: 1), ``count`` defaults to and is capped at :data:`MAX_RESULTS` (negative:
    0, which asks for the total alone).

    :raise Invalid: ``invalidValue`` when either is not an integer, or ``startIndex`` is
        above :data:`MAX_START_INDEX`.
    """
    start = _integer(args, "startIndex")
    count = _integer(args, "count")
    if start is not None and start > MAX_START_INDEX:
        raise Invalid(f"startIndex must be at most {MAX_START_INDEX}.", scim_type="invalidValue")
    start = 1 if start is None or start < 1 else start
    count = MAX_RESULTS if count is None else min(max(count, 0), MAX_RESULTS)
    return start, count


def response_parameters(model: type[Resource[Any]], args: dict[str, Any]) -> ResponseParameters[Any]:
    """The ``attributes`` / ``excludedAttributes`` of a request (RFC 7644 section 3.9).

    :raise Invalid: both are given, or one is not a list of attribute paths.
    """
    values = {key: args[key] for key in ("attributes", "excludedAttributes") if args.get(key)}
    try:
        return ResponseParameters[model].model_validate(values)
    except (ValidationError, SCIMException) as exc:
        raise as_refusal(exc) from exc


def parse_filter(model: type[Resource[Any]], text: str) -> Any:
    """The syntax tree of the ``filter`` ``text`` on ``model`` (RFC 7644 section 3.4.2.2).

    :raise Invalid: ``invalidFilter`` when it does not parse, is longer than
        :data:`MAX_FILTER_LENGTH`, or compares a value of the wrong type.
    """
    if len(text) > MAX_FILTER_LENGTH:
        raise Invalid(f"The filter is longer than {MAX_FILTER_LENGTH} characters.", scim_type="invalidFilter")
    try:
        return ScimFilter[model](text).ast
    except (SCIMException, ValidationError, ValueError, RecursionError) as exc:
        if isinstance(exc, RecursionError):
            reason = "it nests too deeply"
        elif isinstance(exc, SCIMException | ValidationError):
            reason = as_refusal(exc, "the value compared").message
        else:
            reason = _clean(str(exc))
        raise Invalid(
            f"Invalid filter {quoted(text[:200])}: {reason.rstrip('.')}. Filters are written as in "
            'RFC 7644 section 3.4.2.2, e.g. userName eq "jane@example.com".',
            scim_type="invalidFilter",
        ) from exc


#: The timestamps of a resource's ``meta`` (RFC 7643 section 3.1), written as they are stored.
_META_TIMES = ("created", "lastModified")


def dump(resource: Resource[Any], parameters: ResponseParameters[Any] | None = None) -> dict[str, Any]:
    """``resource`` as a response body, with the attributes ``parameters`` select.

    ``meta.created`` and ``meta.lastModified`` are written as flagadmin stores and filters them
    (RFC 3339 UTC with milliseconds, ``2026-11-27T04:36:28.000Z``): pydantic writes a datetime
    with six digits of fraction, or with none when they are all zero, so that two timestamps
    of the same resource could differ in form and compare wrongly as text
    (``"...28.036000Z" < "...28Z"``).
    """
    document = resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=parameters)
    meta = document.get("meta")
    if meta:
        for key in _META_TIMES:
            if isinstance(meta.get(key), str):
                meta[key] = format_rfc3339(parse_rfc3339(meta[key]))
    return document


def list_response(total: int, start: int, resources: list[dict[str, Any]]) -> dict[str, Any]:
    """A ListResponse (RFC 7644 section 3.4.2) of already dumped ``resources``."""
    return {
        "schemas": [LIST_RESPONSE_SCHEMA],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }
