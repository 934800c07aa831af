"""What every command shares: the ``--db`` option, opening the database, the version line.

Kept apart from ``cli/__init__.py`` so that the command modules import it without importing
the package that imports them.
"""

from __future__ import annotations

import click

from .. import __version__, revision
from ..app import DEFAULT_DATABASE
from ..store import Connection, connect, schema


def database_option(
    help_text: str = (
        "SQLite database file, or a postgresql:// URL (env FLAGADMIN_DATABASE). Created if missing."
    ),
):
    """The ``--db PATH`` option every command takes (default ``$FLAGADMIN_DATABASE``, else
    ``./flagadmin.db``), passed to the command as ``database``; ``help_text`` is its help."""
    return click.option(
        "--db",
        "database",
        envvar="FLAGADMIN_DATABASE",
        default=DEFAULT_DATABASE,
        show_default=True,
        type=click.Path(dir_okay=False),
        help=help_text,
    )


def shown(database: str) -> str:
    """``database`` as it may be printed: a PostgreSQL URL without its password."""
    return schema.redacted(database)


def open_database(database: str) -> Connection:
    """Create or upgrade the database (a SQLite path or a ``postgresql://`` URL), then open it;
    exit with the schema's message (exit code 1) when it cannot be."""
    try:
        schema.ensure_schema(database)
    except schema.SchemaError as exc:
        raise click.ClickException(str(exc)) from exc
    return connect(database)


def version_message() -> str:
    """``flagadmin <version> (revision <git revision>)``: what ``--version`` and ``serve`` print."""
    return f"flagadmin {__version__} (revision {revision.current()})"
