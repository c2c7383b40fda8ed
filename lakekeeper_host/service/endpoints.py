"""Which storage endpoints a warehouse may make the server connect to: the operator's endpoint policy.

Whoever creates a warehouse (a project ``data_admin``; anyone on an allow-all server) chooses URLs the
server then connects to: the S3 ``endpoint`` and ``sts-endpoint``, the ADLS ``host``, ``endpoint`` and
``authority-host``, a GCS service account key's ``token_uri``. Unchecked, that lets a tenant make the
catalog probe the operator's network (server-side request forgery). So every storage lists the URLs
it connects to (``Storage.endpoints()``) and the host checks them here, before the storage does any IO
(``AppState.storage_for`` and the validation of a new or changed profile):

- ``LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS`` (default: unset, every endpoint may be used): a list of
  ``host``, ``*.domain``, ``host:port``, IP address, ``ip:port``, ``[ipv6]:port`` and CIDR patterns.
  When set, an endpoint is refused unless its host name matches a name pattern, or every address it
  resolves to lies in an IP/CIDR pattern (a port in the pattern must match too).
- ``LAKEKEEPER__BLOCK_LINK_LOCAL_STORAGE_ENDPOINTS`` (default ``true``): endpoints that are, or resolve
  to, link-local addresses (``169.254.0.0/16``, ``fe80::/10``) or a cloud metadata service
  (``fd00:ec2::254``, ``metadata.google.internal``, ...) are refused whatever the allow-list says.

A host name is resolved and every address it has is checked, in every spelling a resolver accepts
(IPv4-mapped IPv6, decimal ``2852039166``, octal ``0251.0376.0251.0376``, hex, short forms). What the
check cannot see: a name whose DNS answer changes between the check and the connection (DNS
rebinding); use IP/CIDR patterns, or an egress firewall, where that matters.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from urllib.parse import urlsplit

from attrs import frozen

from lakekeeper_host.config import ConfigError, HostConfig
from lakekeeper_host.errors import CatalogError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# (host name, port) -> every address the name resolves to (empty when it does not resolve)
Resolver = Callable[[str, int], Awaitable[Sequence[IPAddress]]]

ALLOW_SETTING = "LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS"
BLOCK_SETTING = "LAKEKEEPER__BLOCK_LINK_LOCAL_STORAGE_ENDPOINTS"
REFUSED_TYPE = "StorageEndpointNotAllowed"

# link-local ranges and the metadata services clouds put outside them
BLOCKED_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "169.254.0.0/16",  # IPv4 link-local: AWS, Azure, GCP, OCI, OpenStack metadata at 169.254.169.254
        "fe80::/10",  # IPv6 link-local
        "fd00:ec2::254/128",  # AWS instance metadata over IPv6
        "fd00:ec2::23/128",  # AWS DNS resolver over IPv6
        "fd00:ec2::123/128",  # AWS time sync over IPv6
        "100.100.100.200/32",  # Alibaba Cloud metadata
        "192.0.0.192/32",  # Oracle Cloud metadata (legacy address)
    )
)
# names of metadata services (and their subdomains); their addresses are blocked too, this also
# refuses them when the server cannot resolve them itself
METADATA_HOSTS = (
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
)
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")
DEFAULT_PORTS = {"http": 80, "https": 443}
# what may stand in a host name after IDNA encoding: letters, digits, '-', '.', '_' (some private DNS)
_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")
# what inet_aton may read as an IPv4 address (decimal, octal, hex, 1-4 parts)
_NUMERIC_V4 = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$")


@frozen
class StorageEndpoint:
    """One URL a storage connects to, and the field (or setting) it comes from, e.g.
    ``StorageEndpoint("storage-profile.endpoint", "http://minio.internal:9000/")``."""

    field: str
    url: str


@frozen
class EndpointTarget:
    """The host an endpoint URL connects to: a normalised name, or an IP address."""

    host: str  # lower-case ASCII name, or the address as text
    port: int
    address: IPAddress | None = None

    @property
    def display(self) -> str:
        host = f"[{self.host}]" if isinstance(self.address, ipaddress.IPv6Address) else self.host
        return f"{host}:{self.port}"


class EndpointRefused(ValueError):
    """An endpoint the policy refuses; the message says why (without any resolved address)."""


def parse_ip(host: str) -> IPAddress | None:
    """``host`` as an IP address in any spelling a resolver accepts, else None.

    IPv4 goes through ``inet_aton`` (so ``2852039166``, ``0251.0376.0251.0376``, ``0xa9fea9fe`` and
    ``169.254.43518`` are all 169.254.169.254); IPv6 through ``ipaddress``.
    """
    host = host.strip("[]").lower()
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    if _NUMERIC_V4.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def embedded_addresses(address: IPAddress) -> list[IPAddress]:
    """``address`` and the IPv4 addresses an IPv6 address carries (mapped, compatible, 6to4, NAT64, Teredo)."""
    found: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        packed = int(address)
        if address.ipv4_mapped is not None:
            found.append(address.ipv4_mapped)
        elif packed >> 32 == 0 and packed > 1:  # IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks)
            found.append(ipaddress.IPv4Address(packed))
        if address.sixtofour is not None:
            found.append(address.sixtofour)
        if address in NAT64_PREFIX:
            found.append(ipaddress.IPv4Address(packed & 0xFFFFFFFF))
        if address.teredo is not None:
            found.extend(address.teredo)
    return found


def is_blocked_address(address: IPAddress) -> bool:
    """A link-local or metadata address, in any IPv6 form that carries one."""
    return any(a in net for a in embedded_addresses(address) for net in BLOCKED_NETWORKS if a.version == net.version)


def is_metadata_host(name: str) -> bool:
    return any(name == host or name.endswith("." + host) for host in METADATA_HOSTS)


def parse_endpoint(url: str) -> EndpointTarget:
    """The target of an endpoint URL; refuses URLs whose host different parsers could read differently."""
    text = url.strip()
    if any(ch in text for ch in "\\\t\r\n ") or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise EndpointRefused("must be a plain http or https URL")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.netloc:
        raise EndpointRefused("must be an http or https URL")
    if "@" in parts.netloc:
        raise EndpointRefused("must not contain user information ('user@')")
    raw_host = parts.hostname or ""
    if "%" in raw_host:
        raise EndpointRefused("must not contain '%' in the host (percent-encoding or an IPv6 zone)")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise EndpointRefused("has an invalid port") from None
    address = parse_ip(raw_host)
    if address is not None:
        return EndpointTarget(host=str(address), port=port, address=address)
    try:
        name = raw_host.encode("idna").decode("ascii").lower().rstrip(".")
    except UnicodeError:
        raise EndpointRefused("has a host name that is not valid") from None
    address = parse_ip(name)  # full-width digits and the like become an address after IDNA mapping
    if address is not None:
        return EndpointTarget(host=str(address), port=port, address=address)
    if not _NAME.match(name):
        raise EndpointRefused("has a host name that is not valid")
    return EndpointTarget(host=name, port=port)


@frozen
class EndpointPattern:
    """One entry of ``LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS``.

    ``minio.internal`` (any port), ``*.amazonaws.com`` (any subdomain, not the domain itself),
    ``minio.internal:9000``, ``10.0.0.5``, ``10.0.0.5:9000``, ``[fd00::5]:9000``, ``10.0.0.0/8``.
    """

    text: str
    name: str | None = None  # lower-case; "*.domain" for subdomains
    network: IPNetwork | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> EndpointPattern:
        value = text.strip().lower()
        if not value:
            raise ValueError("empty storage endpoint pattern")
        if "/" in value:
            try:
                return cls(text=value, network=ipaddress.ip_network(value, strict=False))
            except ValueError:
                raise ValueError(f"{text!r} is not a valid CIDR network") from None
        host, port = value, None
        if value.startswith("["):
            host, _, rest = value[1:].partition("]")
            if rest:
                port = _port(rest.removeprefix(":"), text)
        elif value.count(":") == 1:
            host, _, port_text = value.partition(":")
            port = _port(port_text, text)
        address = parse_ip(host)
        if address is not None:
            return cls(text=value, network=ipaddress.ip_network(address), port=port)
        wildcard = host.startswith("*.")
        name = host.removeprefix("*.")
        if not _NAME.match(name):
            raise ValueError(f"{text!r} is not a host name, host:port, IP address or CIDR network")
        return cls(text=value, name=("*." if wildcard else "") + name, port=port)

    def matches_name(self, target: EndpointTarget) -> bool:
        if self.name is None or target.address is not None or self.port not in (None, target.port):
            return False
        if self.name.startswith("*."):
            return target.host.endswith(self.name[1:])
        return target.host == self.name

    def contains(self, address: IPAddress, port: int) -> bool:
        if self.network is None or self.port not in (None, port):
            return False
        return any(a in self.network for a in embedded_addresses(address) if a.version == self.network.version)


def _port(text: str, pattern: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{pattern!r} has an invalid port")
    return int(text)


@frozen
class EndpointPolicy:
    """The operator's rules for storage endpoints (see the module docstring)."""

    allowed: tuple[EndpointPattern, ...] = ()
    block_link_local: bool = True

    @classmethod
    def from_patterns(cls, patterns: Iterable[str], *, block_link_local: bool = True) -> EndpointPolicy:
        return cls(allowed=tuple(EndpointPattern.parse(p) for p in patterns), block_link_local=block_link_local)

    @classmethod
    def from_settings(cls, host: HostConfig) -> EndpointPolicy:
        try:
            return cls.from_patterns(
                host.allowed_storage_endpoints, block_link_local=host.block_link_local_storage_endpoints
            )
        except ValueError as exc:
            raise ConfigError(f"{ALLOW_SETTING}: {exc}") from None

    @property
    def needs_addresses(self) -> bool:
        """Whether deciding about a host name needs its addresses."""
        return self.block_link_local or any(p.network is not None for p in self.allowed)

    def refusal(self, target: EndpointTarget, addresses: Sequence[IPAddress]) -> str | None:
        """Why ``target`` (which resolved to ``addresses``) is refused, or None. The decision function."""
        if target.address is not None:
            addresses = [target.address]
        if self.block_link_local:
            if target.address is None and is_metadata_host(target.host):
                return f"is a cloud metadata service ({BLOCK_SETTING})"
            if any(is_blocked_address(a) for a in addresses):
                what = "is" if target.address is not None else "resolves to"
                return f"{what} a link-local or cloud metadata address ({BLOCK_SETTING})"
        if not self.allowed:
            return None
        if any(p.matches_name(target) for p in self.allowed):
            return None
        if addresses and all(any(p.contains(a, target.port) for p in self.allowed) for a in addresses):
            return None
        return f"is not an allowed storage endpoint ({ALLOW_SETTING})"


async def resolve_host(host: str, port: int) -> Sequence[IPAddress]:
    """Every address ``host`` resolves to (the system resolver); empty when it does not resolve."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=10)
    except (OSError, UnicodeError, TimeoutError):
        return []
    found: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = parse_ip(str(sockaddr[0]).split("%", 1)[0])
        if address is not None and address not in found:
            found.append(address)
    return found


def endpoint_refused(endpoint: StorageEndpoint, reason: str) -> CatalogError:
    return CatalogError(400, REFUSED_TYPE, f"{endpoint.field} {endpoint.url!r} {reason}")


async def check_endpoints(
    endpoints: Iterable[StorageEndpoint], policy: EndpointPolicy, resolve: Resolver = resolve_host
) -> None:
    """Raise a 400 ``StorageEndpointNotAllowed`` for the first endpoint ``policy`` refuses.

    Runs before the storage connects anywhere. A name that does not resolve is not refused for
    that (the connection will fail on its own), unless only IP/CIDR patterns could allow it.
    """
    for endpoint in endpoints:
        try:
            target = parse_endpoint(endpoint.url)
        except EndpointRefused as exc:
            raise endpoint_refused(endpoint, str(exc)) from None
        addresses: Sequence[IPAddress] = ()
        if target.address is None and policy.needs_addresses:
            addresses = await resolve(target.host, target.port)
        reason = policy.refusal(target, addresses)
        if reason is not None:
            raise endpoint_refused(endpoint, reason)
