"""Evaluation by yggdrasil-engine (the reference's own Rust engine), fed the state the Client
API serves: one engine per (environment, project set), fed again when that state changes.

What evaluates a flag for a client that cannot hold the configuration (the Frontend API, OFREP)
is never flagadmin's own code: it is :class:`yggdrasil_engine.engine.UnleashEngine`, fed the
body of :func:`flagadmin.clients.features.client_state` for the token's environment and
projects, segments by id (not inlined), the flags that are switched off included (so that a
dependency on a disabled parent holds as it should; the reference's frontend API feeds its
engine the enabled flags alone and such a dependency never holds).

Use (the Frontend API's view, and OFREP's)::

    engines = flagadmin.web.state.state().engines             # this app's Engines
    evaluated = engines.for_caller(conn, caller, revision=versions().rules)
    context = flagadmin.frontend.context.from_mapping({"userId": "42"}, client_ip)
    one = evaluated.evaluate("checkout.new-flow", context)   # an Evaluation
    every = evaluated.evaluate_all(context)                   # Evaluations of flags switched on

Shapes: :class:`Evaluation` ``(name, found, enabled, variant, impression_data, facts)``;
``variant`` is ``{"name": str, "enabled": bool, "payload": {"type", "value"}}`` (``payload``
only when the variant has one; a flag without variants, or off, gives ``{"name": "disabled",
"enabled": False}``); ``facts`` (:class:`FlagFacts`) says what the flag's configuration holds
(switched on, strategies, constraints or segments, a partial rollout, variants, a parent), from
which a caller words a reason (OFREP's ``DISABLED``, ``TARGETING_MATCH``, ``SPLIT``,
``STATIC``...): the engine answers only on or off and the variant.

**Freshness.** :meth:`Engines.for_caller` takes the rules revision the request read
(``Versions.rules``, one statement with the other counters; None: it reads it). While the kept
engine's revision is that one, it is used as it is. Once the revision moves, the state is read
again (one statement) on the next request; if its ETag (a digest of its flags and segments) is
unchanged, the write was elsewhere and the engine stays; else a new engine is built and fed.
So an answer follows a write, of this process or any other on the same database (PostgreSQL
included), at the next request.

**Threads.** The binding calls the engine's C functions through ctypes, which lets go of the
GIL, so several waitress threads may be inside one engine at once. The Rust core evaluates
(``check_enabled``, ``check_variant``) through a shared reference and only ``take_state``
changes an engine; this module feeds an engine once, before any thread can see it, and never
again (a new state gets a new engine, and the old one is freed when its last reader lets go
of it), and it never calls the counting calls (``is_enabled``, ``get_variant``): readers need
no lock. ``python -m bench frontend`` checks it (8 threads on one engine give the answers of
one thread) and measures the other two ways (a lock around each call; an engine per thread,
eight times the memory: about 4 MB each at 1,000 flags). Builds are serialised by one lock, so
that threads meeting a new revision together build one engine, not one each.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from yggdrasil_engine.engine import UnleashEngine

from ..clients.features import client_state
from ..store import Connection
from ..store import settings as store_settings
from .context import Context

log = logging.getLogger("flagadmin.frontend")

#: The environment of a token that names none (client and frontend tokens always name one).
DEFAULT_ENVIRONMENT = "default"

#: Engines kept at most (least recently used dropped first): one per (environment, project
#: set) that frontend or OFREP tokens read; about 4 MB of memory each at 1,000 flags.
MAX_ENGINES = 32

#: The variant of a flag that is off, or on without variants (the reference's).
DISABLED_VARIANT: dict[str, Any] = {"name": "disabled", "enabled": False}

#: Strategies that share a flag out by percentage, and the parameter holding it.
_ROLLOUTS = {
    "flexibleRollout": "rollout",
    "gradualRolloutUserId": "percentage",
    "gradualRolloutSessionId": "percentage",
    "gradualRolloutRandom": "percentage",
}
#: Strategies that pick callers by who they are.
_TARGETING = frozenset({"userWithId", "remoteAddress", "applicationHostname"})


@dataclass(frozen=True, slots=True)
class FlagFacts:
    """What one flag's configuration holds in the engine's state (not an evaluation).

    ``switched_on``: its environment's switch as the Client API serves it (off: never on);
    ``strategies``: how many enabled strategies it has; ``targeted``: one of them has
    constraints or segments or picks callers by id, address or host name; ``split``: one of
    them rolls out to less than 100 %; ``variants``: how many flag variants it has;
    ``strategy_variants``: one of its strategies has variants of its own; ``parent``: the flag
    it depends on (None: none); ``impression_data``, ``project``, ``type`` as served.
    """

    name: str
    project: str
    type: str
    switched_on: bool
    impression_data: bool
    strategies: int
    targeted: bool
    split: bool
    variants: int
    strategy_variants: bool
    parent: str | None

    @classmethod
    def of(cls, feature: dict[str, Any]) -> FlagFacts:
        """The facts of one feature of a client state's body."""
        strategies = feature.get("strategies") or []
        targeted = split = strategy_variants = False
        for strategy in strategies:
            name = strategy.get("name")
            if strategy.get("constraints") or strategy.get("segments") or name in _TARGETING:
                targeted = True
            parameter = _ROLLOUTS.get(name)
            if parameter is not None and _percentage((strategy.get("parameters") or {}).get(parameter)) < 100:
                split = True
            if strategy.get("variants"):
                strategy_variants = True
        dependencies = feature.get("dependencies") or []
        return cls(
            name=feature["name"],
            project=feature.get("project") or "",
            type=feature.get("type") or "",
            switched_on=bool(feature.get("enabled")),
            impression_data=bool(feature.get("impressionData")),
            strategies=len(strategies),
            targeted=targeted,
            split=split,
            variants=len(feature.get("variants") or []),
            strategy_variants=strategy_variants,
            parent=dependencies[0]["feature"] if dependencies else None,
        )


def _percentage(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 100.0


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The engine's answer for one flag and one context.

    ``found``: the flag is in the state (a live flag of the token's projects); ``enabled``: it
    is on for the context; ``variant``: ``{"name", "enabled", "payload"?}`` (see the module);
    ``impression_data``: whether the SDK should emit impression events for it (the flag's
    ``impressionData``); ``facts``: its
    :class:`FlagFacts` (None when not found).
    """

    name: str
    found: bool
    enabled: bool
    variant: dict[str, Any]
    impression_data: bool
    facts: FlagFacts | None


class EvaluatedState:
    """One engine fed one client state: the flags of ``environment`` and ``projects`` (None:
    every project) at rules revision ``revision``, whose content digest is ``etag`` (the
    Client API's ETag of that state: equal for equal content whatever the revision).

    ``facts``: :class:`FlagFacts` by flag name, in name order; ``switched_on``: the names of
    the flags switched on, in name order (the only ones that can be on). Immutable but for
    ``revision``, which moves on when the state is read again and found unchanged.
    """

    def __init__(
        self,
        environment: str,
        projects: tuple[str, ...] | None,
        revision: int,
        etag: str,
        body: dict,
        payload: bytes,
    ) -> None:
        self.environment = environment
        self.projects = projects
        self.revision = revision
        self.etag = etag
        self.facts: dict[str, FlagFacts] = {f["name"]: FlagFacts.of(f) for f in body["features"]}
        self.switched_on: tuple[str, ...] = tuple(name for name, f in self.facts.items() if f.switched_on)
        engine = UnleashEngine()
        warnings = engine.take_state(payload.decode("utf-8"))
        if warnings:
            log.warning("yggdrasil-engine took the state of %s with warnings: %s", environment, warnings)
        self._engine = engine

    def evaluate(self, name: str, context: Context) -> Evaluation:
        """Evaluate flag ``name`` for ``context`` (one engine call; none for a flag not in the
        state, which is answered ``found=False``, off, the disabled variant)."""
        facts = self.facts.get(name)
        if facts is None:
            return Evaluation(name, False, False, DISABLED_VARIANT, False, None)
        return self._evaluate(name, facts, context.engine)

    def evaluate_all(self, context: Context, *, include_off: bool = False) -> list[Evaluation]:
        """Evaluate every flag switched on for ``context`` (one engine call each), in name
        order; with ``include_off``, the flags switched off too, answered off with the
        disabled variant without asking the engine (switched off, a flag is never on)."""
        engine_context = context.engine
        facts = self.facts
        if not include_off:
            return [self._evaluate(name, facts[name], engine_context) for name in self.switched_on]
        return [
            self._evaluate(name, f, engine_context)
            if f.switched_on
            else Evaluation(name, True, False, DISABLED_VARIANT, f.impression_data, f)
            for name, f in facts.items()
        ]

    def _evaluate(self, name: str, facts: FlagFacts, engine_context: dict[str, Any]) -> Evaluation:
        answer = self._engine.check_variant(name, engine_context)
        found = answer.variant
        if found.name == "disabled" and not found.enabled and found.payload is None:
            variant = DISABLED_VARIANT
        else:
            variant = {"name": found.name, "enabled": bool(found.enabled)}
            if found.payload is not None:
                variant["payload"] = found.payload
        return Evaluation(
            name,
            answer.is_found,
            bool(found.feature_enabled),
            variant,
            facts.impression_data,
            facts,
        )


class Engines:
    """The engines of one app, one per (environment, project set), at most ``max_engines``
    (least recently used dropped first). Safe across threads (see the module)."""

    def __init__(self, max_engines: int = MAX_ENGINES) -> None:
        self._max = max(1, max_engines)
        self._kept: OrderedDict[tuple, EvaluatedState] = OrderedDict()
        self._lock = threading.Lock()  # guards _kept; held for dict operations only
        self._building = threading.Lock()  # held by the one thread reading a state and feeding an engine
        #: Engines built, and states read again and found unchanged, by this registry.
        self.built = 0
        self.unchanged = 0

    def for_caller(self, conn: Connection, caller: Any, *, revision: int | None = None) -> EvaluatedState:
        """The :class:`EvaluatedState` of a frontend or client token's environment (``default``
        when it names none) and projects, at ``revision`` (the rules revision the request
        read; None: read now). Raises what :func:`flagadmin.clients.features.client_state`
        raises (the store's ``Unavailable``)."""
        return self.get(conn, caller.environment or DEFAULT_ENVIRONMENT, caller.projects, revision=revision)

    def get(
        self,
        conn: Connection,
        environment: str,
        projects: Sequence[str] | None,
        *,
        revision: int | None = None,
    ) -> EvaluatedState:
        """The :class:`EvaluatedState` of ``environment`` and ``projects`` (None: every
        project) at rules revision ``revision`` or later (None: the revision read now):
        the kept one, or one read and fed now (see the module)."""
        key = (environment, None if projects is None else tuple(sorted(set(projects))))
        if revision is None:
            revision = store_settings.versions(conn).rules
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
        if kept is not None and kept.revision >= revision:
            return kept
        with self._building:
            with self._lock:
                kept = self._kept.get(key)
            if kept is not None and kept.revision >= revision:
                return kept
            state = client_state(conn, environment, key[1])
            if kept is not None and kept.etag == state.etag:
                kept.revision = max(kept.revision, state.revision)
                self.unchanged += 1
                return kept
            fresh = EvaluatedState(environment, key[1], state.revision, state.etag, state.body, state.payload)
            self.built += 1
            with self._lock:
                self._kept[key] = fresh
                self._kept.move_to_end(key)
                while len(self._kept) > self._max:
                    self._kept.popitem(last=False)
            return fresh

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)
