"""Variants as the reference server stores them: a strategy's variants and a flag's variants in
one environment, normalised on write (``PUT .../variants-batch``, ``.../environments/{env}/variants``
and a strategy's ``variants``).

:func:`normalise` takes the list a request sent (plain JSON values, whatever a schema let
through) and returns the list to store, or raises :class:`~flagadmin.refusals.Invalid` naming
the field. What it does is the reference's ``fixVariantWeights`` and the variant rules around it:

- a name is URL-friendly (the flag name rule), unique in the list;
- ``weight`` an integer from 0 to 1000; ``weightType`` ``variable`` (default) or ``fix``;
  ``stickiness`` a non-empty string (default ``default``);
- a non-empty list has at least one ``variable`` variant, and its ``fix`` weights sum to at
  most 1000;
- each ``fix`` variant keeps its weight; the ``variable`` ones share the rest of 1000: each
  gets the integer quotient, and the remainder goes one by one to the first ``variable``
  variants *in the order they were sent* (400 left for 3: 134, 133, 133);
- ``payload`` ``{type, value}``: ``type`` one of string, json, csv, number; ``value`` a
  string, which parses as JSON for ``json`` and is a JSON number for ``number``;
- ``overrides`` ``[{contextName, values: [string]}]`` (a flag's variants only: a strategy's
  variants have none);
- the stored list is sorted by name as the reference sorts it (``String.localeCompare``,
  which for the characters a name may hold is :func:`name_order`). SDKs pick a variant by
  walking the list in order, so the same order means the same pick for the same user.

The stored shape of one variant: ``{name, weight, weightType, stickiness[, payload][,
overrides]}`` (``strategyVariantSchema`` / ``variantSchema``).
"""

from __future__ import annotations

import math
import re
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from .. import events
from ..events import Actor
from ..flags import access
from ..flags.changes import LOCK
from ..flags.names import name_problem
from ..permissions.names import UPDATE_FEATURE_ENVIRONMENT_VARIANTS
from ..records import as_json, json_kind
from ..refusals import Conflict, Forbidden, Invalid, NotFound
from ..store import Connection
from ..store import features as store_features
from ..store import variants as store_variants
from ..store.tokens import Caller
from ..timestamps import Clock

#: The total weight of a non-empty list of variants (weights are tenths of a percent).
TOTAL_WEIGHT = 1000

#: The kinds of weight: ``variable`` shares what the ``fix`` ones leave.
WEIGHT_TYPES: tuple[str, ...] = ("variable", "fix")

#: The kinds of payload the reference accepts.
PAYLOAD_TYPES: tuple[str, ...] = ("json", "csv", "string", "number")

#: The most variants one list may hold: weights are integers summing to 1000, so past 1000
#: variants some could never be picked.
MAX_VARIANTS = 1000

#: A stickiness or an override's context name is at most this long (a context field's name).
MAX_CONTEXT_NAME_LENGTH = 100

#: A JSON number, the text a ``number`` payload holds.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

#: The keys of one variant sent for a flag environment / a strategy.
_FLAG_KEYS = frozenset({"name", "weight", "weightType", "stickiness", "payload", "overrides"})
_STRATEGY_KEYS = _FLAG_KEYS - {"overrides"}

#: The primary collation order of the characters a variant name may hold, as ICU's root
#: collation orders them (punctuation, then digits, then letters whatever their case): the
#: order ``String.localeCompare`` gives in the reference server.
_PRIMARY = {char: rank for rank, char in enumerate("_-!.'()*~0123456789abcdefghijklmnopqrstuvwxyz")}


def name_order(name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The key that sorts variant names as the reference server sorts them
    (``a.name.localeCompare(b.name)``, ICU's root collation) for the names a variant may have
    (the URL-friendly rule: letters, digits and ``- _ . ! ~ * ' ( )``): first by each
    character's primary weight, case left aside (``_`` < ``-`` < ``!`` < ``.`` < ``'`` <
    ``(`` < ``)`` < ``*`` < ``~`` < digits < letters), then, between names equal but for case,
    lower case before upper case at the first difference (``a`` < ``A`` < ``b``). A
    character outside the rule sorts after every letter, by code point."""
    primary = tuple(_PRIMARY.get(char.lower(), 100 + ord(char)) for char in name)
    tertiary = tuple(1 if char.isupper() else 0 for char in name)
    return primary, tertiary


def _refuse(field: str, problem: str) -> None:
    raise Invalid(f"{field}: {problem}", details=[f"{field}: {problem}"])


def _whole_number(value: Any) -> int | None:
    """``value`` as an int when it is a JSON number with no fraction (``100`` or ``100.0``),
    else None (``true`` is not a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _text(value: Any, field: str, *, at_most: int) -> str:
    """``value`` when it is a non-empty string of at most ``at_most`` characters.

    :raise Invalid: it is not; the message names ``field``."""
    if not isinstance(value, str) or not value:
        _refuse(field, f"must be a non-empty string; got {json_kind(value)}")
    if len(value) > at_most:
        _refuse(field, f"must be at most {at_most} characters long (it has {len(value)})")
    return value


def _payload(value: Any, field: str) -> dict[str, str]:
    """A variant's payload, checked: ``{type, value}``."""
    if not isinstance(value, dict):
        _refuse(field, f"must be an object {{type, value}}; got {json_kind(value)}")
    unknown = sorted(set(value) - {"type", "value"})
    if unknown:
        _refuse(f"{field}.{unknown[0][:100]}", "is not a field of a payload: it has only type and value")
    kind = value.get("type")
    if kind not in PAYLOAD_TYPES:
        sent = "nothing" if "type" not in value else json_kind(kind)
        _refuse(f"{field}.type", f"must be one of {', '.join(PAYLOAD_TYPES)}; got {sent}")
    text = value.get("value")
    if not isinstance(text, str):
        sent = "nothing" if "value" not in value else json_kind(text)
        _refuse(f"{field}.value", f"must be a string (a JSON text for type json); got {sent}")
    if kind == "json":
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            _refuse(f"{field}.value", f"must be valid JSON text when type is json; got {as_json(text)}")
    if kind == "number" and not _JSON_NUMBER.fullmatch(text):
        _refuse(f"{field}.value", f"must be a number (42, -1.5) when type is number; got {as_json(text)}")
    return {"type": kind, "value": text}


def _overrides(value: Any, field: str) -> list[dict[str, Any]]:
    """A flag variant's overrides, checked: ``[{contextName, values: [string]}]``."""
    if not isinstance(value, list):
        _refuse(field, f"must be an array of {{contextName, values}}; got {json_kind(value)}")
    out = []
    for i, override in enumerate(value):
        where = f"{field}.{i}"
        if not isinstance(override, dict):
            _refuse(where, f"must be an object {{contextName, values}}; got {json_kind(override)}")
        unknown = sorted(set(override) - {"contextName", "values"})
        if unknown:
            _refuse(f"{where}.{unknown[0][:100]}", "is not a field of an override (contextName, values)")
        context = _text(override.get("contextName"), f"{where}.contextName", at_most=MAX_CONTEXT_NAME_LENGTH)
        values = override.get("values")
        if not isinstance(values, list):
            _refuse(f"{where}.values", f"must be an array of strings; got {json_kind(values)}")
        for j, item in enumerate(values):
            if not isinstance(item, str):
                _refuse(f"{where}.values.{j}", f"must be a string; got {json_kind(item)}")
        out.append({"contextName": context, "values": list(values)})
    return out


def _variant(value: Any, field: str, strategy: bool) -> dict[str, Any]:
    """One variant, checked and with its defaults, weight not yet shared."""
    if not isinstance(value, dict):
        _refuse(field, f"must be an object {{name, weight, ...}}; got {json_kind(value)}")
    unknown = sorted(set(value) - (_STRATEGY_KEYS if strategy else _FLAG_KEYS))
    if unknown:
        kind = "a strategy's variant" if strategy else "a variant"
        accepted = ", ".join(sorted(_STRATEGY_KEYS if strategy else _FLAG_KEYS))
        _refuse(f"{field}.{unknown[0][:100]}", f"is not a field of {kind}: it has {accepted}")
    name = value.get("name")
    problem = name_problem(name)
    if problem:
        _refuse(f"{field}.name", problem)
    if "weight" not in value:
        _refuse(f"{field}.weight", "is required: a whole number from 0 to 1000")
    weight = _whole_number(value["weight"])
    if weight is None or not 0 <= weight <= TOTAL_WEIGHT:
        _refuse(f"{field}.weight", f"must be a whole number from 0 to 1000; got {json_kind(value['weight'])}")
    if strategy:
        for required in ("weightType", "stickiness"):
            if required not in value:
                _refuse(f"{field}.{required}", "is required in a strategy's variant")
    weight_type = value.get("weightType", "variable")
    if weight_type not in WEIGHT_TYPES:
        _refuse(f"{field}.weightType", f"must be variable or fix; got {json_kind(weight_type)}")
    stickiness = _text(
        value.get("stickiness", "default"), f"{field}.stickiness", at_most=MAX_CONTEXT_NAME_LENGTH
    )
    variant: dict[str, Any] = {
        "name": name,
        "weight": weight,
        "weightType": weight_type,
        "stickiness": stickiness,
    }
    if value.get("payload") is not None:
        variant["payload"] = _payload(value["payload"], f"{field}.payload")
    if not strategy and value.get("overrides") is not None:
        variant["overrides"] = _overrides(value["overrides"], f"{field}.overrides")
    return variant


def normalise(variants: Any, *, strategy: bool, field: str = "variants") -> list[dict[str, Any]]:
    """The list to store for ``variants`` (as sent: a JSON array, or None for none), checked
    and with the weights shared as the reference server shares them (see the module's
    docstring), sorted by :func:`name_order`. ``strategy``: a strategy's variants (their
    ``weightType`` and ``stickiness`` are required, and they have no ``overrides``) rather than
    a flag environment's. ``field``: how messages name the list (``variants``, or
    ``strategies.0.variants``...).

    :raise Invalid: 400 naming the first field at fault (``variants.2.weight: must be a whole
        number from 0 to 1000; got ...``).
    """
    if variants is None:
        return []
    if not isinstance(variants, list):
        _refuse(field, f"must be an array of variants; got {json_kind(variants)}")
    if len(variants) > MAX_VARIANTS:
        _refuse(field, f"must hold at most {MAX_VARIANTS} variants (it holds {len(variants)})")
    checked = [_variant(value, f"{field}.{i}", strategy) for i, value in enumerate(variants)]
    seen: set[str] = set()
    for i, variant in enumerate(checked):
        if variant["name"] in seen:
            _refuse(f"{field}.{i}.name", f"{as_json(variant['name'])} names an earlier variant too")
        seen.add(variant["name"])
    if not checked:
        return []
    variable = [variant for variant in checked if variant["weightType"] == "variable"]
    if not variable:
        _refuse(field, 'must hold a variant of weightType "variable", which shares what the fix ones leave')
    fixed_total = sum(variant["weight"] for variant in checked if variant["weightType"] == "fix")
    if fixed_total > TOTAL_WEIGHT:
        _refuse(
            field,
            f"the weights of the fix variants sum to {fixed_total}, past the total of {TOTAL_WEIGHT}"
            " (the traffic distribution total must equal 100%)",
        )
    share, remainder = divmod(TOTAL_WEIGHT - fixed_total, len(variable))
    for i, variant in enumerate(variable):
        variant["weight"] = share + (1 if i < remainder else 0)
    return sorted(checked, key=lambda variant: name_order(variant["name"]))


# --- a flag's variants per environment (PUT .../variants-batch, .../environments/{env}/variants)


#: Who may change a flag's variants in an environment (granted per environment).
PERMISSION = UPDATE_FEATURE_ENVIRONMENT_VARIANTS

#: A JSON Patch may not make the variants' document larger than this (bytes of compact JSON):
#: a ``copy`` doubles what it copies, and a body of such operations would otherwise grow it
#: without end.
MAX_PATCHED_BYTES = 256 * 1024


def _flag_environments(conn: Connection, name: str) -> set[str]:
    return {row["name"] for row in store_features.environments(conn, name)}


def _record(
    conn: Connection,
    actor: Actor,
    flag: dict[str, Any],
    environment: str,
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    clock: Clock,
) -> None:
    events.record(
        conn,
        "feature-environment-variants-updated",
        actor,
        project=flag["project_id"],
        environment=environment,
        feature_name=flag["name"],
        data={"variants": after},
        pre_data={"variants": before},
        clock=clock,
    )


def of_environment(
    conn: Connection, caller: Caller, project_id: str, name: str, environment: str
) -> dict[str, Any]:
    """``featureVariantsSchema`` (``{version: 1, variants}``) of the flag in ``environment``.

    :raise NotFound: no such project, flag in it, or environment of the flag.
    :raise Forbidden: the caller cannot see the project.
    """
    flag = access.flag_in_project(conn, caller, project_id, name, None)
    if environment not in _flag_environments(conn, flag["name"]):
        raise NotFound(f'Flag "{name}" has no environment "{environment}".')
    return {"version": 1, "variants": store_variants.of_environment(conn, name, environment)}


def set_on_environments(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    variants: Any,
    environments: Any,
    clock: Clock,
) -> list[dict[str, Any]]:
    """``PUT .../variants-batch``: make ``variants`` (as sent) the flag's variants in each of
    ``environments`` (as sent: names of environments of the flag). Returns the variants as the
    reference answers them: in the order they were sent, with their defaults and their shared
    weights (the stored lists are sorted by name). Records ``feature-environment-variants-updated``
    per environment whose variants changed.

    :raise Invalid: no environments, an unknown one, or a variant breaks a rule (400 naming
        the field); nothing is written.
    :raise NotFound: no such project or flag in it.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_ENVIRONMENT_VARIANTS in one of the
        environments (the message names it).
    :raise Conflict: the flag is archived.
    """
    if environments is None or environments == []:
        _refuse("environments", "No environments provided: name at least one environment of the flag")
    if not isinstance(environments, list) or not all(isinstance(e, str) for e in environments):
        _refuse("environments", f"must be an array of environment names; got {json_kind(environments)}")
    stored = normalise(variants, strategy=False)
    with conn.write(LOCK):
        flag = access.flag_in_project(conn, caller, project_id, name, None)
        known = _flag_environments(conn, name)
        for i, environment in enumerate(environments):
            if environment not in known:
                _refuse(
                    f"environments.{i}",
                    f'flag "{name}" has no environment {as_json(environment)}; '
                    f"it has {', '.join(sorted(known))}",
                )
        for environment in dict.fromkeys(environments):
            access.require(
                conn, caller, project_id, UPDATE_FEATURE_ENVIRONMENT_VARIANTS, environment=environment
            )
        access.refuse_archived(flag)
        actor = Actor.of_caller(caller)
        before = store_variants.by_environment(conn, name)
        store_variants.set_variants(conn, name, dict.fromkeys(environments), orjson.dumps(stored).decode())
        for environment in dict.fromkeys(environments):
            _record(conn, actor, flag, environment, before.get(environment, []), stored, clock)
    by_name = {variant["name"]: variant for variant in stored}
    return [by_name[variant["name"]] for variant in variants or []]


def _legacy_flag(conn: Connection, caller: Caller, project_id: str, name: str, environment: str) -> dict:
    """The live flag of a PUT or PATCH of one environment's variants, once the caller may
    change them.

    :raise Forbidden: she may not, or the flag has no environment variants anywhere (the
        reference's "deprecated" refusal: strategy variants replace them).
    """
    flag = access.flag_in_project(conn, caller, project_id, name, None)
    if environment not in _flag_environments(conn, name):
        raise NotFound(f'Flag "{name}" has no environment "{environment}".')
    access.require(conn, caller, project_id, UPDATE_FEATURE_ENVIRONMENT_VARIANTS, environment=environment)
    access.refuse_archived(flag)
    if not store_variants.any_set(conn, name):
        raise Forbidden(
            f"Environment variants deprecated for feature: {name}. Use strategy variants instead "
            "(PUT .../variants-batch still sets environment variants).",
            permission=UPDATE_FEATURE_ENVIRONMENT_VARIANTS,
            project=project_id,
            environment=environment,
        )
    return flag


def replace_on_environment(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    variants: Any,
    clock: Clock,
) -> dict[str, Any]:
    """``PUT .../environments/{env}/variants``: replace the flag's variants in ``environment``
    with ``variants`` (as sent); ``featureVariantsSchema`` of what is stored. Records
    ``feature-environment-variants-updated`` when they changed.

    :raise Forbidden: the caller lacks UPDATE_FEATURE_ENVIRONMENT_VARIANTS there, or the flag
        has no environment variants (see :func:`_legacy_flag`).
    :raise Invalid: a variant breaks a rule.
    :raise NotFound: no such project, flag or environment of the flag.
    :raise Conflict: the flag is archived.
    """
    stored = normalise(variants, strategy=False)
    with conn.write(LOCK):
        flag = _legacy_flag(conn, caller, project_id, name, environment)
        before = store_variants.of_environment(conn, name, environment)
        store_variants.set_variants(conn, name, [environment], orjson.dumps(stored).decode())
        _record(conn, Actor.of_caller(caller), flag, environment, before, stored, clock)
    return {"version": 1, "variants": stored}


def patch_on_environment(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    operations: list[dict[str, Any]],
    clock: Clock,
) -> dict[str, Any]:
    """``PATCH .../environments/{env}/variants``: apply a JSON Patch (RFC 6902) to the flag's
    variants in ``environment`` (the stored list), then store the result as a PUT would.

    :raise Invalid: an operation cannot be applied, or the result breaks a variant rule (400).
    :raise Conflict: a ``test`` operation failed (nothing changed), or the flag is archived.
    :raise Forbidden: as :func:`replace_on_environment`.
    """
    with conn.write(LOCK):
        flag = _legacy_flag(conn, caller, project_id, name, environment)
        before = store_variants.of_environment(conn, name, environment)
        document: Any = before
        for index, op in enumerate(operations):
            where = f"Operation {index} ({op['op']} {op['path']})"
            try:
                document = jsonpatch.JsonPatch([op]).apply(document)
            except jsonpatch.JsonPatchTestFailed as exc:
                raise Conflict(f"{where} failed: its test does not hold. Nothing was changed.") from exc
            except (
                jsonpatch.JsonPatchException,
                jsonpointer.JsonPointerException,
                TypeError,
                ValueError,
            ) as exc:
                message = f"Could not apply provided patch: {where} names nothing in the variants ({exc})."
                raise Invalid(message, details=[f"{index}.path: {message}"]) from exc
            if len(orjson.dumps(document)) > MAX_PATCHED_BYTES:
                _refuse(f"{index}", f"makes the variants larger than {MAX_PATCHED_BYTES} bytes of JSON")
        stored = normalise(document, strategy=False)
        store_variants.set_variants(conn, name, [environment], orjson.dumps(stored).decode())
        _record(conn, Actor.of_caller(caller), flag, environment, before, stored, clock)
    return {"version": 1, "variants": stored}
