"""The ``flagadmin`` command line: create the database, load seed documents, manage tokens,
back up, serve, change projects, environments and the roles SCIM groups grant.

This module holds the ``flagadmin`` group (``--version``, ``-h``) and :func:`main`, the
console script's entry point; the commands live by subject beside it and are added here:

==================  ===========================================================
``data.py``         ``init-db``, ``seed``, ``backup``
``tokens.py``       ``create-token``, ``list-tokens``, ``revoke-token``
``serve.py``        ``serve`` (in named steps, with its warm-up), ``deliver``
``projects.py``     ``project create|update|delete|role``, ``environment add``
``directory.py``    ``group-role``
``common.py``       what they share: ``--db``, :func:`open_database`, the version line
==================  ===========================================================

One short function per command; long ones are split into named steps. Every command takes
``--db`` (default ``$FLAGADMIN_DATABASE``, else ``./flagadmin.db``) and shows an example in its
``--help``.
"""

from __future__ import annotations

import click

from .. import revision
from . import data, directory, projects, serve, tokens
from .common import version_message


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_message())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the git revision it was built from, then exit.",
)
def cli() -> None:
    """flagadmin: the admin API of a feature-flag service, on SQLite.

    \b
    Example:
      flagadmin serve --demo
    """


for _module in (data, tokens, serve, projects, directory):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Entry point of the ``flagadmin`` console script: find the revision once, then run."""
    revision.detect_from_checkout()
    cli()
