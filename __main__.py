"""``python -m flagadmin``: the command line, as the ``flagadmin`` console script runs it."""

from .cli import main

main()
