"""The Flask class of a flagadmin app: Flask, with the one thing it redoes for the same
functions on every request done once per function instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask


class FlagadminFlask(Flask):
    """:class:`flask.Flask` whose :meth:`ensure_sync` remembers its answer per function.

    Flask asks, for the view and for every request hook of every request, whether the function
    is a coroutine function (``inspect.iscoroutinefunction``: five times a request here, about
    3 µs of a 65 µs kept answer; docs/architecture.md). The functions are the app's registered
    views and hooks, and a function's kind does not change, so the answer is kept in a dict per
    app, by function. flagadmin has no ``async`` view; one would still be wrapped as Flask
    wraps it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sync: dict[Callable, Callable] = {}

    def ensure_sync(self, func: Callable) -> Callable:
        """Flask's :meth:`~flask.Flask.ensure_sync`, computed once per function."""
        try:
            return self._sync[func]
        except KeyError:
            sync = self._sync[func] = super().ensure_sync(func)
            return sync
