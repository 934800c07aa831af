"""The webhook provider: its definition, the request it makes of an event, the guard that keeps
it off non-public addresses, and one HTTP attempt with a hard deadline.

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

Where it sends: the URL's host is resolved and every address must be public (see
:func:`non_public_reason`) unless private addresses are allowed or the host is on the allow
list; the connection goes to an address that was checked (pinned), so a name that resolves
differently a moment later (DNS rebinding) cannot move it. Redirects are never followed.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import functools
import hashlib
import heapq
import hmac
import http.client
import ipaddress
import itertools
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pystache

from .. import __version__
from ..spec import EVENT_TYPES

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
    """``value`` when it matches the JSON Schema ``pattern`` (an unanchored search, as JSON
    Schema validators run it in Python), with the one trailing newline that Python's ``$``
    lets through removed; None when it does not match."""
    if re.search(pattern, value) is None:
        return None
    return value[:-1] if value.endswith("\n") else value


# --- the address guard -----------------------------------------------------------------------


class Blocked(Exception):
    """The URL's host resolves to an address that is not public; the message says which and why."""


class Unresolvable(Exception):
    """The URL's host does not resolve (or resolving it took too long)."""


def _networks(*pairs: tuple[str, str]) -> tuple[tuple[ipaddress._BaseNetwork, str], ...]:
    return tuple((ipaddress.ip_network(net), label) for net, label in pairs)


_V4_BLOCKED = _networks(
    ("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
    ("10.0.0.0/8", "private (10.0.0.0/8)"),
    ("100.64.0.0/10", "shared address space, CGNAT (100.64.0.0/10)"),
    ("127.0.0.0/8", "loopback (127.0.0.0/8)"),
    ("169.254.0.0/16", "link-local (169.254.0.0/16)"),
    ("172.16.0.0/12", "private (172.16.0.0/12)"),
    ("192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)"),
    ("192.0.2.0/24", "documentation (192.0.2.0/24)"),
    ("192.88.99.0/24", "6to4 relay anycast (192.88.99.0/24)"),
    ("192.168.0.0/16", "private (192.168.0.0/16)"),
    ("198.18.0.0/15", "benchmarking (198.18.0.0/15)"),
    ("198.51.100.0/24", "documentation (198.51.100.0/24)"),
    ("203.0.113.0/24", "documentation (203.0.113.0/24)"),
    ("224.0.0.0/4", "multicast (224.0.0.0/4)"),
    ("240.0.0.0/4", "reserved (240.0.0.0/4)"),
)
_V6_BLOCKED = _networks(
    ("::/128", "unspecified (::)"),
    ("::1/128", "loopback (::1)"),
    ("::/96", "IPv4-compatible (::/96)"),
    ("64:ff9b:1::/48", "local-use NAT64 (64:ff9b:1::/48)"),
    ("100::/64", "discard-only (100::/64)"),
    ("2001::/23", "IETF protocol assignments (2001::/23)"),
    ("2001:db8::/32", "documentation (2001:db8::/32)"),
    ("3fff::/20", "documentation (3fff::/20)"),
    ("5f00::/16", "segment routing (5f00::/16)"),
    ("fc00::/7", "unique local, private (fc00::/7)"),
    ("fe80::/10", "link-local (fe80::/10)"),
    ("fec0::/10", "site-local (fec0::/10)"),
    ("ff00::/8", "multicast (ff00::/8)"),
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def non_public_reason(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``address`` is not a public unicast address (None: it is).

    IPv6 addresses that carry an IPv4 address are judged by it: IPv4-mapped
    (``::ffff:a.b.c.d``), NAT64 (``64:ff9b::/96``), 6to4 (``2002::/16``) and Teredo (its
    client). Then the ranges above are refused (loopback, private, link-local, CGNAT,
    benchmarking, documentation, multicast, reserved, unspecified...), and whatever Python's
    ``is_global`` does not call global. ``is_global`` alone is not enough: it calls multicast
    and IPv6-wrapped private addresses global.
    """
    if isinstance(address, ipaddress.IPv6Address):
        wrapped: tuple[str, ipaddress.IPv4Address] | None = None
        if address.ipv4_mapped is not None:
            wrapped = ("IPv4-mapped", address.ipv4_mapped)
        elif address in _NAT64:
            wrapped = ("NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        elif address.sixtofour is not None:
            wrapped = ("6to4", address.sixtofour)
        elif address.teredo is not None:
            wrapped = ("Teredo", address.teredo[1])
        if wrapped is not None:
            inner = non_public_reason(wrapped[1])
            if inner is not None:
                return f"{wrapped[0]} address of {wrapped[1]}, {inner}"
            if wrapped[0] in ("IPv4-mapped", "NAT64"):
                return None
        blocked = _V6_BLOCKED
    else:
        blocked = _V4_BLOCKED
    for network, label in blocked:
        if address in network:
            return label
    if not address.is_global:
        return "not a global address"
    return None


_resolver: concurrent.futures.ThreadPoolExecutor | None = None
_resolver_lock = threading.Lock()


def _resolve(host: str, port: int, timeout: float) -> list[tuple[int, tuple]]:
    """``(family, sockaddr)`` of every TCP address of ``host``, waiting at most ``timeout`` s.

    A host that is an IP address literal is read in this thread (``AI_NUMERICHOST``: no
    lookup, nothing to wait for); a name is resolved in the resolver's threads, so that a slow
    DNS answer is cut at ``timeout``.

    :raise Unresolvable: no address, a resolver error, or no answer in time.
    """
    if _is_ip_literal(host):
        try:
            infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
        except (OSError, UnicodeError, ValueError) as exc:  # e.g. a zone no interface has
            raise _does_not_resolve(host, exc) from exc
        return _tcp_addresses(host, infos)
    global _resolver
    with _resolver_lock:
        if _resolver is None:
            _resolver = concurrent.futures.ThreadPoolExecutor(
                max_workers=8, thread_name_prefix="flagadmin-dns"
            )
    future = _resolver.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    try:
        infos = future.result(timeout=max(timeout, 0.001))
    except concurrent.futures.TimeoutError as exc:
        raise Unresolvable(f"resolving {host} took longer than {timeout:g} s") from exc
    except (OSError, UnicodeError, ValueError) as exc:
        raise _does_not_resolve(host, exc) from exc
    return _tcp_addresses(host, infos)


def _does_not_resolve(host: str, exc: BaseException) -> Unresolvable:
    """The :class:`Unresolvable` of a lookup of ``host`` that failed with ``exc``."""
    return Unresolvable(f"{host} does not resolve ({getattr(exc, 'strerror', None) or exc})")


def _is_ip_literal(host: str) -> bool:
    """True when ``host`` is an IPv4 or IPv6 address written out (the URL's brackets taken
    off already), not a name."""
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return True


def _tcp_addresses(host: str, infos: list) -> list[tuple[int, tuple]]:
    """The distinct IPv4 and IPv6 ``(family, sockaddr)`` of ``getaddrinfo``'s answer.

    :raise Unresolvable: there is none.
    """
    found: list[tuple[int, tuple]] = []
    for family, _, _, _, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6) and (family, sockaddr) not in found:
            found.append((family, sockaddr))
    if not found:
        raise Unresolvable(f"{host} has no IPv4 or IPv6 address")
    return found


@dataclass(frozen=True)
class AddressGuard:
    """Which hosts a webhook may reach: public addresses only, unless ``allow_private``
    (``FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE``) or the host is in ``allowed_hosts``
    (``FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS``, exact names, lower case)."""

    allow_private: bool = False
    allowed_hosts: frozenset[str] = frozenset()

    def exempt(self, host: str) -> bool:
        """True when ``host`` may resolve to any address."""
        return self.allow_private or host.lower().strip("[]") in self.allowed_hosts

    def addresses(self, host: str, port: int, timeout: float) -> list[tuple[int, tuple]]:
        """Resolve ``host`` and return its addresses (``(family, sockaddr)``), every one of them
        checked: the caller connects to one of these, never to the name again.

        :raise Unresolvable: the name does not resolve in ``timeout`` s.
        :raise Blocked: an address is not public and the host is not exempt.
        """
        found = _resolve(host, port, timeout)
        if not self.exempt(host):
            for _, sockaddr in found:
                address = ipaddress.ip_address(sockaddr[0].split("%")[0])
                reason = non_public_reason(address)
                if reason is not None:
                    raise Blocked(
                        f"{host} resolves to {address}, which is not a public address: {reason}. "
                        "Set FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE=true or list the host in "
                        "FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS to allow it."
                    )
        return found

    def check_url(self, url: str, timeout: float = 5.0) -> None:
        """Check a URL when a configuration is saved: exempt hosts pass without a lookup;
        others must resolve, to public addresses only.

        :raise Unresolvable: the host does not resolve.
        :raise Blocked: it resolves to an address that is not public.
        """
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        if self.exempt(host):
            return
        self.addresses(host, parts.port or (443 if parts.scheme == "https" else 80), timeout)


# --- the body ---------------------------------------------------------------------------------

#: mustache.js's escaping of ``{{x}}`` (HTML, plus ``/``, backtick and ``=``).
_MUSTACHE_JS_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "'": "&#39;",
        "/": "&#x2F;",
        "`": "&#x60;",
        "=": "&#x3D;",
    }
)
#: Section iterations one rendering may make (nested sections over long lists multiply).
MAX_SECTION_ITERATIONS = 100_000
#: The largest body a template may render (bytes of UTF-8, roughly).
MAX_RENDERED_BODY = 1024 * 1024


class TemplateError(Exception):
    """A ``bodyTemplate`` that cannot be rendered: a syntax error, a partial, or too much work."""


def _js_text(value: Any) -> str:
    """A value as mustache.js writes it: ``true``/``false``, integers without ``.0``, null as
    nothing, arrays joined with commas."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return ",".join(_js_text(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


class _NoPartials:
    """Partials (``{{> name}}``) would read templates from files: there are none."""

    def get(self, name: str) -> str:
        raise TemplateError(f"the template uses the partial {{{{> {name}}}}}; partials are not supported")


class _BudgetedRenderer(pystache.Renderer):
    """pystache's renderer, with bounds on the work one rendering may do: at most
    :data:`MAX_SECTION_ITERATIONS` section iterations and :data:`MAX_RENDERED_BODY` characters
    written, so that nested sections over long lists cannot run away."""

    def __init__(self) -> None:
        super().__init__(
            escape=lambda text: text.translate(_MUSTACHE_JS_ESCAPES),
            partials=_NoPartials(),
            missing_tags="ignore",
            search_dirs=[],
        )
        self.str_coerce = _js_text
        self.iterations = 0
        self.written = 0

    def _iterate(self, count: int) -> None:
        self.iterations += count
        if self.iterations > MAX_SECTION_ITERATIONS:
            raise TemplateError(
                "rendering the template for this event takes too much work (nested sections over "
                "long lists?); simplify it"
            )

    def _write(self, count: int) -> None:
        self.written += count
        if self.written > MAX_RENDERED_BODY:
            raise TemplateError(f"the rendered body is longer than {MAX_RENDERED_BODY} characters")

    def _make_render_engine(self):
        engine = super()._make_render_engine()
        fetch_section_data, escape, literal = engine.fetch_section_data, engine.escape, engine.literal

        def counted_section_data(context: Any, name: str) -> Any:
            data = fetch_section_data(context, name)
            self._iterate(1 + len(data))
            return data

        def counted(write: Callable[[Any], str]) -> Callable[[Any], str]:
            def run(value: Any) -> str:
                text = write(value)
                self._write(len(text))
                return text

            return run

        engine.fetch_section_data = counted_section_data
        engine.escape = counted(escape)
        engine.literal = counted(literal)
        return engine


def render_template(template: str, event: dict[str, Any]) -> str:
    """Render ``bodyTemplate`` for ``event`` (spec 2.3 shape) with the context ``event`` and
    ``eventJson`` (the event's JSON as a JSON string literal, as the reference server gives it).

    :raise TemplateError: a syntax error, a partial, or a rendering over the work budget or
        :data:`MAX_RENDERED_BODY`.
    """
    context = {"event": event, "eventJson": orjson.dumps(orjson.dumps(event).decode()).decode()}
    renderer = _BudgetedRenderer()
    try:
        body = renderer.render(template, context)
    except TemplateError:
        raise
    except Exception as exc:  # pystache raises many kinds on malformed templates
        raise TemplateError(f"the template is not valid Mustache: {exc or type(exc).__name__}") from exc
    if len(body) > MAX_RENDERED_BODY:
        raise TemplateError(f"the rendered body is longer than {MAX_RENDERED_BODY} characters")
    return body


#: An event to try templates on when they are saved.
SAMPLE_EVENT: dict[str, Any] = {
    "id": 1,
    "createdAt": "2026-01-01T00:00:00.000Z",
    "type": "feature-created",
    "createdBy": "admin",
    "createdByUserId": 1,
    "environment": "production",
    "project": "default",
    "featureName": "sample-flag",
    "data": {
        "name": "sample-flag",
        "type": "release",
        "enabled": True,
        "description": "A sample flag",
        "strategies": [{"name": "default", "parameters": {}}],
    },
    "preData": None,
    "tags": [{"type": "simple", "value": "sample"}],
}


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
        text_value = value if isinstance(value, str) else _js_text(value)
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
    content_type = parameters.get("contentType") or DEFAULT_CONTENT_TYPE
    headers = {"Content-Type": content_type, "User-Agent": f"flagadmin/{__version__}"}
    if parameters.get("authorization"):
        headers["Authorization"] = parameters["authorization"]
    extra, problems = custom_headers(parameters.get("customHeaders"))
    headers.update(extra)
    headers["webhook-id"] = webhook_id
    headers["webhook-timestamp"] = str(timestamp)
    if parameters.get("secret"):
        headers["webhook-signature"] = sign(parameters["secret"], webhook_id, timestamp, body)
    return Prepared(parameters["url"], content_type, headers, body, logged, problems)


# --- one attempt -------------------------------------------------------------------------------

#: Bytes of a response body read (and dropped): enough to end a small answer cleanly.
MAX_RESPONSE_READ = 64 * 1024
#: Longest ``Retry-After`` honoured, in seconds.
MAX_RETRY_AFTER_S = 86400.0


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to.

    ``status``: the HTTP status of a complete answer within the deadline (else None).
    ``error``: why there is none (``"timed out after 10 s"``, ``"connection refused"``...).
    ``blocked``: the host resolved to a non-public address (nothing was sent).
    ``retry_after``: seconds from the answer's ``Retry-After``; ``location``: its
    ``Location`` (redirects are not followed); ``duration_ms``: how long it took.
    """

    status: int | None
    error: str | None = None
    blocked: bool = False
    retry_after: float | None = None
    location: str | None = None
    duration_ms: int = 0


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to checked addresses of a host: ``connect()`` opens the socket to
    one of ``addresses`` (never resolving the name again), TLS verifies and names ``host``."""

    def __init__(
        self,
        host: str,
        port: int,
        addresses: list[tuple[int, tuple]],
        deadline: float,
        tls: ssl.SSLContext | None,
        on_socket: Callable[[socket.socket], None],
    ):
        super().__init__(host, port, timeout=max(deadline - time.monotonic(), 0.001))
        self._addresses = addresses
        self._deadline = deadline
        self._tls = tls
        self._on_socket = on_socket

    def connect(self) -> None:
        error: OSError | None = None
        for family, sockaddr in self._addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            self._on_socket(sock)
            sock.settimeout(max(self._deadline - time.monotonic(), 0.001))
            try:
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self.host.strip("[]"))
                self._on_socket(sock)
            self.sock = sock
            return
        raise error or OSError("no address to connect to")


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The system's trusted CAs, certificate and host name checks on (built once: loading the
    CAs costs milliseconds)."""
    return ssl.create_default_context()


def _retry_after(value: str | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` value asks to wait (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        from email.utils import parsedate_to_datetime

        moment = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(max(moment - now, 0.0), MAX_RETRY_AFTER_S)


def _transport_error(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return "connection reset by the receiver"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the receiver closed the connection without answering"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {exc.verify_message or exc.reason}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, http.client.HTTPException):
        return f"the answer is not valid HTTP ({type(exc).__name__})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


class _Watchdog:
    """One thread that calls each armed callback at its deadline (unless disarmed first): the
    hard deadline of every attempt, without a timer thread per attempt."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._deadlines: list[tuple[float, int]] = []
        self._live: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, callback: Callable[[], None]) -> int:
        """Call ``callback()`` in ``seconds`` s; return a handle for :meth:`disarm`."""
        handle = next(self._ids)
        with self._lock:
            self._live[handle] = callback
            heapq.heappush(self._deadlines, (time.monotonic() + seconds, handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="flagadmin-watchdog", daemon=True)
                self._thread.start()
            self._lock.notify()
        return handle

    def disarm(self, handle: int) -> None:
        """Do not call the callback of ``handle`` (if it has not been called yet)."""
        with self._lock:
            self._live.pop(handle, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                while True:
                    while self._deadlines and self._deadlines[0][1] not in self._live:
                        heapq.heappop(self._deadlines)  # disarmed
                    if not self._deadlines:
                        self._lock.wait()
                        continue
                    wait = self._deadlines[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    self._lock.wait(wait)
                _, handle = heapq.heappop(self._deadlines)
                callback = self._live.pop(handle)
            callback()


_watchdog = _Watchdog()


def send(prepared: Prepared, *, timeout: float, guard: AddressGuard) -> Outcome:
    """POST ``prepared`` once, within ``timeout`` seconds all told (resolving, connecting, TLS,
    sending, and reading the answer): a watchdog closes the socket at the deadline, and an
    attempt it cut counts as timed out even if a status line had been read, so a receiver
    that trickles bytes cannot stretch it. Redirects are not followed; at most
    :data:`MAX_RESPONSE_READ` bytes of the answer are read. Never raises for network trouble.
    """
    started = time.monotonic()
    deadline = started + timeout
    parts = urllib.parse.urlsplit(prepared.url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    fired = threading.Event()
    sockets: list[socket.socket] = []
    lock = threading.Lock()

    def on_socket(sock: socket.socket) -> None:
        with lock:
            sockets.append(sock)
            if fired.is_set():
                _shut(sock)

    def cut() -> None:
        with lock:
            fired.set()
            for sock in sockets:
                _shut(sock)

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    timed_out = f"timed out after {timeout:g} s"
    watch = _watchdog.arm(timeout, cut)
    connection: _PinnedConnection | None = None
    try:
        try:
            addresses = guard.addresses(host, port, deadline - time.monotonic())
        except Blocked as exc:
            return Outcome(None, f"blocked address: {exc}", blocked=True, duration_ms=elapsed_ms())
        except Unresolvable as exc:
            return Outcome(None, timed_out if fired.is_set() else str(exc), duration_ms=elapsed_ms())
        tls = _tls_context() if parts.scheme == "https" else None
        connection = _PinnedConnection(host, port, addresses, deadline, tls, on_socket)
        connection.request("POST", target, body=prepared.body, headers=prepared.headers)
        response = connection.getresponse()
        response.read(MAX_RESPONSE_READ)
        status = response.status
        retry_after = _retry_after(response.getheader("Retry-After"), time.time())
        location = response.getheader("Location")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if fired.is_set() or isinstance(exc, TimeoutError):
            return Outcome(None, timed_out, duration_ms=elapsed_ms())
        return Outcome(None, _transport_error(exc), duration_ms=elapsed_ms())
    finally:
        _watchdog.disarm(watch)
        if connection is not None:
            connection.close()
    if fired.is_set():
        return Outcome(None, timed_out, duration_ms=elapsed_ms())
    return Outcome(status, retry_after=retry_after, location=location, duration_ms=elapsed_ms())


def _shut(sock: socket.socket) -> None:
    """Wake whatever blocks on ``sock`` (the owner closes it). The plain socket's shutdown is
    called even on a TLS socket, whose own would tear its TLS state down under the reader."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
