"""The database's own commands: ``init-db`` creates or upgrades it, ``seed`` loads seed
documents (or the demo dataset) into it, ``backup`` copies a SQLite database to one file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import refusals
from ..seed import documents
from ..store import backup as store_backup
from ..store import is_postgresql, schema
from .common import CREATED_IF_MISSING, database_option, ensure_schema, open_database, require_database

#: How many of a refused seed's problems are printed; the rest are counted.
SEED_PROBLEMS_SHOWN = 50


@click.command("init-db")
@database_option(CREATED_IF_MISSING)
def init_db(database: str) -> None:
    """Create the database, or upgrade its schema; harmless to run twice.

    \b
    Example:
      flagadmin init-db --db /var/lib/flagadmin/flagadmin.db
    """
    before = ensure_schema(database)
    click.echo(f"{database}: schema version {schema.SCHEMA_VERSION} (was {before}).")


def _report_refused_seed(problems: list[str]) -> None:
    click.echo("Seed refused, nothing was written:", err=True)
    for problem in problems[:SEED_PROBLEMS_SHOWN]:
        click.echo(f"  {problem}", err=True)
    if len(problems) > SEED_PROBLEMS_SHOWN:
        click.echo(f"  ... and {len(problems) - SEED_PROBLEMS_SHOWN} more", err=True)


@click.command("seed")
@database_option(CREATED_IF_MISSING)
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
def seed(database: str, paths: tuple[str, ...]) -> None:
    """Load seed documents (files, or folders of *.json) in one transaction.

    With no PATH, loads the demo dataset. An invalid document is refused with a message
    naming the file, the record and the field, and nothing is written. A seed load is a
    bootstrap: it writes no events.

    \b
    Example:
      flagadmin seed ./my-install.json ./more-seeds/
    """
    with open_database(database, create=True) as conn:
        try:
            counts = documents.load_files(conn, paths or documents.demo_files())
        except refusals.Refusal as exc:
            _report_refused_seed(exc.details)
            sys.exit(1)
    click.echo("Loaded " + ", ".join(f"{n} {key}" for key, n in counts.items()) + ".")


@click.command("backup")
@database_option("SQLite database file to copy (env FLAGADMIN_DATABASE); never created or changed.")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace PATH if it exists.")
def backup(database: str, path: str, force: bool) -> None:
    """Copy the database to PATH as one consistent snapshot, even while serve runs and writes.

    Uses SQLite's online backup API; PATH is a single self-contained file, checked with
    PRAGMA integrity_check before it takes its name. An existing PATH is refused unless
    --force. To restore, stop the server and serve the copy (see docs/operations.md).

    \b
    Example:
      flagadmin backup /var/backups/flagadmin-$(date +%F).db --db /var/lib/flagadmin/flagadmin.db
    """
    if is_postgresql(database):
        raise click.ClickException(
            "backup copies a SQLite file; on PostgreSQL use pg_dump, e.g. "
            "pg_dump --format=custom --file=flagadmin.dump 'postgresql://...'. Nothing was written."
        )
    require_database(database)
    folder = Path(path).parent
    if not folder.is_dir():
        raise click.ClickException(
            f"cannot write {path}: the folder {folder} does not exist; create it first "
            f"(mkdir -p {folder}) or give another PATH. Nothing was written."
        )
    try:
        result = store_backup.backup(database, path, force=force)
    except store_backup.BackupError as exc:
        raise click.ClickException(f"{exc} Nothing was written.") from exc
    except OSError as exc:  # the folder is not writable, the disk is full, ...
        raise click.ClickException(
            f"cannot write {path}: {exc.strerror or exc}; give a PATH in a folder this user may write, "
            "with room for a copy of the database. Nothing was written."
        ) from exc
    click.echo(
        f"Backed up {database} to {result.path} ({result.size} bytes, schema version "
        f"{result.schema_version})."
    )


#: The commands this module adds to ``flagadmin``.
COMMANDS = (init_db, seed, backup)
