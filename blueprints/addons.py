"""Integration configurations (the reference server's ``/api/admin/addons``, same bodies): list,
create, read, replace, delete, and send a test event.

Spec 2.2 names the integration configuration that 4.1's ``id`` points at without showing its
fields; they are the reference server's (``addonCreateUpdateSchema``, ``addonSchema``,
``addonsSchema``), plus three options of flagadmin's own (``maxInFlight``, ``eventsKeep``,
``eventsMaxAge``). Every change is an event (``addon-config-created``, ``-updated``,
``-deleted``, never with the parameters), written in the change's transaction. Sensitive
parameters are shown as ``*****``; a ``*****`` sent back keeps the stored value.

It is over 400 lines because the provider's parameters each need their marshmallow field and
OpenAPI description beside the views that take them; the domain is in ``integrations/``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from flask import Blueprint
from marshmallow import RAISE, Schema, fields, validate

from .. import events
from ..integrations import configs, delivery, webhooks
from ..records import IntegrationEventSchema, WholeMatch
from ..spec import EVENT_TYPES
from ..store import deliveries as store_deliveries
from ..store import integrations as store_integrations
from ..web.auth import Permission
from ..web.cache import Answer
from ..web.errors import ConflictError, NotFoundError
from ..web.operations import operation
from ..web.state import state
from .integration_events import INTEGRATION_ID, integration_id

bp = Blueprint("addons", __name__, url_prefix="/api/admin")

SECTION = "2.2"
#: Projects or environments a configuration may name, and their length.
MAX_FILTER_ITEMS = 20
MAX_FILTER_NAME = 100
MAX_DESCRIPTION = 1000
#: ISO 8601 durations of one component, at least a second: P30D, P4W, P1Y, PT12H, PT90M.
MAX_AGE_PATTERN = r"^P(?:[1-9][0-9]{0,3}[YMWD]|T[1-9][0-9]{0,6}[HMS])$"


class StrictBoolean(fields.Boolean):
    """A JSON ``true`` or ``false``, nothing else (no ``"true"``, no ``1``)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


class StrictInteger(fields.Integer):
    """A JSON integer, nothing else (no ``"5"``, no ``5.5``, no ``true``)."""

    default_error_messages: ClassVar[dict[str, str]] = {"invalid": "Not a valid integer."}

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


def _masked_or(pattern: str) -> str:
    """``pattern`` (``^...$``) that also accepts ``*****`` (a stored value kept)."""
    return r"^(?:\*\*\*\*\*|" + pattern[1:-1] + r")$"


#: The webhook provider's parameters' descriptions, by name (its addonTypeSchema).
_DESCRIPTIONS = {p.name: p.description for p in webhooks.PARAMETERS}


#: What the patterns accept, in words: the 400 of a value that does not match says it.
URL_RULE = (
    "Must be an http:// or https:// URL with a host name or IP address, of printable ASCII, "
    "without user name, password or fragment, and nothing around it (no spaces or line breaks)."
)
HEADER_VALUE_RULE = "Must be printable ASCII on one line (no line breaks or other control characters)."
SECRET_RULE = (
    "Must be whsec_ followed by the base64 of a key of 24 to 66 bytes (or empty: no signing), "
    "and nothing after it (no spaces or line breaks)."
)
MAX_AGE_RULE = (
    "Must be an ISO 8601 duration of one component, at least a second, such as P30D, P4W, P1Y, "
    "PT12H or PT90M, and nothing around it (no spaces or line breaks)."
)


def _text(name: str, max_length: int, regex: str | None = None, rule: str | None = None) -> fields.String:
    """An optional text parameter of the webhook provider: at most ``max_length`` characters,
    matching ``regex`` as a whole when given (else refused with ``rule``)."""
    checks: list[validate.Validator] = [validate.Length(max=max_length)]
    if regex is not None:
        checks.append(WholeMatch(regex, error=rule or WholeMatch.default_message))
    return fields.String(validate=checks, metadata={"description": _DESCRIPTIONS[name]})


def _url(regex: str) -> fields.String:
    """The webhook provider's ``url`` parameter, matching ``regex``."""
    return fields.String(
        required=True,
        validate=[validate.Length(min=1, max=webhooks.MAX_URL), WholeMatch(regex, error=URL_RULE)],
        metadata={"description": _DESCRIPTIONS["url"]},
    )


class WebhookParametersSchema(Schema):
    """Parameters of the webhook provider."""

    class Meta:
        unknown = RAISE

    url = _url(webhooks.URL_PATTERN)
    contentType = _text(
        "contentType", webhooks.MAX_CONTENT_TYPE, webhooks.HEADER_VALUE_PATTERN, HEADER_VALUE_RULE
    )
    authorization = _text(
        "authorization", webhooks.MAX_AUTHORIZATION, webhooks.HEADER_VALUE_PATTERN, HEADER_VALUE_RULE
    )
    customHeaders = _text("customHeaders", webhooks.MAX_CUSTOM_HEADERS)
    bodyTemplate = _text("bodyTemplate", webhooks.MAX_BODY_TEMPLATE)
    secret = _text("secret", 128, webhooks.SECRET_PATTERN, SECRET_RULE)


class WebhookParametersUpdateSchema(WebhookParametersSchema):
    """Parameters of the webhook provider (a sensitive one sent as ***** keeps its stored value)."""

    # The sensitive parameters with a pattern also accept *****; customHeaders (sensitive, no
    # pattern) already does.
    url = _url(_masked_or(webhooks.URL_PATTERN))
    authorization = _text(
        "authorization",
        webhooks.MAX_AUTHORIZATION,
        _masked_or(webhooks.HEADER_VALUE_PATTERN),
        HEADER_VALUE_RULE,
    )
    secret = _text("secret", 128, _masked_or(webhooks.SECRET_PATTERN), SECRET_RULE)


def _names(description: str) -> fields.List:
    return fields.List(
        fields.String(validate=validate.Length(min=1, max=MAX_FILTER_NAME)),
        validate=validate.Length(max=MAX_FILTER_ITEMS),
        load_default=list,
        metadata={"description": description},
    )


class AddonCreateSchema(Schema):
    """A new integration configuration (the reference server's addonCreateUpdateSchema)."""

    class Meta:
        unknown = RAISE

    provider = fields.String(
        required=True,
        validate=validate.OneOf(sorted(configs.PROVIDERS)),
        metadata={"description": "The provider, case sensitive: flagadmin delivers through webhook."},
    )
    description = fields.String(
        allow_none=True,
        load_default=None,
        validate=validate.Length(max=MAX_DESCRIPTION),
        metadata={"description": "A description of the configuration."},
    )
    enabled = StrictBoolean(
        required=True, metadata={"description": "Whether the configuration handles events."}
    )
    parameters = fields.Nested(WebhookParametersSchema, required=True)
    events = fields.List(
        fields.String(validate=validate.OneOf(EVENT_TYPES)),
        required=True,
        validate=validate.Length(max=len(EVENT_TYPES)),
        metadata={"description": "The event types (spec 6) this configuration handles."},
    )
    projects = _names("Projects whose events it handles; empty (or first item *): all.")
    environments = _names("Environments whose events it handles; empty (or first item *): all.")
    maxInFlight = StrictInteger(
        allow_none=True,
        load_default=None,
        validate=validate.Range(1, 100),
        metadata={
            "description": "Deliveries under way at once, retries waiting included; 1 keeps "
            "events in order. null: FLAGADMIN_DELIVERY_MAX_IN_FLIGHT."
        },
    )
    eventsKeep = StrictInteger(
        allow_none=True,
        load_default=None,
        validate=validate.Range(1, 10**9),
        metadata={
            "description": "Rows of its log (4.1) kept, newest first. "
            "null: FLAGADMIN_INTEGRATION_EVENTS_KEEP."
        },
    )
    eventsMaxAge = fields.String(
        allow_none=True,
        load_default=None,
        validate=WholeMatch(MAX_AGE_PATTERN, error=MAX_AGE_RULE),
        metadata={
            "description": "Age (ISO 8601 duration, e.g. P30D) after which rows of its log "
            "are deleted. null: FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE."
        },
    )


class AddonUpdateSchema(AddonCreateSchema):
    """An integration configuration's new content; a sensitive parameter sent as ***** keeps its value."""

    parameters = fields.Nested(WebhookParametersUpdateSchema, required=True)


class AddonSchema(Schema):
    """An integration configuration (the reference server's addonSchema, plus flagadmin's
    options); sensitive parameters shown as ``*****``."""

    id = fields.Integer(required=True, validate=validate.Range(min=1))
    provider = fields.String(required=True)
    description = fields.String(required=True, allow_none=True)
    enabled = fields.Boolean(required=True)
    parameters = fields.Dict(required=True)
    events = fields.List(fields.String(), required=True)
    projects = fields.List(fields.String(), required=True)
    environments = fields.List(fields.String(), required=True)
    createdAt = fields.String(
        required=True, allow_none=True, metadata={"description": "When it was created (null: seeded)."}
    )
    maxInFlight = fields.Integer(required=True, allow_none=True)
    eventsKeep = fields.Integer(required=True, allow_none=True)
    eventsMaxAge = fields.String(required=True, allow_none=True)


class AddonParameterSchema(Schema):
    """A provider's parameter (addonParameterSchema)."""

    name = fields.String(required=True)
    displayName = fields.String(required=True)
    type = fields.String(required=True)
    description = fields.String()
    placeholder = fields.String()
    required = fields.Boolean(required=True)
    sensitive = fields.Boolean(required=True)


class AddonTypeSchema(Schema):
    """A provider (addonTypeSchema): its parameters and the events it can handle."""

    name = fields.String(required=True)
    displayName = fields.String(required=True)
    documentationUrl = fields.String(required=True)
    description = fields.String(required=True)
    howTo = fields.String()
    parameters = fields.List(fields.Nested(AddonParameterSchema))
    events = fields.List(fields.String())


class AddonsSchema(Schema):
    """Every configuration and every provider (addonsSchema)."""

    addons = fields.List(fields.Nested(AddonSchema), required=True)
    providers = fields.List(fields.Nested(AddonTypeSchema), required=True)


def _found(conn, id: str) -> dict[str, Any]:
    number = integration_id(id)
    config = None if number is None else store_integrations.get(conn, number)
    if config is None:
        raise NotFoundError(
            f"No integration configuration has the id {id!r}: integration ids are decimal integers."
        )
    return config


@operation(
    bp,
    "/addons",
    section=SECTION,
    summary="List integration configurations and providers",
    response=AddonsSchema(),
)
def list_addons(caller, conn):
    """Every integration configuration (sensitive parameters as *****) and the providers
    flagadmin delivers through. Any valid API token."""
    return {
        "addons": [configs.wire(config) for config in store_integrations.list_all(conn)],
        "providers": list(configs.PROVIDERS.values()),
    }


@operation(
    bp,
    "/addons",
    method="POST",
    section=SECTION,
    summary="Create an integration configuration",
    response=AddonSchema(),
    body=AddonCreateSchema(),
    permission=Permission.ADMIN,
    status=201,
)
def create_addon(caller, conn, body):
    """Create a configuration; it handles the events recorded after it (no delay).

    400 for an unknown provider, a missing required parameter, an event type not of spec 6,
    a URL that is not http(s) or resolves to a non-public address (unless
    FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE or FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS allow it), a
    value with a trailing newline or a space around it, or a bodyTemplate that is not complete
    Mustache (an unclosed tag or section...), does not render, or names anything but event
    and eventJson outside a section: the message says which, and where. Records
    addon-config-created.
    """
    config = configs.checked(body, stored=None, settings=state().settings)
    app_state = state()
    with conn.write("integrations"):
        number = store_integrations.insert(conn, config, created_at=app_state.clock.now_rfc3339())
        stored = store_integrations.get(conn, number)
        events.record(
            conn,
            "addon-config-created",
            events.Actor.of_caller(caller),
            data=configs.event_data(stored),
            clock=app_state.clock,
        )
    return configs.wire(stored)


@operation(
    bp,
    "/addons/<id>",
    section=SECTION,
    summary="Get an integration configuration",
    response=AddonSchema(),
    path={"id": INTEGRATION_ID},
)
def get_addon(caller, conn, id: str):
    """One configuration, sensitive parameters as *****. Any valid API token; 404 for an
    unknown id."""
    return configs.wire(_found(conn, id))


@operation(
    bp,
    "/addons/<id>",
    method="PUT",
    section=SECTION,
    summary="Replace an integration configuration",
    response=AddonSchema(),
    body=AddonUpdateSchema(),
    permission=Permission.ADMIN,
    path={"id": INTEGRATION_ID},
    statuses=(409,),
)
def update_addon(caller, conn, id: str, body):
    """Replace a configuration; the next event uses it. A sensitive parameter sent as *****
    keeps its stored value. Disabling it cancels its pending deliveries. 404 for
    an unknown id; 409 to change its provider; 400 for what a create refuses. Records
    addon-config-updated when something other than the parameters changed (the event never
    carries them).
    """
    config = configs.checked(body, stored=_found(conn, id), settings=state().settings)
    app_state = state()
    with conn.write("integrations"):
        before = _found(conn, id)
        store_integrations.update(conn, before["id"], config)
        after = store_integrations.get(conn, before["id"])
        if before["enabled"] and not after["enabled"]:
            store_deliveries.cancel_pending(conn, before["id"], app_state.clock.now_rfc3339())
        events.record(
            conn,
            "addon-config-updated",
            events.Actor.of_caller(caller),
            data=configs.event_data(after),
            pre_data=configs.event_data(before),
            clock=app_state.clock,
        )
    return configs.wire(after)


@operation(
    bp,
    "/addons/<id>",
    method="DELETE",
    section=SECTION,
    summary="Delete an integration configuration",
    response=None,
    permission=Permission.ADMIN,
    path={"id": INTEGRATION_ID},
)
def delete_addon(caller, conn, id: str):
    """Delete a configuration with its log (4.1) and its deliveries, in one transaction.
    404 for an unknown id (the reference server answers 200). Records
    addon-config-deleted. Answers 200 without a body."""
    app_state = state()
    with conn.write("integrations"):
        before = _found(conn, id)
        store_integrations.delete(conn, before["id"])
        events.record(
            conn,
            "addon-config-deleted",
            events.Actor.of_caller(caller),
            pre_data=configs.event_data(before),
            clock=app_state.clock,
        )


@operation(
    bp,
    "/addons/<id>/test",
    method="POST",
    section=SECTION,
    summary="Send a test event to an integration configuration",
    response=IntegrationEventSchema(),
    permission=Permission.ADMIN,
    path={"id": INTEGRATION_ID},
    statuses=(409,),
)
def test_addon(caller, conn, id: str):
    """Send a sample event (of the configuration's first event type) now, through the same
    path as real deliveries (address checks, headers, signature, deadline), and answer with the
    attempt's row of its log (4.1), whatever the outcome; it is not retried. Works on a
    disabled configuration too. 404 for an unknown id; 409 for a provider that
    flagadmin does not deliver through."""
    config = _found(conn, id)
    if not configs.deliverable(config):
        raise ConflictError(
            f"Integration configuration {config['id']} uses the provider {config['provider']!r}, "
            "which flagadmin does not deliver through; only webhook configurations can be tested."
        )
    app_state = state()
    item = delivery.send_test(
        conn,
        config,
        events.Actor.of_caller(caller),
        policy=delivery.Policy.from_settings(app_state.settings),
        clock=app_state.clock,
    )
    if item is None:
        raise NotFoundError(f"Integration configuration {config['id']} was deleted during the test.")
    return Answer(item)
