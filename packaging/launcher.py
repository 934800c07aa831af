"""The one-file build's entry point: the ``flagadmin`` command line, exactly as the console
script ``flagadmin = flagadmin.cli:main`` runs it from the package (the revision comes from
``flagadmin/_build_info.py``, stamped by ``packaging/build``; git is never run)."""

from flagadmin.cli import main

main()
