"""What every command shares: the ``--db`` option, finding and opening the database, one-line
errors, the version line.

Kept apart from ``cli/__init__.py`` so that the command modules import it without importing
the package that imports them.

Which database a command may create: ``init-db``, ``seed`` and ``serve`` create a missing one
(:func:`open_database` with ``create=True``); every other command refuses a ``--db`` that names
no database (a missing SQLite file, a file that is not a database, a PostgreSQL database that
cannot be reached) with exit status 2, and creates nothing: a mistyped ``--db`` would otherwise
make a new, empty database, and ``create-token`` would print a token that works nowhere.
"""

from __future__ import annotations

from pathlib import Path

import click

from .. import __version__, revision
from ..app import DEFAULT_DATABASE
from ..store import Connection, NotADatabase, StoreError, connect, is_postgresql, schema

#: The exit status of a refused ``--db`` (as of click's usage errors).
BAD_DATABASE_EXIT = 2

#: The help of ``--db`` for the commands that create a missing database.
CREATED_IF_MISSING = (
    "SQLite database file, or a postgresql:// URL (env FLAGADMIN_DATABASE). Created if missing."
)


def database_option(
    help_text: str = (
        "SQLite database file, or a postgresql:// URL (env FLAGADMIN_DATABASE); must exist "
        "(flagadmin init-db creates it)."
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
        callback=_named_database,
        help=help_text,
    )


def _named_database(ctx: click.Context, param: click.Parameter, database: str) -> str:
    """``--db`` as given, unless it names no file: SQLite would open an empty database of its
    own for ``""`` or ``:memory:`` that nothing else could ever read (a usage error)."""
    if database.strip() in ("", ":memory:"):
        raise click.BadParameter(
            f"{database!r} names no file: give a SQLite file path or a postgresql:// URL.", param_hint="--db"
        )
    return database


def one_line(text: str) -> str:
    """``text`` on one line: its lines joined by spaces, runs of blanks made one space."""
    return " ".join(text.split())


class BadDatabase(click.ClickException):
    """The ``--db`` given names no database this command may use (exit status 2); the message
    names it and says what to do. Nothing was created or changed."""

    exit_code = BAD_DATABASE_EXIT


def shown(database: str) -> str:
    """``database`` as it may be printed: a PostgreSQL URL without its password."""
    return schema.redacted(database)


def require_database(database: str) -> None:
    """Refuse (:class:`BadDatabase`) a ``database`` that does not exist, without creating it:
    a missing SQLite file or one that is not a database, a PostgreSQL database that cannot be
    reached (missing, server down, wrong credentials). Used by every command but ``init-db``,
    ``seed`` and ``serve``."""
    if is_postgresql(database):
        _require_postgresql(database)
        return
    if not Path(database).exists():
        raise BadDatabase(
            f"{database} does not exist: check --db (or FLAGADMIN_DATABASE), or create it with "
            f"`flagadmin init-db --db {database}`. Nothing was created."
        )
    try:
        connect(database).close()
    except NotADatabase as exc:
        raise BadDatabase(
            f"{one_line(str(exc))}: check --db (or FLAGADMIN_DATABASE). Nothing was changed."
        ) from exc
    except StoreError as exc:
        raise BadDatabase(
            f"{database} cannot be opened ({one_line(str(exc))}): check that this user may read and "
            "write it and its folder. Nothing was changed."
        ) from exc


def _require_postgresql(url: str) -> None:
    try:
        connect(url).close()
    except StoreError as exc:
        raise BadDatabase(
            f"{shown(url)} cannot be reached ({one_line(str(exc))}): check the URL given with --db (or "
            "FLAGADMIN_DATABASE), that the server runs and that the database exists (createdb it, then "
            "`flagadmin init-db`). Nothing was created."
        ) from exc


def _require_folder(database: str) -> None:
    """A new SQLite file can be made at ``database``: its folder exists (else :class:`BadDatabase`)."""
    folder = Path(database).parent
    if not folder.is_dir():
        raise BadDatabase(
            f"cannot create {database}: the folder {folder} does not exist; create it first "
            f"(mkdir -p {folder}) or check --db (or FLAGADMIN_DATABASE)."
        )


def ensure_schema(database: str, *, create: bool = True) -> int:
    """Create or upgrade the database, as ``init-db`` does; return the schema version found
    before. A database that exists must be one (:func:`require_database`); a missing SQLite
    file is created only with ``create``, in a folder that exists (else :class:`BadDatabase`,
    exit status 2). A database the schema refuses (newer, failed upgrade) exits with its
    message on one line (exit status 1)."""
    creating = create and not is_postgresql(database) and not Path(database).exists()
    if creating:
        _require_folder(database)
    else:
        require_database(database)
    try:
        return schema.ensure_schema(database)
    except schema.SchemaError as exc:
        if creating and not Path(database).exists():
            raise BadDatabase(
                f"cannot create {database} ({one_line(str(exc.__cause__ or exc))}): check that this user "
                f"may write the folder {Path(database).parent}, or give another --db."
            ) from exc
        raise click.ClickException(one_line(str(exc))) from exc


def open_database(database: str, *, create: bool = False) -> Connection:
    """Upgrade the database (a SQLite path or a ``postgresql://`` URL) if needed, then open it.

    Without ``create``, a database that does not exist is refused (:func:`require_database`,
    exit status 2) and nothing is created; with it (``seed``, ``serve``), a missing SQLite file
    is created. Every failure exits with a one-line message (:func:`ensure_schema`)."""
    ensure_schema(database, create=create)
    try:
        return connect(database)
    except StoreError as exc:
        raise click.ClickException(f"{shown(database)} cannot be opened: {one_line(str(exc))}") from exc


def version_message() -> str:
    """``flagadmin <version> (revision <git revision>)``: what ``--version`` and ``serve`` print."""
    return f"flagadmin {__version__} (revision {revision.current()})"
