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
``roles.py``        ``role create|update|list|delete``
``common.py``       what they share: ``--db``, :func:`open_database`, the version line
==================  ===========================================================

One short function per command; long ones are split into named steps. Every command takes
``--db`` (default ``$FLAGADMIN_DATABASE``, else ``./flagadmin.db``) and shows an example in its
``--help``; only ``init-db``, ``seed`` and ``serve`` create a missing database.

Every error is one line on standard error that says what to do, never a traceback
(:class:`OneLineErrors`): click's usage errors too, and a database or file system that fails
under a command.
"""

from __future__ import annotations

import errno
import sys

import click

from .. import revision
from ..store import StoreError, Unavailable
from . import data, directory, projects, roles, serve, tokens
from .common import one_line, version_message


def _sentence(text: str) -> str:
    text = one_line(text)
    return text if text.endswith((".", "!", "?")) else text + "."


class OneLineErrors(click.Group):
    """The ``flagadmin`` group, whose errors are each one line on standard error, beginning
    ``Error:``: a usage error (exit status 2) names the help to read instead of printing the
    usage; a :class:`click.ClickException` is printed on one line (its exit status); a database
    that fails under a command (:class:`~flagadmin.store.StoreError`) or a file system error
    (:class:`OSError`) exits with status 1. Programming errors still show their traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """:meth:`click.Command.main`, run with ``standalone_mode=False`` and this class's
        report of each error; exits (:class:`SystemExit`) with the command's exit status."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a group run without a command: its help
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            hint = f" See '{exc.ctx.command_path} --help'." if exc.ctx is not None else ""
            _fail(_sentence(exc.format_message()) + hint, exc.exit_code)
        except click.ClickException as exc:
            _fail(one_line(exc.format_message()), exc.exit_code)
        except click.Abort:
            _fail("Aborted.", 1)
        except Unavailable as exc:
            _fail(
                f"the database failed ({one_line(str(exc))}): if it is busy, try again; else check that "
                "this user may read and write it and its folder, and that the disk has room. "
                "Nothing more was done.",
                1,
            )
        except StoreError as exc:
            _fail(f"the database refused the change ({one_line(str(exc))}). Nothing more was done.", 1)
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of the output went away: nothing to tell
                sys.exit(1)
            where = f" ({exc.filename})" if exc.filename else ""
            _fail(f"{exc.strerror or exc}{where}: check the path and its permissions.", 1)
        sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, status: int) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(status)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_message())
        ctx.exit()


@click.group("flagadmin", cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
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


for _module in (data, tokens, serve, projects, directory, roles):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Entry point of the ``flagadmin`` console script: find the revision once, then run."""
    revision.detect_from_checkout()
    cli()
