"""The webhook provider: its definition, and the request it makes of an event.

It holds the provider's parameters (:data:`PARAMETERS`, :data:`DEFINITION`: the reference
server's ``addonTypeSchema``, which ``GET /api/admin/addons`` lists), the limits and patterns
that the configuration API checks them against (:data:`URL_PATTERN`: RFC 3986's URI syntax
for ``http`` and ``https``, with no user information or fragment), and the preparing of one
attempt's request: the body, the headers (``customHeaders`` parsed with RFC 9110's field
syntax) and the Standard Webhooks signature (:func:`prepare`). The rest of the provider is
beside it: where it may send (:mod:`.address_guard`), the body template (:mod:`.template`) and
one attempt (:mod:`.sending`).

What it sends (the reference server's webhook provider, plus Standard Webhooks signatures):

- ``POST url`` with the body: the event (spec 2.3) as compact JSON, or the Mustache
  ``bodyTemplate`` rendered with ``event`` (the event object) and ``eventJson`` (the event's
  JSON as a JSON string literal, for ``{{{eventJson}}}``), HTML-escaped the way mustache.js
  escapes (``{{x}}``) or not at all (``{{{x}}}``).
- ``Content-Type`` (``contentType``, default ``application/json``), ``Authorization``
  (``authorization``, when set), then the headers of ``customHeaders`` (a JSON object; when it
  is not valid JSON the request is still sent and the attempt is ``successWithErrors``).
- ``webhook-id`` (the same on every attempt of one delivery) and ``webhook-timestamp`` always;
  ``webhook-signature: v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`` when ``secret``
  (``whsec_`` + base64 of the key) is set (Standard Webhooks 1.0, verifiable with the
  ``standardwebhooks`` library).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import __version__
from ..spec import EVENT_TYPES
from .template import js_text, render_template

# --- the provider's definition ---------------------------------------------------------------

PROVIDER = "webhook"
MASK = "*****"

#: Limits of the parameters (characters); larger values are refused with 400. They keep a
#: configuration's JSON under the API's 64 KiB body limit even when a field at its limit is
#: written with \u escapes (up to 12 bytes a character).
MAX_URL = 2048
MAX_CONTENT_TYPE = 255
MAX_AUTHORIZATION = 2048
MAX_CUSTOM_HEADERS = 2048
MAX_BODY_TEMPLATE = 4096
#: At most this many headers are taken from ``customHeaders``.
MAX_CUSTOM_HEADER_COUNT = 50
DEFAULT_CONTENT_TYPE = "application/json"

_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
#: RFC 3986's IPv6address, alternative by alternative.
_IPV6 = (
    "(?:"
    + "|".join(
        [
            rf"(?:{_H16}:){{6}}{_LS32}",
            rf"::(?:{_H16}:){{5}}{_LS32}",
            rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
            rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
            rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
            rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
        ]
    )
    + ")"
)
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[{_IPV6}\])"
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"

#: A webhook URL: ``http`` or ``https``, a host name (ASCII labels: an IDN in its ``xn--``
#: form) or an IP address (IPv6 in brackets), an optional port, then a path and query of
#: printable ASCII without ``#``. No user name or password. The OpenAPI document publishes it.
URL_PATTERN = rf"^https?://{_HOST}(?::{_PORT})?(?:[/?][!\"$-~]*)?$"
#: ``contentType`` and ``authorization``: printable ASCII (a header value on one line).
HEADER_VALUE_PATTERN = r"^[ -~]*$"
#: ``secret``: ``whsec_`` and the base64 of a key of 24 to 66 bytes (or empty: no signing).
SECRET_PATTERN = r"^(?:whsec_(?:[A-Za-z0-9+/]{4}){8,22}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)?$"


@dataclass(frozen=True)
class Parameter:
    """One parameter of a provider (the reference server's ``addonParameterSchema``)."""

    name: str
    display_name: str
    type: str
    description: str
    required: bool = False
    sensitive: bool = False
    placeholder: str | None = None


PARAMETERS: tuple[Parameter, ...] = (
    Parameter(
        "url",
        "Webhook URL",
        "url",
        "(Required) flagadmin POSTs each event to this http(s) URL, retrying failed attempts "
        "(see FLAGADMIN_DELIVERY_RETRY_SCHEDULE). It must resolve to public addresses unless "
        "FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE or FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS allow it.",
        required=True,
        sensitive=True,
    ),
    Parameter(
        "contentType",
        "Content-Type",
        "text",
        '(Optional) The Content-Type header to use. Defaults to "application/json".',
        placeholder=DEFAULT_CONTENT_TYPE,
    ),
    Parameter(
        "authorization",
        "Authorization",
        "text",
        "(Optional) The Authorization header to use. Not used if left blank.",
        sensitive=True,
        placeholder="",
    ),
    Parameter(
        "customHeaders",
        "Extra HTTP Headers",
        "textfield",
        "(Optional) A JSON object of extra headers, sent after Content-Type and Authorization "
        "(which they may replace). Invalid JSON is reported in the log (successWithErrors) and "
        "the request is still sent.",
        sensitive=True,
        placeholder='{\n  "ISTIO_USER_KEY": "hgg26bd2jbbd"\n}',
    ),
    Parameter(
        "bodyTemplate",
        "Body template",
        "textfield",
        "(Optional) A Mustache template of the body, with {{event.type}}, {{event.data.name}}... "
        "and {{{eventJson}}} (the event as a JSON string). Without it the body is the event as JSON.",
        placeholder='{\n  "event": "{{event.type}}",\n  "createdBy": "{{event.createdBy}}",\n'
        '  "featureToggle": "{{event.data.name}}"\n}',
    ),
    Parameter(
        "secret",
        "Signing secret",
        "text",
        "(Optional) A Standard Webhooks secret, whsec_ followed by the base64 of 24 to 66 random "
        "bytes. When set, every request carries webhook-signature (HMAC-SHA256 of "
        "id.timestamp.body), verifiable with the standardwebhooks library.",
        sensitive=True,
    ),
)

#: The provider as ``GET /api/admin/addons`` describes it (``addonTypeSchema``).
DEFINITION: dict[str, Any] = {
    "name": PROVIDER,
    "displayName": "Webhook",
    "description": "A Webhook is a generic way to post messages from flagadmin to third party services.",
    "documentationUrl": "https://docs.getunleash.io/integrate/webhook",
    "howTo": "Events are delivered at least once, off the request path, with retries; each "
    "attempt is one row of GET /api/admin/addons/{id}/events.",
    "parameters": [
        {
            "name": p.name,
            "displayName": p.display_name,
            "type": p.type,
            "description": p.description,
            "required": p.required,
            "sensitive": p.sensitive,
            **({"placeholder": p.placeholder} if p.placeholder is not None else {}),
        }
        for p in PARAMETERS
    ],
    "events": list(EVENT_TYPES),
}

SENSITIVE = frozenset(p.name for p in PARAMETERS if p.sensitive)


def schema_match(pattern: str, value: str) -> str | None:
    """``value`` when it matches the pattern ``pattern`` (``^...$``) as a whole, as the
    OpenAPI document's ECMAScript pattern reads: a trailing newline, which Python's ``$``
    lets through, does not match. None when it does not match."""
    return value if re.fullmatch(pattern, value) else None


# --- the request ----------------------------------------------------------------------------

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
#: Headers a ``customHeaders`` object may not set: they frame the message or carry the signature.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)
CUSTOM_HEADERS_NOT_JSON = "Could not parse the JSON in the customHeaders parameter."


@dataclass
class Prepared:
    """A request ready to send: the URL, its headers and body, what the log shows of the body
    (the event object, or the rendered text), and problems that do not stop the request."""

    url: str
    content_type: str
    headers: dict[str, str]
    body: bytes
    logged_body: Any
    problems: list[str] = field(default_factory=list)


def custom_headers(text: str | None) -> tuple[dict[str, str], list[str]]:
    """The headers of a ``customHeaders`` parameter, and the problems met (the reference
    server's message when it is not JSON; one line per header that cannot be sent)."""
    if not text:
        return {}, []
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}, [CUSTOM_HEADERS_NOT_JSON]
    if not isinstance(parsed, dict):
        return {}, ["The customHeaders parameter is not a JSON object; no custom header was sent."]
    headers: dict[str, str] = {}
    problems: list[str] = []
    for name, value in list(parsed.items())[:MAX_CUSTOM_HEADER_COUNT]:
        if isinstance(name, str) and (earlier := _named(headers, name)) is not None:
            problems.append(
                f"The custom header {name!r} repeats {earlier!r} (header names ignore case); "
                "only the last one was sent."
            )
            del headers[earlier]
        text_value = value if isinstance(value, str) else js_text(value)
        if isinstance(value, dict | list) or value is None:
            problems.append(f"The custom header {name!r} has no text value; it was not sent.")
        elif not _TOKEN.fullmatch(name):
            problems.append(f"The custom header name {name!r} is not a valid header name; it was not sent.")
        elif name.lower() in RESERVED_HEADERS:
            problems.append(f"The custom header {name!r} cannot be set; it was not sent.")
        elif not _FIELD_VALUE.fullmatch(text_value) or len(text_value) > 8192:
            problems.append(
                f"The value of the custom header {name!r} is not a valid header value; it was not sent."
            )
        else:
            headers[name] = text_value
    if len(parsed) > MAX_CUSTOM_HEADER_COUNT:
        problems.append(f"Only the first {MAX_CUSTOM_HEADER_COUNT} custom headers were sent.")
    return headers, problems


def _named(headers: dict[str, str], name: str) -> str | None:
    """The key of ``headers`` that names the same field as ``name`` (RFC 9110 section 5.1:
    field names are case-insensitive), or None."""
    folded = name.lower()
    return next((key for key in headers if key.lower() == folded), None)


def merge_headers(*layers: dict[str, str]) -> dict[str, str]:
    """``layers`` merged in order, a later header replacing an earlier one of the same name
    whatever its case (RFC 9110 section 5.1), so that a request carries each field once; the
    replacing header keeps its own spelling."""
    merged: dict[str, str] = {}
    for layer in layers:
        for name, value in layer.items():
            earlier = _named(merged, name)
            if earlier is not None:
                del merged[earlier]
            merged[name] = value
    return merged


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret (the base64 after the prefix)."""
    encoded = secret.removeprefix("whsec_")
    return base64.b64decode(encoded + "=" * (-len(encoded) % 4))


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks signature of one attempt: ``v1,`` + base64 of HMAC-SHA256 over
    ``"<webhook-id>.<timestamp>.<body>"`` with the secret's key."""
    digest = hmac.new(
        secret_key(secret), webhook_id.encode() + b"." + str(timestamp).encode() + b"." + body, hashlib.sha256
    ).digest()
    return "v1," + base64.b64encode(digest).decode()


def prepare(
    parameters: dict[str, Any], event: dict[str, Any], *, webhook_id: str, timestamp: int
) -> Prepared:
    """The request of one attempt at delivering ``event`` (spec 2.3 shape) with a webhook
    configuration's ``parameters``, at ``timestamp`` (epoch seconds).

    :raise TemplateError: ``bodyTemplate`` cannot be rendered for this event.
    """
    template = parameters.get("bodyTemplate")
    if isinstance(template, str) and len(template) > 1:
        rendered = render_template(template, event)
        body, logged = rendered.encode("utf-8", "replace"), rendered
    else:
        body, logged = orjson.dumps(event), event
    defaults = {
        "Content-Type": parameters.get("contentType") or DEFAULT_CONTENT_TYPE,
        "User-Agent": f"flagadmin/{__version__}",
    }
    if parameters.get("authorization"):
        defaults["Authorization"] = parameters["authorization"]
    extra, problems = custom_headers(parameters.get("customHeaders"))
    signature = {"webhook-id": webhook_id, "webhook-timestamp": str(timestamp)}
    if parameters.get("secret"):
        signature["webhook-signature"] = sign(parameters["secret"], webhook_id, timestamp, body)
    headers = merge_headers(defaults, extra, signature)
    content_type = headers[_named(headers, "Content-Type")]  # type: ignore[index]
    return Prepared(parameters["url"], content_type, headers, body, logged, problems)
