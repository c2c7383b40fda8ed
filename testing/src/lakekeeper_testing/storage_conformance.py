"""Conformance suite for storage plugins: what every ``Storage`` must do, run against the real store.

A storage plugin (or the host, for its built-in ``file`` storage) subclasses ``StorageConformance``
in a test module and provides one fixture per storage variant, each returning a ``StorageCase``.
The suite runs every case once per variant, the way PyIceberg's catalog tests run one body against
several catalogs (a parametrised fixture name resolved with ``request.getfixturevalue``)::

    from lakekeeper_testing.storage_conformance import StorageCase, StorageConformance

    class TestMyStorageConformance(StorageConformance):
        storage_cases = ("account_key_case", "user_delegation_case")

        @pytest.fixture
        def account_key_case(self, my_server, fresh_prefix) -> StorageCase:
            return StorageCase(profile={"type": "mine", ...}, credential={...}, ...)

Storages are built the way the server builds them: the profile and credential JSON go through the
installed plugins' registry and the host's wire converter (``AppState.parse_profile`` /
``parse_credential`` / ``build_storage``), so the plugin's JSON hooks are part of what is tested.

Cases: profile validation (a malformed profile is a 400 naming the field; the stored form parses
back to the same profile), location rules (children of the warehouse allowed, foreign and sibling
locations refused, scheme aliases normalised), object IO (round trip, listing, ``delete_prefix``
purging exactly one prefix), the plugin's own validation probe, credential vending (credentials
only for the table prefix; read credentials cannot write; delete needs the delete permission) and
bad credentials (a malformed one is a 400 naming the field; a wrong one fails validation without
echoing the secret).

The class name deliberately does not start with ``Test``: only the subclasses are collected.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import attrs
import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.storage import (
    DataAccess,
    Storage,
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    join_location,
)
from lakekeeper_host.service.storage_validation import validate_storage


class VendedIO(Protocol):
    """Object IO with nothing but the credentials a ``TableConfig`` vended (blocking calls).

    Every method raises ``PermissionError`` when the store refuses the request, and
    ``FileNotFoundError`` for a missing object; other failures may raise anything.
    """

    def write(self, location: str, data: bytes) -> None: ...

    def read(self, location: str) -> bytes: ...

    def list(self, prefix: str) -> list[str]: ...

    def delete(self, location: str) -> None: ...


@attrs.frozen(kw_only=True)
class StorageCase:
    """One storage variant under test: its JSON and what the suite needs to know about it."""

    # ``storage-profile`` JSON (with ``type``), valid and pointing at a fresh, empty place
    profile: dict[str, Any]
    # ``storage-credential`` JSON, or None for storages without credentials
    credential: dict[str, Any] | None = None
    # (profile JSON, field name): each must be refused with a 400 whose message names the field
    invalid_profiles: Sequence[tuple[dict[str, Any], str]] = ()
    # (credential JSON, field name): malformed credentials, refused with a 400 naming the field
    malformed_credentials: Sequence[tuple[dict[str, Any], str]] = ()
    # a well-formed credential the store refuses (a wrong key); None when the storage has none
    rejected_credential: dict[str, Any] | None = None
    # secret strings of ``rejected_credential`` that must never appear in a validation message
    rejected_secrets: Sequence[str] = ()
    # locations outside the warehouse (other buckets/containers/accounts, other schemes)
    foreign_locations: Sequence[str] = ()
    # (alias, canonical): another spelling of a location below the warehouse and its normal form
    location_aliases: Sequence[tuple[str, str]] = ()
    # IO with vended credentials only; None when the storage vends none
    vended_io: Callable[[TableConfig], VendedIO] | None = None
    # None: vended credentials reach only the table's prefix. Otherwise why they reach further
    # (e.g. an emulator without prefix-scoped tokens); the table-scope case is then skipped with it
    vended_scope_note: str | None = None
    # a location in another bucket/container of the same store, which vended credentials must not reach
    location_outside_store: str | None = None
    # whether read-write credentials are refused a delete (S3 and ADLS: only read-write-delete deletes)
    delete_needs_delete_permission: bool = True
    # LAKEKEEPER__* settings the server would run with (e.g. system identities enabled)
    environment: Mapping[str, str] = attrs.field(factory=dict)


class StorageBuilder:
    """Builds storages exactly as the server does, from the installed plugins and JSON."""

    def __init__(self, environment: Mapping[str, str] | None = None):
        from lakekeeper_host.config import load_settings
        from lakekeeper_host.plugins import make_plugin_manager
        from lakekeeper_host.registry import Registry
        from lakekeeper_host.service.state import AppState

        pm = make_plugin_manager()
        # only the storage parts of the state are used: no database, secrets or authorizer
        self._state = AppState(
            settings=load_settings(dict(environment or {})),
            pm=pm,
            registry=Registry.collect(pm),
            store=None,
            secrets=None,
            authorizer=None,
            events=None,
            contracts=None,
        )

    def parse_profile(self, profile_json: dict[str, Any]) -> Any:
        return self._state.parse_profile(profile_json)

    def parse_credential(self, storage_type: str, credential_json: dict[str, Any] | None) -> Any:
        return self._state.parse_credential(storage_type, credential_json)

    def profile_to_json(self, profile: Any) -> dict[str, Any]:
        return self._state.profile_to_json(profile)

    def build(self, profile_json: dict[str, Any], credential_json: dict[str, Any] | None) -> Storage:
        profile = self._state.parse_profile(profile_json)
        credential = self._state.parse_credential(profile_json["type"], credential_json)
        return self._state.build_storage(profile, credential)


def table_request(location: str, permission: StoragePermission) -> TableAccessRequest:
    return TableAccessRequest(
        table_location=location,
        permission=permission,
        access=DataAccess.VENDED_CREDENTIALS,
        warehouse_id=str(uuid.uuid4()),
        tabular_id=str(uuid.uuid4()),
        refresh_credentials_endpoint="http://catalog.invalid/catalog/v1/wh/namespaces/ns/tables/t/credentials",
    )


def assert_bad_request_naming(raised: pytest.ExceptionInfo[CatalogError], field_name: str) -> None:
    error = raised.value
    assert error.code == 400, f"expected a 400, got {error.code}: {error.message}"
    assert field_name in error.message, f"the 400 should name {field_name!r}: {error.message}"


class StorageConformance:
    """Tests every storage plugin passes. Subclasses name their ``StorageCase`` fixtures."""

    # names of fixtures returning a StorageCase; every test runs once per name
    storage_cases: ClassVar[tuple[str, ...]] = ("storage_case",)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "storage_case_name" in metafunc.fixturenames:
            metafunc.parametrize("storage_case_name", self.storage_cases)

    @pytest.fixture
    def case(self, request: pytest.FixtureRequest, storage_case_name: str) -> StorageCase:
        return request.getfixturevalue(storage_case_name)

    @pytest.fixture
    def builder(self, case: StorageCase) -> StorageBuilder:
        return StorageBuilder(case.environment)

    @pytest.fixture
    async def storage(self, case: StorageCase, builder: StorageBuilder):
        storage = builder.build(case.profile, case.credential)
        try:
            yield storage
        finally:
            await storage.close()

    @pytest.fixture
    async def namespace_location(self, storage: Storage):
        """A fresh directory below the warehouse for this test's tables; purged afterwards."""
        location = join_location(storage.base_location(), f"conformance-{uuid.uuid4().hex[:12]}")
        yield location
        await storage.delete_prefix(location)

    @pytest.fixture
    def table_location(self, namespace_location: str) -> str:
        return join_location(namespace_location, f"table-{uuid.uuid4().hex[:12]}")

    @pytest.fixture
    def other_table_location(self, namespace_location: str) -> str:
        return join_location(namespace_location, f"table-{uuid.uuid4().hex[:12]}")

    # ------------------------------------------------------------ profile validation

    def test_profile_builds_a_storage_of_its_type(self, case, storage):
        assert storage.storage_type == case.profile["type"]
        base = storage.base_location()
        assert base and not base.endswith("/")
        assert storage.normalize_location(base) == base

    def test_stored_profile_parses_back_to_the_same_profile(self, case, builder):
        profile = builder.parse_profile(case.profile)
        stored = builder.profile_to_json(profile)
        assert builder.parse_profile(stored) == profile

    def test_invalid_profiles_are_400_naming_the_field(self, case, builder):
        if not case.invalid_profiles:
            pytest.skip("this storage case lists no invalid profiles")
        for profile_json, field_name in case.invalid_profiles:
            with pytest.raises(CatalogError) as raised:
                builder.build(profile_json, case.credential)
            assert_bad_request_naming(raised, field_name)

    def test_unknown_storage_type_is_400(self, case, builder):
        with pytest.raises(CatalogError) as raised:
            builder.parse_profile({**case.profile, "type": "no-such-storage"})
        assert_bad_request_naming(raised, "no-such-storage")

    def test_immutable_fields_are_profile_fields(self, case, builder, storage):
        immutable = storage.immutable_fields()
        assert immutable, "a warehouse must not be able to move to another place by a profile update"
        profile_fields = {a.name for a in attrs.fields(type(builder.parse_profile(case.profile)))}
        for name in immutable:
            assert name.replace("-", "_") in profile_fields, f"immutable field {name!r} is not a profile field"

    # ------------------------------------------------------------ location rules

    def test_locations_below_the_warehouse_are_allowed(self, storage, table_location):
        base = storage.base_location()
        assert storage.is_allowed_location(table_location)
        assert storage.is_allowed_location(table_location + "/")
        assert storage.is_allowed_location(join_location(base, "a", "b", "c"))

    def test_foreign_and_sibling_locations_are_refused(self, case, storage):
        base = storage.base_location()
        # a string prefix is not a path prefix: <base>-other is beside the warehouse, not in it
        refused = [*case.foreign_locations, base + "-other/table", base + "x"]
        # the root is no table location; a '..' segment may leave it wherever a server resolves it
        refused += [base, base + "/", join_location(base, "t", "..", "..", "escape"),
                    join_location(base, "%2e%2e", "x")]
        for location in refused:
            assert not storage.is_allowed_location(location), f"{location} must not be allowed"

    def test_normalize_location(self, case, storage, table_location):
        assert storage.normalize_location(table_location + "/") == table_location
        assert storage.normalize_location(table_location) == table_location
        for alias, canonical in case.location_aliases:
            assert storage.normalize_location(alias) == canonical
            assert storage.normalize_location(canonical) == canonical

    # ------------------------------------------------------------ object IO

    async def test_object_round_trip(self, storage, table_location):
        location = join_location(table_location, "metadata", "00000-abc.metadata.json")
        payload = b'{"format-version": 2}\x00\xff'
        assert not await storage.exists(location)
        await storage.write(location, payload)
        assert await storage.exists(location)
        assert await storage.read(location) == payload
        await storage.write(location, b"replaced")
        assert await storage.read(location) == b"replaced"
        await storage.delete(location)
        assert not await storage.exists(location)

    async def test_reading_a_missing_object_is_file_not_found(self, storage, table_location):
        with pytest.raises(FileNotFoundError):
            await storage.read(join_location(table_location, "metadata", "missing.json"))

    async def test_list_is_recursive_and_limited_to_the_prefix(self, storage, table_location, other_table_location):
        inside = [
            join_location(table_location, "metadata", "v1.metadata.json"),
            join_location(table_location, "data", "part=1", "f1.parquet"),
            join_location(table_location, "data", "part=2", "f2.parquet"),
        ]
        # shares the string prefix of the table location but is another directory
        beside = join_location(table_location + "-beside", "data", "x.parquet")
        elsewhere = join_location(other_table_location, "data", "y.parquet")
        for location in [*inside, beside, elsewhere]:
            await storage.write(location, b"x")
        listed = [storage.normalize_location(item) async for item in storage.list(table_location)]
        assert sorted(listed) == sorted(inside)
        assert not await storage.is_empty(table_location)
        assert await storage.is_empty(join_location(table_location, "nothing-here"))

    async def test_delete_prefix_purges_one_prefix_only(self, storage, table_location, other_table_location):
        files = [join_location(table_location, "data", f"f{i}.parquet") for i in range(5)]
        files.append(join_location(table_location, "metadata", "v1.metadata.json"))
        beside = join_location(table_location + "-beside", "data", "keep.parquet")
        elsewhere = join_location(other_table_location, "metadata", "keep.json")
        await asyncio.gather(*(storage.write(f, b"data") for f in [*files, beside, elsewhere]))
        assert await storage.delete_prefix(table_location) == len(files)
        assert await storage.is_empty(table_location)
        assert await storage.read(beside) == b"data"
        assert await storage.read(elsewhere) == b"data"
        assert await storage.delete_prefix(table_location) == 0

    async def test_validation_probe_passes_and_leaves_nothing(self, storage):
        checks = await validate_storage(storage)
        failed = [c for c in checks if c.status == "failed"]
        assert not failed, failed
        assert any(c.name == "lakekeeper-read-write" and c.status == "passed" for c in checks)
        leftovers = [item async for item in storage.list(storage.base_location())]
        assert not [item for item in leftovers if "conformance-" not in item], leftovers

    # ------------------------------------------------------------ credential vending

    def _vended_io(self, case: StorageCase) -> Callable[[TableConfig], VendedIO]:
        if case.vended_io is None:
            pytest.skip(f"{case.profile['type']} storage vends no credentials")
        return case.vended_io

    async def test_vended_credentials_are_for_the_table_prefix(self, case, storage, table_location):
        self._vended_io(case)
        for permission in StoragePermission:
            config = await storage.table_config(table_request(table_location, permission))
            assert config.storage_credentials, f"nothing vended for {permission}"
            for entry in config.storage_credentials:
                assert storage.normalize_location(entry["prefix"]) == table_location
                assert entry["config"], "a storage credential without properties"
                assert set(entry["config"].items()) <= set(config.config.items())
            assert config.expires_at_ms is not None and config.expires_at_ms > time.time() * 1000

    async def test_read_write_credentials_work_inside_the_table(self, case, storage, table_location):
        make_io = self._vended_io(case)
        io = make_io(await storage.table_config(table_request(table_location, StoragePermission.READ_WRITE)))
        inside = join_location(table_location, "data", "vended.parquet")
        await asyncio.to_thread(io.write, inside, b"vended")
        assert await asyncio.to_thread(io.read, inside) == b"vended"
        assert await storage.read(inside) == b"vended"
        listed = [storage.normalize_location(item) for item in await asyncio.to_thread(io.list, table_location)]
        assert inside in listed

    async def test_vended_credentials_do_not_reach_other_tables(
        self, case, storage, table_location, other_table_location
    ):
        make_io = self._vended_io(case)
        if case.vended_scope_note is not None:
            pytest.skip(case.vended_scope_note)
        io = make_io(await storage.table_config(table_request(table_location, StoragePermission.READ_WRITE)))
        foreign_object = join_location(other_table_location, "data", "other.parquet")
        await storage.write(foreign_object, b"other table")
        for outside in (
            join_location(other_table_location, "data", "intruder.parquet"),
            join_location(table_location + "-beside", "data", "intruder.parquet"),
            join_location(storage.base_location(), "intruder.parquet"),
        ):
            with pytest.raises(PermissionError):
                await asyncio.to_thread(io.write, outside, b"must not land")
            assert not await storage.exists(outside)
        with pytest.raises(PermissionError):
            await asyncio.to_thread(io.read, foreign_object)

    async def test_vended_credentials_do_not_reach_another_bucket(self, case, storage, table_location):
        make_io = self._vended_io(case)
        if case.location_outside_store is None:
            pytest.skip("this storage case names no location in another bucket or container")
        io = make_io(await storage.table_config(table_request(table_location, StoragePermission.READ_WRITE_DELETE)))
        with pytest.raises(PermissionError):
            await asyncio.to_thread(io.write, case.location_outside_store, b"must not land")

    async def test_read_credentials_read_but_cannot_write(self, case, storage, table_location):
        make_io = self._vended_io(case)
        existing = join_location(table_location, "metadata", "v1.metadata.json")
        await storage.write(existing, b"metadata")
        io = make_io(await storage.table_config(table_request(table_location, StoragePermission.READ)))
        assert await asyncio.to_thread(io.read, existing) == b"metadata"
        new_object = join_location(table_location, "data", "new.parquet")
        with pytest.raises(PermissionError):
            await asyncio.to_thread(io.write, new_object, b"no")
        assert not await storage.exists(new_object)
        with pytest.raises(PermissionError):
            await asyncio.to_thread(io.delete, existing)
        assert await storage.exists(existing)

    async def test_delete_needs_the_delete_permission(self, case, storage, table_location):
        make_io = self._vended_io(case)
        victim = join_location(table_location, "data", "victim.parquet")
        await storage.write(victim, b"data")
        if case.delete_needs_delete_permission:
            io = make_io(await storage.table_config(table_request(table_location, StoragePermission.READ_WRITE)))
            with pytest.raises(PermissionError):
                await asyncio.to_thread(io.delete, victim)
            assert await storage.exists(victim)
        io = make_io(await storage.table_config(table_request(table_location, StoragePermission.READ_WRITE_DELETE)))
        await asyncio.to_thread(io.delete, victim)
        assert not await storage.exists(victim)

    # ------------------------------------------------------------ bad credentials

    def test_malformed_credentials_are_400_naming_the_field(self, case, builder):
        if not case.malformed_credentials:
            pytest.skip("this storage case lists no malformed credentials")
        for credential_json, field_name in case.malformed_credentials:
            with pytest.raises(CatalogError) as raised:
                builder.build(case.profile, credential_json)
            assert_bad_request_naming(raised, field_name)

    async def test_a_wrong_credential_fails_validation_without_echoing_it(self, case, builder):
        if case.rejected_credential is None:
            pytest.skip(f"{case.profile['type']} storage takes no credential")
        storage = builder.build(case.profile, case.rejected_credential)
        try:
            checks = await validate_storage(storage)
        finally:
            await storage.close()
        failed = [c for c in checks if c.status == "failed"]
        assert failed, "a credential the store refuses must fail validation"
        for check in failed:
            assert check.message, f"{check.name} failed without saying why"
            for secret in case.rejected_secrets:
                assert secret not in check.message, f"{check.name} echoed the secret"
