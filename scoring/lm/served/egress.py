"""Where a served client may connect: the egress policy of endpoints the site does not
run (a researcher's own), and an httpx transport that enforces it at connect time.

A researcher's endpoint names a host the workers connect to, from inside the site's
network. :class:`EgressPolicy` resolves the host and refuses every address that is not
on the public internet: loopback, private, link-local, multicast, reserved, unspecified
and shared (carrier-grade NAT) ranges, IPv4 and IPv6 alike, with an IPv4 address
hidden in an IPv6 one (IPv4-mapped ``::ffff:127.0.0.1``, 6to4, Teredo, NAT64) judged as
the IPv4 address it carries. The check is on the resolved addresses, so every spelling
of a host (``localhost``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``) is
judged as the address it reaches. An operator allows networks
(``allowed_networks``) or host names (``allowed_hosts``, taken as they are, whatever
they resolve to) that researchers may reach anyway.

:class:`PinnedTransport` resolves a request's host once per client, checks the
addresses, and connects to the address it checked (the URL's host is replaced by it,
while the ``Host`` header and the TLS server name keep the name): a DNS answer that
changes between the check and the connection (rebinding) is never followed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
NAT64 = ipaddress.ip_network("64:ff9b::/96")
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not the internet


class EgressRefused(Exception):
    """The policy refuses the host; the message says why (never an address)."""


def _embedded(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo, NAT64), else ip."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
        if ip in NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def forbidden_kind(ip: IPAddress) -> str | None:
    """What kind of non-public address ``ip`` is ("loopback", "private", …), or None
    when it is a public (globally routable, unicast) address."""
    for address in dict.fromkeys((_embedded(ip), ip)):  # the carried IPv4 address first
        checks = (
            ("unspecified", address.is_unspecified),
            ("loopback", address.is_loopback),
            ("link-local", address.is_link_local),
            ("multicast", address.is_multicast),
            ("private", address.is_private),
            (
                "shared (carrier-grade NAT)",
                isinstance(address, ipaddress.IPv4Address) and address in SHARED,
            ),
            ("reserved", address.is_reserved),
            ("not globally routable", not address.is_global),
        )
        for kind, hit in checks:
            if hit:
                return kind
    return None


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (the system resolver, as a connection would)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class EgressPolicy:
    """Public addresses only, but for ``allowed_networks`` and ``allowed_hosts``."""

    allowed_networks: tuple[IPNetwork, ...] = ()
    allowed_hosts: frozenset[str] = frozenset()
    resolver: Callable[[str, int], list[str]] = field(default=resolve, repr=False)

    def host_allowed(self, host: str) -> bool:
        return host.strip("[]").lower().rstrip(".") in self.allowed_hosts

    def refusal(self, address: str) -> str | None:
        """Why the policy refuses ``address`` (its kind), or None."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if any(
            a in net
            for a in (ip, _embedded(ip))
            for net in self.allowed_networks
            if a.version == net.version
        ):
            return None
        return forbidden_kind(ip)

    def pick(self, host: str, addresses: Sequence[str]) -> str:
        """The address to connect to: the first one, once every one is allowed."""
        if not addresses:
            raise EgressRefused(f"the host {host!r} resolves to no address")
        if self.host_allowed(host):
            return addresses[0]
        for address in addresses:
            kind = self.refusal(address)
            if kind:
                raise EgressRefused(
                    f"the host {host!r} resolves to a {kind} address, which endpoints "
                    "added by researchers may not reach (an operator may allow it: "
                    "ENDPOINT_ALLOWED_NETWORKS or ENDPOINT_ALLOWED_HOSTS)"
                )
        return addresses[0]

    def check(self, host: str, port: int) -> str:
        """Resolve ``host`` and :meth:`pick` (save time); an allowed host is not resolved."""
        if self.host_allowed(host):
            return host
        try:
            addresses = self.resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise EgressRefused(f"the host {host!r} does not resolve") from exc
        return self.pick(host, addresses)


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that connects only where ``policy`` allows, to the address
    it checked: each host is resolved once (per transport, so per batch) and pinned."""

    def __init__(self, policy: EgressPolicy, inner: httpx.AsyncBaseTransport) -> None:
        self.policy = policy
        self.inner = inner
        self._pinned: dict[tuple[str, int], str] = {}
        self._lock = asyncio.Lock()  # concurrent requests wait for the one resolution

    async def _address(self, host: str, port: int) -> str:
        key = (host, port)
        async with self._lock:
            if key not in self._pinned:
                loop = asyncio.get_running_loop()
                try:
                    addresses = await loop.run_in_executor(None, self.policy.resolver, host, port)
                except (OSError, UnicodeError) as exc:
                    raise EgressRefused(f"the host {host!r} does not resolve") from exc
                self._pinned[key] = self.policy.pick(host, addresses)
            return self._pinned[key]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        address = await self._address(url.host, port)
        if address != url.host:
            extensions: dict[str, Any] = dict(request.extensions)
            if url.scheme == "https":
                extensions["sni_hostname"] = url.host  # the certificate names the host
            request.url = url.copy_with(host=address)  # the Host header keeps the name
            request.extensions = extensions
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
