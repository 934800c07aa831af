"""Files flagadmin creates hold webhook credentials: the database and its -wal and -shm files
are created readable and writable by their owner only (0600), whatever the umask; an existing
database keeps the mode its owner gave it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from flagadmin.store import connect
from flagadmin.store import schema as store_schema

from helpers import flagadmin


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_db__new_database__it_and_its_wal_and_shm_owner_only(tmp_path):
    # Given: a new database made by the command line, with the usual umask
    path = tmp_path / "new.db"
    old = os.umask(0o022)  # inherited by the command
    try:
        result = flagadmin("init-db", "--db", str(path))
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr
    # When: a connection writes (the -wal and -shm files exist while it is open)
    with connect(path) as conn:
        with conn.write():
            conn.run("INSERT INTO projects (id, name) VALUES ('files', 'Files')")
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        # Then
        assert [mode(f) for f in files] == [0o600] * 3


def test_ensure_schema__umask_022__new_database_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "made.db"
        store_schema.ensure_schema(path)
    finally:
        os.umask(old)
    assert mode(path) == 0o600


def test_ensure_schema__existing_database__keeps_its_mode(tmp_path):
    # Given: a database its owner made group-readable
    path = tmp_path / "shared.db"
    store_schema.ensure_schema(path)
    path.chmod(0o640)
    # When
    with connect(path) as conn, conn.write():
        conn.run("INSERT INTO projects (id, name) VALUES ('files', 'Files')")
    # Then
    assert mode(path) == 0o640
