"""Which code this is: the git revision the running flagadmin was built from (spec 2.5
``versionInfo.current.oss``).

Found once per process, never per app: a build (``packaging/build``) stamps it into
``_build_info.py`` inside the package; otherwise the command line asks git once at start,
when the package runs from a checkout (:func:`detect_from_checkout`). Without either, the
version number stands in for it.
"""

from __future__ import annotations

import subprocess
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
    remember it; None when the package is not in a checkout or git is missing."""
    global _found
    if _found is None and _stamped() is None:
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
