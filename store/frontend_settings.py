"""The Frontend API's settings kept in the database (the ``settings`` table): the origins its
CORS allows, when set through ``POST /api/admin/ui-config/cors`` (they then override
``FLAGADMIN_FRONTEND_API_ORIGINS``). Both engines: the same statements.
"""

from __future__ import annotations

from .engine import Connection

#: The settings row holding the origins, as compact JSON (a list of strings).
ORIGINS_KEY = "frontend_api_origins"


def origins(conn: Connection) -> str | None:
    """The stored origins (JSON text of a list of strings), or None when none were set."""
    return conn.value("SELECT value FROM settings WHERE key = ?", [ORIGINS_KEY])


def set_origins(conn: Connection, text: str) -> None:
    """Store ``text`` (JSON of a list of strings) as the origins; in the caller's write
    transaction."""
    conn.run(
        "INSERT INTO settings (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [ORIGINS_KEY, text],
    )
