"""The OpenFeature Remote Evaluation Protocol (OFREP, open-feature/protocol ``service/openapi.yaml``
v0.3.0): one flag or every flag evaluated for an OpenFeature context, by the same engine as the
Frontend API (:mod:`flagadmin.frontend.engines`), on the state the Client API serves for the
token's environment and projects. The reference's open-source server has no OFREP path.

**Context.** OFREP's ``{"targetingKey": ..., attributes...}`` becomes an Unleash context:
``targetingKey`` is the ``userId`` (unless the context gives a ``userId`` of its own);
``appName``, ``environment``, ``sessionId``, ``remoteAddress`` and ``currentTime`` stay top level,
every other attribute is a property, read as :func:`flagadmin.frontend.context.from_mapping`
reads the Frontend API's (numbers and booleans as their JSON text; an object or a list is
``INVALID_CONTEXT``).

**Value.** A flag has one value per evaluation, typed by what it holds:

- a flag whose variant for the context carries a payload: the payload, typed as it says
  (``json``: the parsed JSON, ``number``: an integer or a float, ``string`` and ``csv``: the text);
- a flag on for the context whose variant has no payload: the variant's name (a string flag);
- a flag without variants: whether it is on (a boolean flag);
- a flag with variants that is off for the context: no ``value``, so that the provider answers
  the code's default (an OFREP answer without a value means exactly that).

``variant`` is the variant's name (``enabled`` / ``disabled`` for a flag without variants);
``reason``: ``DISABLED`` when the flag is switched off in the token's environment, else
``SPLIT`` when a strategy rolls it out to a share of callers or the variant was picked by weight,
``TARGETING_MATCH`` when constraints, segments or a targeting strategy decide, ``STATIC``
otherwise. ``metadata``: the flag's ``project``, ``type`` and ``impressionData``.

**Errors** (``{key, errorCode, errorDetails}``): ``FLAG_NOT_FOUND`` (404) for a flag the token
does not see; ``PARSE_ERROR`` (400) for a body that is not a JSON object; ``INVALID_CONTEXT``
(400) for a context that is not an object or holds a value an Unleash context cannot;
``TARGETING_KEY_MISSING`` (400) for a flag rolled out to a share of callers evaluated without a
``targetingKey``, ``userId`` or ``sessionId`` (its answer would change from call to call).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..refusals import Invalid
from . import context as frontend_context
from .engines import EvaluatedState, Evaluation

#: OFREP's error codes used here (its ``errorCode`` enum).
FLAG_NOT_FOUND = "FLAG_NOT_FOUND"
PARSE_ERROR = "PARSE_ERROR"
TARGETING_KEY_MISSING = "TARGETING_KEY_MISSING"
INVALID_CONTEXT = "INVALID_CONTEXT"
GENERAL = "GENERAL"


class OfrepError(Exception):
    """A failed evaluation: ``status`` (400 or 404), ``code`` (OFREP's ``errorCode``) and
    ``details`` (``errorDetails``, words that say what to do); ``key`` the flag (None: bulk)."""

    def __init__(self, status: int, code: str, details: str, key: str | None = None) -> None:
        super().__init__(details)
        self.status, self.code, self.details, self.key = status, code, details, key

    def body(self) -> dict[str, Any]:
        """The protocol's failure body: ``{key?, errorCode, errorDetails}``."""
        found: dict[str, Any] = {} if self.key is None else {"key": self.key}
        return {**found, "errorCode": self.code, "errorDetails": self.details}


def request_context(raw: bytes, client_ip: str | None, key: str | None = None) -> frontend_context.Context:
    """The Unleash context of an OFREP request body (``{"context": {...}}``; empty or no
    ``context``: an empty context), the caller's address filling a missing ``remoteAddress``.

    :raise OfrepError: ``PARSE_ERROR`` when the body is not a JSON object; ``INVALID_CONTEXT``
        when its ``context`` is not an object or a value cannot be a context value.
    """
    body: Any = {}
    if raw.strip():
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise OfrepError(400, PARSE_ERROR, f"The request body is not JSON: {exc}.", key) from exc
    if not isinstance(body, Mapping):
        raise OfrepError(400, PARSE_ERROR, 'The request body must be a JSON object: {"context": {...}}.', key)
    given = body.get("context")
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise OfrepError(400, INVALID_CONTEXT, "context must be an object of attributes.", key)
    unleash: dict[str, Any] = {name: value for name, value in given.items() if name != "targetingKey"}
    targeting_key = given.get("targetingKey")
    if targeting_key is not None and unleash.get("userId") is None:
        unleash["userId"] = targeting_key
    try:
        return frontend_context.from_mapping(unleash, client_ip)
    except Invalid as exc:
        raise OfrepError(400, INVALID_CONTEXT, exc.message, key) from exc


def _keyed(context: frontend_context.Context) -> bool:
    """Whether the context names who is asking (a user id, which targetingKey gives, or a
    session id given by the caller; the derived session id does not count)."""
    return bool(context.engine.get("userId")) or context.key[2] is not None


def _typed(payload: Mapping[str, Any]) -> Any:
    """A variant's payload value as its type says; a payload that does not parse as its type
    is given as its text."""
    kind, text = payload.get("type"), payload.get("value")
    if not isinstance(text, str):
        return text
    if kind == "json":
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    if kind == "number":
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                return text
    return text


def _reason(evaluation: Evaluation) -> str:
    facts = evaluation.facts
    if facts is None or not facts.switched_on:
        return "DISABLED"
    if facts.split or (evaluation.enabled and (facts.variants > 1 or facts.strategy_variants)):
        return "SPLIT"
    if facts.targeted or facts.parent is not None:
        return "TARGETING_MATCH"
    return "STATIC"


def success(evaluation: Evaluation) -> dict[str, Any]:
    """The protocol's success body of one evaluation (see the module for value and reason)."""
    facts = evaluation.facts
    assert facts is not None
    variant = evaluation.variant
    has_variants = facts.variants > 0 or facts.strategy_variants
    item: dict[str, Any] = {"key": evaluation.name}
    if evaluation.enabled and variant.get("enabled"):
        payload = variant.get("payload")
        item["value"] = _typed(payload) if payload else variant["name"]
        item["variant"] = variant["name"]
    elif has_variants and evaluation.enabled is False:
        item["variant"] = "disabled"
    else:
        item["value"] = evaluation.enabled
        item["variant"] = "enabled" if evaluation.enabled else "disabled"
    item["reason"] = _reason(evaluation)
    item["metadata"] = {"project": facts.project, "type": facts.type, "impressionData": facts.impression_data}
    return item


def evaluate_one(evaluated: EvaluatedState, key: str, context: frontend_context.Context) -> dict[str, Any]:
    """The success body of flag ``key`` for ``context``.

    :raise OfrepError: ``FLAG_NOT_FOUND`` (the token sees no such live flag) or
        ``TARGETING_KEY_MISSING`` (a share rollout and no key; see the module).
    """
    facts = evaluated.facts.get(key)
    if facts is None:
        raise OfrepError(
            404,
            FLAG_NOT_FOUND,
            f'There is no flag "{key}" among the live flags this token reads '
            f"(environment {evaluated.environment}).",
            key,
        )
    if facts.switched_on and facts.split and not _keyed(context):
        raise OfrepError(
            400,
            TARGETING_KEY_MISSING,
            f'Flag "{key}" is rolled out to a share of callers: give a targetingKey (the user id) '
            "so that the same caller gets the same answer.",
            key,
        )
    return success(evaluated.evaluate(key, context))


@dataclass(frozen=True)
class BulkAnswer:
    """Every flag evaluated for one context: the bytes of ``{"flags": [...]}`` and their ETag's
    opaque part (32 hex digits, a BLAKE2b digest of the bytes)."""

    body: bytes
    etag: str


def evaluate_all(evaluated: EvaluatedState, context: frontend_context.Context) -> BulkAnswer:
    """Every live flag the token reads, evaluated for ``context`` in name order (a flag switched
    off answered without asking the engine); a share rollout without a key is its failure item
    (``TARGETING_KEY_MISSING``), the others success items."""
    keyed = _keyed(context)
    flags = []
    for evaluation in evaluated.evaluate_all(context, include_off=True):
        facts = evaluation.facts
        if facts is not None and facts.switched_on and facts.split and not keyed:
            flags.append(
                OfrepError(
                    400,
                    TARGETING_KEY_MISSING,
                    "rolled out to a share of callers: give a targetingKey",
                    evaluation.name,
                ).body()
            )
            continue
        flags.append(success(evaluation))
    body = orjson.dumps({"flags": flags})
    return BulkAnswer(body, hashlib.blake2b(body, digest_size=16).hexdigest())
