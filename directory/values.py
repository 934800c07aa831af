"""The JSON type of every attribute flagadmin keeps, checked in a request before scim2-models
reads it (RFC 7643 section 2.3 data types, section 7 ``required``; RFC 7644 sections 3.3,
3.5.1 and 3.5.2), so that no attribute is ever stored outside its type and every refusal says,
in flagadmin's words, which attribute was wrong and what it takes.

- A boolean (``active``, ``emails.primary``) is ``true`` or ``false``; the strings ``"true"``
  and ``"false"`` in any case are read as those (Microsoft Entra sends ``"False"``). Anything
  else, ``null`` included, is refused: pydantic alone would read ``1``, ``"yes"`` or ``"off"``
  as booleans, and ``null`` would store a third state that no filter finds.
- A string is a JSON string or ``null`` (unassigned); a number is no string.
- A complex attribute (``name``, one email, one member) is an object; a multi-valued one
  (``emails``, ``members``) an array of objects (a PATCH with a path may give one object).
- A required attribute (``userName``, ``active``, a group's ``displayName``) cannot be set to
  ``null`` or removed by a PATCH.

Attributes flagadmin does not keep (extensions, ``password``...) are not looked at: they are
accepted and ignored (docs/scim.md). Every refusal is :class:`~flagadmin.refusals.Invalid`
with ``scimType`` ``invalidValue`` (``mutability`` for removing a required attribute).
"""

from __future__ import annotations

import re
import types
from typing import Any, Union, get_args, get_origin

from scim2_models import ComplexAttribute, Mutability, Required, Resource

from ..refusals import Invalid
from .protocol import GROUP_SCHEMA, USER_SCHEMA, json_kind

#: The core schemas' URNs, as a prefix of attribute names (``urn:...:User:active``), lower case.
_CORE_PREFIXES = tuple(schema.lower() + ":" for schema in (USER_SCHEMA, GROUP_SCHEMA))

#: A PATCH path flagadmin checks the value of: ``attribute``, ``attribute[filter]``,
#: ``attribute.sub`` or ``attribute[filter].sub`` (other paths are left to scim2-models).
_PATH = re.compile(r"^([A-Za-z$][\w$-]*)(\[.*\])?(?:\.([A-Za-z$][\w$-]*))?$", re.DOTALL)

#: Booleans as strings that are read as booleans (Entra), lower case.
_BOOLEAN_WORDS = {"true": True, "false": False}


def _field(model: type[Any], name: str) -> tuple[str, Any, bool] | None:
    """``(SCIM name, annotation, required)`` of the attribute ``name`` of ``model`` (any case),
    or None when flagadmin does not keep it or a client cannot write it (read-only ones such as
    ``id``, ``meta`` and ``groups`` are ignored in requests)."""
    for field_name, info in model.model_fields.items():
        alias = info.serialization_alias or field_name
        if alias.lower() == name.lower():
            if Mutability.read_only in info.metadata:
                return None
            return alias, info.annotation, Required.true in info.metadata
    return None


def _shape(annotation: Any) -> tuple[str, type[ComplexAttribute] | None]:
    """What JSON an annotation takes: ``("boolean"|"string"|"object"|"array"|"other", the
    model of an object or of an array's items)``."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if annotation is bool:
        return "boolean", None
    if annotation is str:
        return "string", None
    if get_origin(annotation) is list:
        item = get_args(annotation)[0]
        complex_item = isinstance(item, type) and issubclass(item, ComplexAttribute)
        return "array", item if complex_item else None
    if isinstance(annotation, type) and issubclass(annotation, ComplexAttribute):
        return "object", annotation
    return "other", None


def _check(label: str, annotation: Any, required: bool, value: Any, *, single_allowed: bool = False) -> None:
    """Refuse ``value`` of the attribute ``label`` unless it has the JSON type of
    ``annotation``; a ``required`` attribute is never null."""
    shape, model = _shape(annotation)
    if shape == "boolean":
        if isinstance(value, bool) or (isinstance(value, str) and value.lower() in _BOOLEAN_WORDS):
            return
        raise Invalid(f"{label} must be true or false; it was {json_kind(value)}.", scim_type="invalidValue")
    if value is None:
        if required:
            raise Invalid(f"{label} is required: it cannot be null.", scim_type="invalidValue")
        return
    if shape == "string" and not isinstance(value, str):
        raise Invalid(f"{label} must be a string; it was {json_kind(value)}.", scim_type="invalidValue")
    if shape == "object":
        if not isinstance(value, dict):
            raise Invalid(f"{label} must be an object; it was {json_kind(value)}.", scim_type="invalidValue")
        _check_object(label, model, value)
    if shape == "array":
        if single_allowed and isinstance(value, dict) and model is not None:
            _check_object(label, model, value)
            return
        if not isinstance(value, list):
            raise Invalid(
                f"{label} must be an array{' of objects' if model else ''}; it was {json_kind(value)}.",
                scim_type="invalidValue",
            )
        if model is None:
            return
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                raise Invalid(
                    f"{label}[{index}] must be an object; it was {json_kind(item)}.", scim_type="invalidValue"
                )
            _check_object(f"{label}[{index}]", model, item)


def _check_object(prefix: str | None, model: type[Any], document: dict[str, Any]) -> None:
    """Check the attributes flagadmin keeps in the object ``document`` of ``model``; at the
    top (``prefix`` None) names may carry the core schema's URN or be dotted
    (``name.givenName``, as in a PATCH value without a path)."""
    for key, value in document.items():
        name = str(key)
        if prefix is None:
            lowered = name.lower()
            for urn in _CORE_PREFIXES:
                if lowered.startswith(urn):
                    name = name[len(urn) :]
                    break
            else:
                if lowered.startswith("urn:"):
                    continue  # an extension's attributes: accepted and ignored
        head, _, sub = name.partition(".") if prefix is None else (name, "", "")
        found = _field(model, head)
        if found is None:
            continue
        alias, annotation, required = found
        label = f"{prefix}.{alias}" if prefix else alias
        if sub:
            _check_sub(label, annotation, sub, value)
        else:
            _check(label, annotation, required, value)


def _check_sub(label: str, annotation: Any, sub: str, value: Any) -> None:
    """Check ``value`` for the sub-attribute ``sub`` of the attribute ``label``."""
    _, model = _shape(annotation)
    found = _field(model, sub) if model is not None else None
    if found is not None:
        alias, sub_annotation, required = found
        _check(f"{label}.{alias}", sub_annotation, required, value)


def check_resource(model: type[Resource[Any]], document: dict[str, Any]) -> None:
    """Check the POST or PUT body ``document`` of a ``model`` (User or Group): every attribute
    flagadmin keeps has its type.

    :raise Invalid: ``invalidValue``, naming the attribute, what it takes and what it had.
    """
    _check_object(None, model, document)


def check_patch(model: type[Resource[Any]], document: dict[str, Any]) -> None:
    """Check the values of the PATCH request ``document`` on a ``model`` (RFC 7644 section
    3.5.2), in every form: ``add`` and ``replace`` with a path (``active``,
    ``urn:...:User:active``, ``name.givenName``, ``emails[type eq "work"].primary``,
    ``emails[type eq "work"]``, ``members``) or without one (an object of attributes, dotted
    or URN keys), and ``remove`` of a required attribute.

    :raise Invalid: ``invalidValue`` for a value outside its attribute's type (``null`` for a
        boolean or a required attribute included); ``mutability`` for removing a required
        attribute.
    """
    operations = document.get("Operations", document.get("operations"))
    if not isinstance(operations, list):
        return
    for operation in operations:
        if not isinstance(operation, dict):
            continue
        fields = {str(key).lower(): item for key, item in operation.items()}
        op = str(fields.get("op") or "").lower()
        path, value = fields.get("path"), fields.get("value")
        if not isinstance(path, str) or not path.strip():
            if op in ("add", "replace") and isinstance(value, dict):
                _check_object(None, model, value)
            continue
        _check_path(model, op, path.strip(), value)


def _check_path(model: type[Resource[Any]], op: str, path: str, value: Any) -> None:
    lowered = path.lower()
    for urn in _CORE_PREFIXES:
        if lowered.startswith(urn):
            path = path[len(urn) :]
            break
    else:
        if lowered.startswith("urn:"):
            return
    match = _PATH.match(path)
    if match is None:
        return
    found = _field(model, match.group(1))
    if found is None:
        return
    alias, annotation, required = found
    value_filter, sub = match.group(2), match.group(3)
    if op == "remove":
        if required and not value_filter and not sub:
            raise Invalid(
                f"{alias} cannot be removed: it is required"
                + (" (a user is active, true, or deactivated, false)." if alias == "active" else "."),
                scim_type="mutability",
            )
        return
    if op not in ("add", "replace"):
        return
    label = f"{alias}{value_filter[:100] if value_filter else ''}"
    if sub:
        _check_sub(label, annotation, sub, value)
        return
    shape, item = _shape(annotation)
    if value_filter and shape == "array" and item is not None:
        if not isinstance(value, dict):
            raise Invalid(f"{label} must be an object; it was {json_kind(value)}.", scim_type="invalidValue")
        _check_object(label, item, value)
        return
    _check(label, annotation, required, value, single_allowed=True)
