"""The address guard: a webhook reaches public addresses only, and connects to an address that
was checked.

It holds :class:`Blocked` and :class:`Unresolvable` (why a URL may not be reached),
:func:`non_public_reason` (which addresses are not public unicast), the resolving of a host
with a deadline, and :class:`AddressGuard` (the instance's choice: public only, all, or an
allow list). :func:`flagadmin.integrations.sending.send` connects only to the addresses
:meth:`AddressGuard.addresses` returns, never to the name again, so a name that resolves
differently a moment later (DNS rebinding) cannot move a request; the configuration API
checks a URL when it is saved (:meth:`AddressGuard.check_url`).

The ranges refused are those of IANA's IPv4 and IPv6 Special-Purpose Address Registries
(RFC 6890) that are not globally reachable: RFC 1122's "this network" and loopback, RFC 1918
private networks, RFC 6598 shared address space, RFC 3927 and RFC 4291 link-local, RFC 5737,
RFC 3849 and RFC 9637 documentation, RFC 2544 benchmarking, RFC 4193 unique local, multicast
and reserved space; IPv6 addresses that wrap an IPv4 address (IPv4-mapped, RFC 6052 NAT64,
RFC 3056 6to4, RFC 4380 Teredo) are judged by that address. Spec 2.2 leaves the integration
configuration's fields to the reference server; this guard is flagadmin's own.

Process-wide: the resolver's thread pool (``flagadmin-dns``, up to 8 threads, started at the
first name looked up). A lookup blocks in ``getaddrinfo`` and cannot be cut, so it runs in
one of these threads and the attempt waits for it only until its deadline; a lookup that
outlives its attempt finishes in the pool, harmlessly. It holds no app's data (a host name in,
addresses out), so every app and worker of the process shares it rather than each starting
threads of its own.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
import threading
import urllib.parse
from dataclasses import dataclass


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
