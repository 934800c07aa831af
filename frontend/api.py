"""The Frontend API's answer (the reference server's ``GET``/``POST /api/frontend``,
``frontendApiFeaturesSchema``): the flags on for one context, each with its variant.

``{"toggles": [{"name", "enabled": true, "variant": {"name", "enabled", "payload"?,
"feature_enabled": true, "featureEnabled": true}, "impressionData"}]}``: only the flags the
engine finds on (:meth:`flagadmin.frontend.engines.EvaluatedState.evaluate_all`), in name
order; a flag on without variants has the variant ``{"name": "disabled", "enabled": false,
...}``, as the reference's. ``featureEnabled`` is the reference's deprecated spelling of
``feature_enabled``; both are sent, as the reference sends them. The ETag is a digest of the
body alone: two contexts with the same answer share it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from .context import Context
from .engines import EvaluatedState


@dataclass(frozen=True)
class FrontendAnswer:
    """One answer: its bytes (compact JSON, UTF-8) and its ETag's opaque part (32 hex digits,
    a BLAKE2b digest of the bytes; sent weak)."""

    body: bytes
    etag: str


def toggles(evaluated: EvaluatedState, context: Context) -> list[dict[str, Any]]:
    """The ``toggles`` of the answer for ``context`` (see the module)."""
    found = []
    for evaluation in evaluated.evaluate_all(context):
        if not evaluation.enabled:
            continue
        variant = {**evaluation.variant, "feature_enabled": True, "featureEnabled": True}
        found.append(
            {
                "name": evaluation.name,
                "enabled": True,
                "variant": variant,
                "impressionData": evaluation.impression_data,
            }
        )
    return found


def answer(evaluated: EvaluatedState, context: Context) -> FrontendAnswer:
    """The whole answer for ``context``: its bytes and its ETag."""
    body = orjson.dumps({"toggles": toggles(evaluated, context)})
    return FrontendAnswer(body, hashlib.blake2b(body, digest_size=16).hexdigest())
