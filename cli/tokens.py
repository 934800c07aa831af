"""The API tokens' commands (spec 5): ``create-token`` prints a new admin token, personal
access token, client token (backend SDKs) or frontend token, ``list-tokens`` lists them (never
a token or its digest), ``revoke-token`` revokes one. Each change records its event
(api-token-created, pat-created, api-token-deleted, pat-deleted) in the change's transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime

import click
import isodate

from .. import events, refusals
from ..store import Connection, directory, tokens, users
from ..timestamps import format_rfc3339
from ..tokens import changes
from .common import database_option, open_database


def _expiry(ctx: click.Context, param: click.Parameter, duration: str | None) -> str | None:
    """Return the RFC 3339 moment ``duration`` (ISO 8601, e.g. ``P30D``) from now, or None;
    a duration that is not ISO 8601 or not longer than zero is a usage error (exit code 2)."""
    if duration is None:
        return None
    now = datetime.now(UTC)
    try:
        if any(c.isspace() or not c.isprintable() for c in duration):  # isodate's $ passes a newline
            raise ValueError("a space or line break")
        expires = now + isodate.parse_duration(duration.upper())
    except (isodate.ISO8601Error, ValueError, OverflowError) as exc:
        raise click.BadParameter(
            f"{duration!r} is not an ISO 8601 duration; e.g. P30D (30 days), PT12H (12 hours), P1Y, "
            "with no spaces or line breaks.",
            param_hint="--expires-in",
        ) from exc
    if expires <= now:
        raise click.BadParameter("the duration must be longer than zero.", param_hint="--expires-in")
    return format_rfc3339(expires)


def _refuse_deactivated(conn: Connection, username: str) -> None:
    """A personal token for a user the directory deactivated would get 401: refuse it."""
    if not directory.is_active(conn, username):
        raise click.ClickException(
            f"{username} is deactivated by the identity provider (SCIM): its personal tokens get 401. "
            "Reactivate the user in the directory first. Nothing was written."
        )


@click.command("create-token")
@database_option()
@click.option("--admin", "admin", is_flag=True, help="An admin API token (acts as Admin).")
@click.option("--user", "username", metavar="USERNAME", help="A personal access token for this user.")
@click.option(
    "--client",
    "client_environment",
    metavar="ENVIRONMENT",
    help="A client token for backend SDKs (the Client API), reading this environment.",
)
@click.option(
    "--frontend",
    "frontend_environment",
    metavar="ENVIRONMENT",
    help="A frontend token (the Frontend API), reading this environment.",
)
@click.option(
    "--project",
    "projects",
    metavar="PROJECT",
    multiple=True,
    help="With --client or --frontend: a project it reads (repeat for several). Default: every project.",
)
@click.option("--name", default=None, help="A label shown by list-tokens.")
@click.option(
    "--expires-in",
    "expires_at",
    metavar="DURATION",
    callback=_expiry,
    help="Stop working after this ISO 8601 duration, e.g. P30D, PT12H, P1Y. Default: never.",
)
def create_token(
    database: str,
    admin: bool,
    username: str | None,
    client_environment: str | None,
    frontend_environment: str | None,
    projects: tuple[str, ...],
    name: str | None,
    expires_at: str | None,
) -> None:
    """Print a new API token. It is shown once and stored only as a SHA-256 digest.

    \b
    Examples:
      flagadmin create-token --admin
      flagadmin create-token --user alice --expires-in P30D
      flagadmin create-token --client production --project checkout --name checkout-service
      flagadmin create-token --frontend development
    """
    kinds = [admin, username is not None, client_environment is not None, frontend_environment is not None]
    if sum(kinds) != 1:
        raise click.UsageError(
            "Give exactly one of --admin, --user USERNAME, --client ENVIRONMENT or --frontend ENVIRONMENT."
        )
    if projects and client_environment is None and frontend_environment is None:
        raise click.UsageError("--project goes with --client or --frontend only.")
    with open_database(database) as conn:
        if client_environment is not None or frontend_environment is not None:
            kind = "client" if client_environment is not None else "frontend"
            try:
                token, _ = changes.create_api_token(
                    conn,
                    events.COMMAND_LINE,
                    type=kind,
                    name=name or f"{kind} token",
                    environment=client_environment or frontend_environment,
                    projects=list(projects) or None,
                    expires_at=expires_at,
                )
            except refusals.Refusal as exc:  # an unknown environment or project, or the limit
                raise click.ClickException(exc.message.rstrip(".") + ". Nothing was written.") from exc
        elif admin:
            try:
                token, _ = changes.create(
                    conn, events.COMMAND_LINE, kind="admin", name=name or "admin token", expires_at=expires_at
                )
            except refusals.Refusal as exc:  # past the apiTokens resource limit
                raise click.ClickException(exc.message) from exc
        else:
            user_id = users.id_by_username(conn, username)
            if user_id is None:
                raise click.ClickException(
                    f"No user has the username {username!r}: check its spelling (users come from seed "
                    "documents or SCIM provisioning). Nothing was written."
                )
            _refuse_deactivated(conn, username)
            token, _ = changes.create(
                conn,
                events.COMMAND_LINE,
                kind="personal",
                user_id=user_id,
                name=name or f"{username} token",
                expires_at=expires_at,
            )
    click.echo(token)
    if expires_at:
        click.echo(f"It expires at {expires_at}.", err=True)


#: Columns of ``list-tokens``: heading -> key of :func:`flagadmin.store.tokens.list_tokens`.
TOKEN_COLUMNS = {
    "ID": "id",
    "STATUS": "status",
    "KIND": "kind",
    "USER": "username",
    "NAME": "name",
    "CREATED": "created_at",
    "LAST USED": "last_used_at",
    "EXPIRES": "expires_at",
    "REVOKED": "revoked_at",
    "SCOPE": "scope",
}


def _echo_table(columns: dict[str, str], rows: list[dict]) -> None:
    """Print ``rows`` as a table of ``columns`` (heading -> key), cells two spaces apart."""
    table = [tuple(columns)] + [
        tuple("-" if row[key] is None else " ".join(str(row[key]).split()) for key in columns.values())
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    for line in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


@click.command("list-tokens")
@database_option()
def list_tokens(database: str) -> None:
    """List the API tokens: id, status, kind, user, name, when created, last used, expiring
    and revoked, and what each reads (project:environment, as its secret begins). Never a
    token or its digest.

    \b
    Example:
      flagadmin list-tokens --db /var/lib/flagadmin/flagadmin.db
    """
    with open_database(database) as conn:
        rows = tokens.list_tokens(conn)
    if not rows:
        click.echo("No API tokens. Create one with `flagadmin create-token --admin`.")
        return
    _echo_table(TOKEN_COLUMNS, rows)


@click.command("revoke-token")
@database_option()
@click.argument("token_id", metavar="ID", type=click.IntRange(1, 2**63 - 1))
def revoke_token(database: str, token_id: int) -> None:
    """Revoke the API token with this ID (see list-tokens); it gets 401 from the next request.

    \b
    Example:
      flagadmin revoke-token 3
    """
    with open_database(database) as conn:
        result = changes.revoke(conn, events.COMMAND_LINE, token_id)
    if result is None:
        raise click.ClickException(
            f"No API token has id {token_id}; `flagadmin list-tokens` shows the ids. Nothing was changed."
        )
    revoked_at, newly = result
    click.echo(f"Token {token_id} {'revoked' if newly else 'was already revoked'} at {revoked_at}.")


#: The commands this module adds to ``flagadmin``.
COMMANDS = (create_token, list_tokens, revoke_token)
