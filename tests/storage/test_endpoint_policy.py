"""The storage endpoint policy's decision function (issue 37): the operator's allow-list and the
link-local / metadata block, in every spelling of an address, and the settings that configure them.

Addresses are decided here, never connected to: names go through a stub resolver.
"""

from __future__ import annotations

import ipaddress

import pytest

from lakekeeper_host.config import ConfigError, load_settings
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.endpoints import (
    EndpointPattern,
    EndpointPolicy,
    StorageEndpoint,
    check_endpoints,
    parse_endpoint,
    parse_ip,
    resolve_host,
)

DEFAULT = EndpointPolicy()


def stub(mapping: dict[str, list[str]]):
    calls: list[tuple[str, int]] = []

    async def resolve(host: str, port: int):
        calls.append((host, port))
        return [ipaddress.ip_address(a) for a in mapping.get(host, [])]

    resolve.calls = calls
    return resolve


async def refusal(url: str, policy: EndpointPolicy = DEFAULT, names: dict[str, list[str]] | None = None) -> str | None:
    try:
        await check_endpoints([StorageEndpoint("storage-profile.endpoint", url)], policy, stub(names or {}))
    except CatalogError as exc:
        assert exc.code == 400 and exc.type == "StorageEndpointNotAllowed"
        assert "storage-profile.endpoint" in exc.message
        return exc.message
    return None


# ---------------------------------------------------------------- link-local and metadata, by default

METADATA_SPELLINGS = [
    "http://169.254.169.254/",
    "http://169.254.169.254:80/latest/meta-data/",
    "http://2852039166/",  # decimal
    "http://0251.0376.0251.0376/",  # octal
    "http://0xa9fea9fe/",  # hex
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://169.254.43518/",  # short form
    "http://169.16689662/",
    "http://[::ffff:169.254.169.254]/",  # IPv4-mapped IPv6
    "http://[::ffff:a9fe:a9fe]/",
    "http://[0:0:0:0:0:ffff:169.254.169.254]/",
    "http://[::169.254.169.254]/",  # IPv4-compatible
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64
    "http://[2002:a9fe:a9fe::1]/",  # 6to4
    "http://[fe80::1]/",  # IPv6 link-local
    "http://[fd00:ec2::254]/",  # AWS metadata over IPv6
    "http://100.100.100.200/",  # Alibaba Cloud metadata
    "http://１６９.２５４.１６９.２５４/",  # full-width digits (IDNA maps them)
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
    "http://metadata/",
    "http://instance-data/",
    "http://x.metadata.google.internal/",
]


@pytest.mark.parametrize("url", METADATA_SPELLINGS)
async def test_link_local_and_metadata_addresses_are_refused_by_default(url):
    message = await refusal(url)
    assert message is not None and "metadata" in message
    assert "LAKEKEEPER__BLOCK_LINK_LOCAL_STORAGE_ENDPOINTS" in message


@pytest.mark.parametrize(
    "addresses",
    [
        ["169.254.169.254"],
        ["::ffff:169.254.169.254"],
        ["fd00:ec2::254"],
        ["fe80::1ff:fe23:4567:890a"],
        ["203.0.113.7", "169.254.1.1"],  # one bad address among good ones is enough
        ["203.0.113.7", "2001:db8::1", "fe80::1"],
    ],
)
async def test_a_name_resolving_to_a_link_local_address_is_refused(addresses):
    message = await refusal("https://storage.attacker.example/", names={"storage.attacker.example": addresses})
    assert message is not None and "resolves to a link-local or cloud metadata address" in message
    assert not any(address in message for address in addresses)  # the resolution is not disclosed


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9000/",  # loopback: an S3-compatible store next to the catalog
        "http://10.1.2.3:9000/",
        "http://[fd00::5]:9000/",  # ULA, not the AWS metadata address
        "http://169.253.255.255/",
        "http://169.255.0.1/",
        "https://s3.eu-central-1.amazonaws.com/",
    ],
)
async def test_private_and_public_endpoints_pass_by_default(url):
    assert await refusal(url, names={"s3.eu-central-1.amazonaws.com": ["52.219.170.1"]}) is None


async def test_the_block_can_be_switched_off():
    policy = EndpointPolicy(block_link_local=False)
    assert await refusal("http://169.254.169.254/", policy) is None
    assert await refusal("http://metadata.google.internal/", policy) is None


# ---------------------------------------------------------------- URLs different parsers read differently


@pytest.mark.parametrize(
    "url,words",
    [
        ("http://user@10.0.0.1/", "user information"),
        ("http://allowed.example@169.254.169.254/", "user information"),
        ("http://allowed.example\\@169.254.169.254/", "plain http or https URL"),
        ("http://169%2e254%2e169%2e254/", "'%'"),
        ("http://[fe80::1%25eth0]/", "'%'"),
        ("ftp://10.0.0.1/", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("http://10.0.0.1:99999/", "invalid port"),
        ("http://exa mple.com/", "plain http or https URL"),
        ("http://bad_host!.example/", "not valid"),
    ],
)
async def test_urls_that_parsers_could_read_differently_are_refused(url, words):
    message = await refusal(url, EndpointPolicy(block_link_local=False))
    assert message is not None and words in message, message


def test_parse_endpoint_normalises_the_host():
    assert parse_endpoint("HTTPS://Storage.Example.COM./x").host == "storage.example.com"
    assert parse_endpoint("https://storage.example.com").port == 443
    assert parse_endpoint("http://storage.example.com").port == 80
    target = parse_endpoint("http://[::ffff:10.0.0.1]:9000")
    assert target.address == ipaddress.ip_address("::ffff:10.0.0.1") and target.port == 9000
    assert parse_ip("999.1.1.1") is None and parse_ip("1.2.3.4.5") is None and parse_ip("abc") is None


# ---------------------------------------------------------------- the allow-list


ALLOW = EndpointPolicy.from_patterns(
    ["minio.internal:9000", "*.amazonaws.com", "10.20.0.0/16", "192.0.2.7", "[2001:db8::7]:8333", "seaweed.local"]
)


@pytest.mark.parametrize(
    "url,names",
    [
        ("http://minio.internal:9000/", {}),
        ("https://s3.eu-central-1.amazonaws.com/", {}),
        ("https://bucket.s3.eu-central-1.amazonaws.com/", {}),
        ("http://10.20.3.4:9000/", {}),
        ("http://[::ffff:10.20.3.4]:9000/", {}),  # the mapped form of an allowed address
        ("http://192.0.2.7:1234/", {}),
        ("http://[2001:db8::7]:8333/", {}),
        ("http://seaweed.local:8333/", {}),
        ("http://seaweed.local/", {}),
        ("http://store.corp:9000/", {"store.corp": ["10.20.9.9"]}),  # resolves inside an allowed network
        ("http://store.corp:9000/", {"store.corp": ["10.20.9.9", "10.20.9.10"]}),
    ],
)
async def test_the_allow_list_admits_its_endpoints(url, names):
    assert await refusal(url, ALLOW, names) is None


@pytest.mark.parametrize(
    "url,names",
    [
        ("http://minio.internal:9001/", {}),  # another port
        ("http://minio.internal.evil.example:9000/", {}),
        ("https://amazonaws.com/", {}),  # *.domain is for subdomains
        ("https://amazonaws.com.evil.example/", {}),
        ("http://127.0.0.1:9000/", {}),
        ("http://10.21.0.1/", {}),
        ("http://192.0.2.8/", {}),
        ("http://[2001:db8::7]:8334/", {}),
        ("http://store.corp:9000/", {"store.corp": ["10.20.9.9", "10.99.0.1"]}),  # one address outside
        ("http://store.corp:9000/", {}),  # does not resolve: nothing shows it lies inside
    ],
)
async def test_the_allow_list_refuses_everything_else(url, names):
    message = await refusal(url, ALLOW, names)
    assert message is not None and "LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS" in message
    for address in (a for addresses in names.values() for a in addresses):
        assert address not in message


async def test_the_block_applies_inside_the_allow_list_too():
    policy = EndpointPolicy.from_patterns(["0.0.0.0/0", "::/0", "*.example"])
    assert "metadata" in (await refusal("http://169.254.169.254/", policy) or "")
    names = {"a.example": ["169.254.169.254"]}
    assert "metadata" in (await refusal("http://a.example/", policy, names) or "")


async def test_addresses_are_not_resolved_when_nothing_needs_them():
    resolve = stub({})
    policy = EndpointPolicy.from_patterns(["*.example"], block_link_local=False)
    await check_endpoints([StorageEndpoint("f", "http://a.example/")], policy, resolve)
    await check_endpoints([StorageEndpoint("f", "http://10.0.0.1/")], DEFAULT, resolve)
    assert resolve.calls == []
    await check_endpoints([StorageEndpoint("f", "http://a.example:81/")], DEFAULT, resolve)
    assert resolve.calls == [("a.example", 81)]


async def test_every_endpoint_is_checked_and_the_refused_one_is_named():
    endpoints = [
        StorageEndpoint("storage-profile.endpoint", "http://10.20.0.1:9000/"),
        StorageEndpoint("storage-profile.sts-endpoint", "http://10.99.0.1:9000/"),
    ]
    with pytest.raises(CatalogError) as raised:
        await check_endpoints(endpoints, ALLOW, stub({}))
    assert "storage-profile.sts-endpoint" in raised.value.message


@pytest.mark.parametrize("pattern", ["", "10.0.0.0/33", "exa mple.com", "host:0", "host:port", "[::1]:x", "*"])
def test_invalid_patterns_are_refused(pattern):
    with pytest.raises(ValueError):
        EndpointPattern.parse(pattern)


# ---------------------------------------------------------------- settings


def test_settings_configure_the_policy():
    settings = load_settings(
        {
            "LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS": "minio.internal:9000, 10.0.0.0/8",
            "LAKEKEEPER__BLOCK_LINK_LOCAL_STORAGE_ENDPOINTS": "false",
        }
    )
    policy = EndpointPolicy.from_settings(settings.host)
    assert [p.text for p in policy.allowed] == ["minio.internal:9000", "10.0.0.0/8"]
    assert policy.block_link_local is False
    json_list = load_settings({"LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS": '["*.amazonaws.com"]'})
    assert [p.text for p in EndpointPolicy.from_settings(json_list.host).allowed] == ["*.amazonaws.com"]
    default = EndpointPolicy.from_settings(load_settings({}).host)
    assert default.allowed == () and default.block_link_local is True


def test_an_invalid_pattern_in_the_settings_stops_the_server():
    settings = load_settings({"LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS": "10.0.0.0/40"})
    with pytest.raises(ConfigError, match="LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS"):
        EndpointPolicy.from_settings(settings.host)


async def test_the_system_resolver_returns_every_address_of_a_name():
    addresses = await resolve_host("localhost", 80)
    assert ipaddress.ip_address("127.0.0.1") in addresses
    assert await resolve_host("does-not-resolve.invalid", 80) == []
