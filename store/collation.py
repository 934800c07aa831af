"""How text compares and orders in SQL, the same on both engines.

SQLite compares text by code point (its BINARY collation) and its ``lower()`` folds ASCII
letters only; a PostgreSQL database compares by its locale unless told otherwise. The SQL
fragments here make PostgreSQL behave as SQLite does, and :func:`fold` does the same in Python,
so that uniqueness (RFC 7643 ``caseExact: false``), filters and sort orders agree across
engines.
"""

from __future__ import annotations

import string

#: ASCII upper-case letters to lower case (str.translate table).
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

#: Per dialect, SQL folding a text expression (``FOLD[conn.dialect].format(expr)``) as
#: :func:`fold` does: SQLite's ``lower()`` folds ASCII letters only; PostgreSQL's folds what its
#: locale knows unless the collation is "C". The unique indexes of both schemas use this fold.
FOLD = {"sqlite": "lower({})", "postgresql": 'lower(({}) COLLATE "C")'}

#: Per dialect, what follows a text expression so that comparisons and ``ORDER BY`` go by code
#: point (SQLite's BINARY collation), not by the PostgreSQL database's locale.
BINARY = {"sqlite": "", "postgresql": ' COLLATE "C"'}


def fold(text: str) -> str:
    """``text`` with its ASCII letters in lower case and every other character kept: the fold
    of :data:`FOLD` (RFC 7643 ``caseExact: false`` comparisons, group keys)."""
    return text.translate(_ASCII_LOWER)
