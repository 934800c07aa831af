"""Which code this is: the git revision the running flagadmin was built from (spec 2.5
``versionInfo.current.oss``).

Found once per process, never per app: a build (``packaging/build``) stamps it into
``_build_info.py`` inside the package; otherwise the command line asks git once at start,
when the package runs from a checkout (:func:`detect_from_checkout`). Without either, the
version number stands in for it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import __version__

_found: str | None = None


def _stamped() -> str | None:
    try:
        from ._build_info import REVISION  # written by packaging/build; absent in a checkout
    except ImportError:
        return None
    return REVISION or None


def detect_from_checkout() -> str | None:
    """Ask git for the revision of the checkout this package runs from, once per process, and
    remember it; return :func:`current`. Git is not asked when a build stamped the revision,
    nor in a frozen binary."""
    global _found
    # A frozen binary (PyInstaller sets sys.frozen) is no checkout: it must never run git.
    if _found is None and _stamped() is None and not getattr(sys, "frozen", False):
        try:
            _found = (
                subprocess.run(
                    ["git", "rev-parse", "HEAD"],
                    cwd=Path(__file__).parent,
                    capture_output=True,
                    text=True,
                    timeout=5,
                    check=True,
                ).stdout.strip()
                or None
            )
        except (OSError, subprocess.SubprocessError):
            _found = None
    return current()


def current() -> str:
    """The revision: stamped at build, else found at start, else the version number."""
    return _stamped() or _found or __version__
