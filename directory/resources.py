"""What SCIM users and groups share (RFC 7643 sections 3, 4; RFC 7644 sections 3.3-3.6, 3.12):
where a request came in (:class:`Site`), reading resource ids and string attributes as
flagadmin stores them, reading request bodies into scim2-models' resources and PATCH requests,
a filtered page of rows, the refusals every resource type gives (404 for an unknown id, 409
``uniqueness``), and the member sub-attributes of a group (:data:`MEMBER_FIELDS`).

Every refusal here is a :mod:`flagadmin.refusals` one carrying RFC 7644 section 3.12's
``scimType``; scim2-models' own exceptions are converted where it reads a request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from scim2_models import Context, PatchOp, Resource

from ..refusals import Conflict, Invalid, NotFound
from ..store import Connection
from ..store.scim_filter import GROUP_ID_PREFIX, UnsupportedFilter, Vocabulary, condition, parse_id
from ..timestamps import Clock
from .protocol import MAX_OPERATIONS, MAX_STRING, POLICY, as_refusal, parse_filter, quoted
from .values import check_patch, check_resource

#: Member sub-attributes of a group (RFC 7643 section 4.2), in output order.
MEMBER_FIELDS = ("value", "$ref", "type", "display")

ResourceT = TypeVar("ResourceT", bound=Resource[Any])


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


def not_found(kind: str, text: str) -> NotFound:
    """The 404 of an unknown, deleted or malformed id ``text`` of a ``kind`` (``user`` or
    ``group``) (RFC 7644 section 3.12: no ``scimType``)."""
    return NotFound(f"No {kind} has the id {quoted(text[:100])}.")


def read_id(kind: str, text: str) -> int:
    """The stored id of the SCIM id ``text`` of a ``user`` (digits) or ``group``
    (``group-<digits>``).

    :raise NotFound: ``text`` is no id of that kind.
    """
    number = parse_id(text, GROUP_ID_PREFIX if kind == "group" else "")
    if number is None:
        raise not_found(kind, text)
    return number


def read_text(value: Any, attribute: str, *, required: bool = False) -> str | None:
    """A string attribute as flagadmin stores it: at most :data:`MAX_STRING` characters,
    without NUL; an empty or blank required one is refused.

    :raise Invalid: ``invalidValue``, naming ``attribute``.
    """
    if value is None:
        if required:
            raise Invalid(f"{attribute} is required.", scim_type="invalidValue")
        return None
    text = str(value)
    if required and not text.strip():
        raise Invalid(f"{attribute} must not be empty.", scim_type="invalidValue")
    if len(text) > MAX_STRING:
        raise Invalid(f"{attribute} is longer than {MAX_STRING} characters.", scim_type="invalidValue")
    if "\x00" in text:
        raise Invalid(f"{attribute} contains a NUL character.", scim_type="invalidValue")
    return text


def uniqueness(kind: str, attribute: str) -> Conflict:
    """The 409 ``uniqueness`` of a ``kind`` (``user`` or ``group``) whose ``attribute`` another
    live one already has (RFC 7644 section 3.3)."""
    if attribute in ("userName", "displayName"):
        return Conflict(
            f"Another {kind} already has this {attribute} (compared whatever its case).",
            scim_type="uniqueness",
        )
    return Conflict(f"Another {kind} already has this {attribute}.", scim_type="uniqueness")


# --- reading requests ---------------------------------------------------------------------------


def read_resource(model: type[ResourceT], document: dict[str, Any], context: Context) -> ResourceT:
    """The ``model`` (User or Group) of a POST or PUT body ``document``, read in ``context``
    with flagadmin's tolerances (:data:`~flagadmin.directory.protocol.POLICY`).

    :raise Invalid: the body does not describe a ``model`` (``invalidValue``,
        ``invalidSyntax``, ``mutability``...), or an attribute flagadmin keeps is outside its
        type (:func:`~flagadmin.directory.values.check_resource`).
    """
    check_resource(model, document)
    try:
        return model.model_validate(document, scim_ctx=context, scim_policy=POLICY)
    except Exception as exc:
        raise as_refusal(exc) from exc


def read_patch(model: type[Resource[Any]], document: dict[str, Any]) -> PatchOp[Any]:
    """The PATCH request ``document`` on a ``model`` (RFC 7644 section 3.5.2), at most
    :data:`~flagadmin.directory.protocol.MAX_OPERATIONS` operations.

    :raise Invalid: too many operations, or an invalid operation (``invalidValue``,
        ``invalidPath``...), a value outside its attribute's type or the removal of a required
        attribute (:func:`~flagadmin.directory.values.check_patch`).
    """
    operations = document.get("Operations", document.get("operations"))
    if isinstance(operations, list) and len(operations) > MAX_OPERATIONS:
        raise Invalid(f"A PATCH takes at most {MAX_OPERATIONS} operations.", scim_type="invalidValue")
    check_patch(model, document)
    try:
        return PatchOp[model].model_validate(
            document, scim_ctx=Context.RESOURCE_PATCH_REQUEST, scim_policy=POLICY
        )
    except Exception as exc:
        raise as_refusal(exc) from exc


def filtered_page(
    conn: Connection,
    page: Callable[..., tuple[int, list[dict[str, Any]]]],
    vocabulary: Vocabulary,
    model: type[Resource[Any]],
    filter_text: str | None,
    start: int,
    count: int,
) -> tuple[int, list[dict[str, Any]]]:
    """``(total, rows)`` of ``page`` (``store.directory.users_page`` or ``groups_page``) for
    the ``filter`` ``filter_text`` on ``model``, from the 1-based ``start``, ``count`` rows at
    most (RFC 7644 sections 3.4.2.2, 3.4.2.4); ``vocabulary`` maps attributes to columns.

    :raise Invalid: ``invalidFilter`` for a filter that does not parse or that flagadmin cannot
        run.
    """
    where = None
    if filter_text is not None and filter_text.strip():
        try:
            where = condition(parse_filter(model, filter_text), vocabulary, conn.dialect)
        except UnsupportedFilter as exc:
            raise Invalid(str(exc), scim_type="invalidFilter") from exc
    return page(conn, where, start - 1, count)
