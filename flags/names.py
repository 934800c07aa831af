"""What a flag, a project and an environment may be called, and which kinds of environment exist.

The rule is the reference server's: a name is what ``encodeURIComponent`` leaves as it is, so it
can stand in a path as it is (spec 2.6; the admin paths name flags and projects). The seed format
(``seed/documents.py``), the flag bodies (``blueprints/features.py``) and the command line's
project and environment changes (``flags/projects.py``) all check names with these.
"""

from __future__ import annotations

import re
from typing import Any

#: The reference server's name rule: what ``encodeURIComponent`` leaves as it is (letters,
#: digits and ``- _ . ! ~ * ' ( )``), 1 to 100 characters; ``.`` and ``..`` are refused too,
#: since clients resolve them as path segments.
NAME_PATTERN = r"^(?!\.\.?$)[A-Za-z0-9_.!~*'()-]+$"
NAME_MAX_LENGTH = 100
NAME_RULE = (
    "must be URL-friendly: 1 to 100 of the letters A-Z and a-z, the digits 0-9 and - _ . ! ~ * ' ( ), "
    "and not . or .."
)
_NAME = re.compile(NAME_PATTERN)

#: The kinds of environment (the reference server's types).
ENVIRONMENT_TYPES: tuple[str, ...] = ("development", "test", "preproduction", "production")

#: Names no flag may take: ``/api/admin/archive/features`` is 4.4, not an archived flag.
RESERVED_NAMES: tuple[str, ...] = ("features",)


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a flag, project or environment (a message starting with
    ``must``), or None when it can."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > NAME_MAX_LENGTH:
        return f"must be at most {NAME_MAX_LENGTH} characters long (it has {len(name)})"
    if not _NAME.fullmatch(name) or name.endswith("\n"):
        return NAME_RULE
    return None


def reserved_problem(name: str) -> str | None:
    """Why ``name`` cannot name a flag although it follows the rule (it is one of
    :data:`RESERVED_NAMES`), or None."""
    if name in RESERVED_NAMES:
        return (
            f'"{name}" is reserved (GET /api/admin/archive/{name} is the archive itself): choose another name'
        )
    return None
