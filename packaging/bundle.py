"""What goes into the one-file build besides the code PyInstaller finds by following imports.

Read by ``packaging/flagadmin.spec`` inside the build environment (``build/venv``), where
flagadmin is installed from its wheel. Nothing here names a module or a dependency: the lists
come from the installed distributions, so a dependency or a data file added to the package
ships without an edit here.

- :func:`runtime_distributions`: flagadmin and everything it requires to run (its
  ``Requires-Dist`` without extras, followed transitively), from ``importlib.metadata``.
- :func:`imported_distributions`: those of them whose code the program imports (PyInstaller's
  analysis says which): a requirement the code never imports (``pip``, ``tzdata``) ships no data.
- :func:`data_files`: every file those distributions installed that is not code (flagadmin's
  ``schema.sql`` and ``seed/*.json``; a dependency's templates, ``.lua`` scripts, ...), as
  PyInstaller ``(source, destination folder)`` pairs. Without them the binary builds fine and
  fails on start (``schema.sql`` not found): importlib.resources reads them from the bundle.
- :func:`shared_libraries`: every shared library those distributions installed inside a package
  that is not a Python extension module: a library the code loads by path with ctypes, which
  import analysis never sees (yggdrasil-engine's Rust core, ``yggdrasil_engine/lib/
  libyggdrasilffi.so``). They are bundled as binaries, not data: PyInstaller then follows
  their own library dependencies, strips them, and :func:`glibc_floor` counts them. Without
  them the binary starts and answers every evaluation 500 (``Failed to load dynlib``).
- :func:`metadata_files`: each runtime distribution's ``METADATA`` and ``entry_points.txt``,
  so that ``importlib.metadata.version()`` and entry points work inside the binary.
- :func:`glibc_floor`: the newest ``GLIBC_x.y`` symbol version any bundled ELF file needs,
  read with ``objdump -T``: the oldest glibc the binary runs on.

The binary unpacks every bundled file into ``$TMPDIR`` on each start, and creating a file costs
more than its bytes (0.5 ms each on this machine's disk): only what runs is bundled.
"""

from __future__ import annotations

import importlib.machinery
import re
import shutil
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

#: Suffixes of code, which PyInstaller collects by import analysis (or are not needed to run).
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pyd", ".pyi")
#: Files a distribution installs that do nothing at run time.
NOT_NEEDED_NAMES = ("py.typed",)
#: Folders inside a package that hold nothing the program runs: caches, a library's own tests.
NOT_NEEDED_FOLDERS = {"__pycache__", "tests", "test"}
#: A shared library's name: ``libfoo.so``, ``libfoo.so.1.2``.
SHARED_LIBRARY = re.compile(r"\.so(\.\d+)*$")
#: The suffixes that only Python extension modules carry (``.cpython-311-x86_64-linux-gnu.so``,
#: ``.abi3.so``): import analysis collects those. An untagged ``.so`` may be either; one that
#: analysis also collected is the same file at the same place, bundled once.
EXTENSION_ONLY_SUFFIXES = tuple(
    suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES if suffix != ".so"
)


def runtime_distributions(root: str = "flagadmin") -> list[metadata.Distribution]:
    """Return ``root``'s distribution and every distribution it needs at run time, sorted by
    name: its requirements whose environment markers hold with no extra selected (so the
    ``test`` extra is left out), followed transitively.

    :raise importlib.metadata.PackageNotFoundError: ``root`` or a requirement is not installed.
    """
    found: dict[str, metadata.Distribution] = {}
    pending = [root]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in found:
            continue
        dist = metadata.distribution(name)
        found[name] = dist
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return [found[name] for name in sorted(found)]


def top_level_names(dist: metadata.Distribution) -> set[str]:
    """Return the top-level import names a distribution installs (``flask``, ``_brotli``,
    ``backports``), read from its ``RECORD``."""
    names = set()
    for file in dist.files or ():
        top = PurePosixPath(str(file)).parts[0]
        if top != ".." and not top.endswith((".dist-info", ".data", ".egg-info")) and top != "__pycache__":
            names.add(top.split(".")[0])
    return names


def imported_distributions(
    distributions: Iterable[metadata.Distribution], imported: Iterable[str]
) -> list[metadata.Distribution]:
    """Return the distributions that install a top-level name of ``imported``: module names
    (``flask.app``) or paths inside the bundle (``pydantic_core/_pydantic_core....so``)."""
    tops = {name.split("/")[0].split(".")[0] for name in imported}
    return [dist for dist in distributions if top_level_names(dist) & tops]


def _in_package(path: PurePosixPath) -> bool:
    """True for a file installed inside a package folder, outside the folders of
    :data:`NOT_NEEDED_FOLDERS`: not a top-level module, a script in bin/, nor install metadata."""
    top = path.parts[0]
    if len(path.parts) < 2 or top == ".." or top.endswith((".dist-info", ".data", ".egg-info")):
        return False
    return not set(path.parts[1:-1]) & NOT_NEEDED_FOLDERS


def _is_data(path: PurePosixPath) -> bool:
    """True for a file installed inside a package that is not code, a shared library nor install
    metadata."""
    return (
        _in_package(path)
        and not path.name.endswith(CODE_SUFFIXES)
        and not SHARED_LIBRARY.search(path.name)
        and path.name not in NOT_NEEDED_NAMES
    )


def _is_shared_library(path: PurePosixPath) -> bool:
    """True for a shared library installed inside a package that is not an extension module."""
    return (
        _in_package(path)
        and SHARED_LIBRARY.search(path.name) is not None
        and not path.name.endswith(EXTENSION_ONLY_SUFFIXES)
    )


def _existing(dist: metadata.Distribution, wanted) -> list[tuple[str, str]]:
    """``(absolute source, destination folder)`` of the RECORD files for which ``wanted(path)``
    holds, skipping those missing on disk (some distributions list files they never wrote)."""
    pairs = []
    for file in dist.files or ():
        path = PurePosixPath(str(file))
        source = Path(str(dist.locate_file(file)))
        if wanted(path) and source.is_file():
            pairs.append((str(source), str(path.parent)))
    return pairs


def data_files(distributions: Iterable[metadata.Distribution]) -> list[tuple[str, str]]:
    """Return ``(absolute source path, destination folder inside the bundle)`` for every data
    file the distributions installed (their ``RECORD``), sorted."""
    return sorted({pair for dist in distributions for pair in _existing(dist, _is_data)})


def shared_libraries(distributions: Iterable[metadata.Distribution]) -> list[tuple[str, str]]:
    """Return ``(absolute source path, destination folder inside the bundle)`` for every shared
    library the distributions installed inside a package (their ``RECORD``) that is not an
    extension module, sorted: ``(".../yggdrasil_engine/lib/libyggdrasilffi.so",
    "yggdrasil_engine/lib")``. The destination is where the package looks for it (beside its
    code), as for data files."""
    return sorted({pair for dist in distributions for pair in _existing(dist, _is_shared_library)})


#: What importlib.metadata reads of a distribution: version and requirements, entry points.
METADATA_NAMES = ("METADATA", "entry_points.txt")


def metadata_files(distributions: Iterable[metadata.Distribution]) -> list[tuple[str, str]]:
    """Return ``(absolute source path, destination folder)`` of each distribution's
    ``*.dist-info/METADATA`` and ``entry_points.txt``, sorted."""

    def wanted(path: PurePosixPath) -> bool:
        return len(path.parts) == 2 and path.parts[0].endswith(".dist-info") and path.name in METADATA_NAMES

    return sorted({pair for dist in distributions for pair in _existing(dist, wanted)})


_GLIBC = re.compile(r"\bGLIBC_(\d+)\.(\d+)(?:\.(\d+))?\b")


def glibc_floor(paths: Iterable[str | Path]) -> tuple[str, str] | None:
    """Return ``("GLIBC_x.y", file)``: the newest glibc symbol version that any of the ELF
    files ``paths`` imports (``objdump -T``, undefined symbols only), and the file needing it.

    None when ``objdump`` (binutils) is missing or no file imports a versioned glibc symbol.
    """
    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    best: tuple[tuple[int, ...], str, str] | None = None
    for path in paths:
        result = subprocess.run(
            [objdump, "-T", str(path)], capture_output=True, text=True, timeout=60, check=False
        )
        for line in result.stdout.splitlines():
            if "*UND*" not in line:
                continue
            for match in _GLIBC.finditer(line):
                version = tuple(int(part) for part in match.groups() if part is not None)
                if best is None or version > best[0]:
                    best = (version, match.group(0), str(path))
    return None if best is None else (best[1], best[2])
