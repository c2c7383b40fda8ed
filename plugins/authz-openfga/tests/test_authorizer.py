"""The ``openfga`` authorizer through ``openfga-sdk`` against the OpenFGA API double.

The double stands in for an OpenFGA server, which cannot run here (see ``lakekeeper_testing.openfga_double``);
``test_double_conformance.py`` proves it answers as the real engine does.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from lakekeeper_authz_openfga import build_authorizer
from lakekeeper_authz_openfga.authorizer import OpenFgaAuthorizer
from lakekeeper_authz_openfga.client import locate, migrate
from lakekeeper_authz_openfga.config import OpenFgaConfig, OpenFgaSettings
from lakekeeper_host.config import load_settings
from lakekeeper_host.config.types import Secret
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.plugins import make_plugin_manager
from lakekeeper_host.registry import BuildContext, Registry, StartupError
from lakekeeper_host.service.authz import Actor, Assignment, CatalogHierarchy, CatalogObject, Principal, Resource
from lakekeeper_testing.openfga_double import OpenFgaDouble

SERVER_ID = "00000000-0000-0000-0000-000000000001"
ALICE = Actor(user_id="oidc~alice", name="Alice")
BOB = Actor(user_id="oidc~bob", name="Bob")
CAROL = Actor(user_id="oidc~carol")
DAVE = Actor(user_id="oidc~dave")
ROOT = Actor(user_id="oidc~root")

PROJECT = Resource("project", "p1")
WAREHOUSE = Resource("warehouse", "w1")
SALES = Resource("namespace", "ns-sales", warehouse_id="w1")
EU = Resource("namespace", "ns-sales-eu", warehouse_id="w1")
HR = Resource("namespace", "ns-hr", warehouse_id="w1")
ORDERS = Resource("table", "t-orders", warehouse_id="w1")
INVOICES = Resource("table", "t-invoices", warehouse_id="w1")
SALARIES = Resource("table", "t-salaries", warehouse_id="w1")
REPORT = Resource("view", "v-report", warehouse_id="w1")
ANALYSTS = Resource("role", "r-analysts")


def config_for(double: OpenFgaDouble, **overrides) -> OpenFgaConfig:
    return OpenFgaConfig(endpoint=double.url, store_name=f"lakekeeper-{uuid.uuid4().hex[:8]}", **overrides)


async def make_authorizer(double: OpenFgaDouble, **overrides) -> OpenFgaAuthorizer:
    config = config_for(double, **overrides)
    await migrate(config)
    settings = load_settings(environ={"LAKEKEEPER__INSTANCE_ADMINS": '["oidc~root"]'})
    return await build_authorizer(OpenFgaSettings(openfga=config), BuildContext(settings=settings, server_id=SERVER_ID))


@pytest.fixture
async def authz(double: OpenFgaDouble) -> AsyncIterator[OpenFgaAuthorizer]:
    """A catalog: alice bootstrapped the server and created project > warehouse > sales > sales.eu with
    tables orders (sales), invoices (sales.eu), the view report (sales), and hr > salaries."""
    authorizer = await make_authorizer(double)
    await authorizer.bootstrap(ALICE, is_operator=False)
    await authorizer.on_created(ALICE, PROJECT, None)
    await authorizer.on_created(ALICE, WAREHOUSE, PROJECT)
    await authorizer.on_created(ALICE, SALES, WAREHOUSE)
    await authorizer.on_created(ALICE, EU, SALES)
    await authorizer.on_created(ALICE, HR, WAREHOUSE)
    await authorizer.on_created(ALICE, ORDERS, SALES)
    await authorizer.on_created(ALICE, INVOICES, EU)
    await authorizer.on_created(ALICE, REPORT, SALES)
    await authorizer.on_created(ALICE, SALARIES, HR)
    yield authorizer
    await authorizer.close()


def store_tuples(double: OpenFgaDouble, authorizer: OpenFgaAuthorizer) -> set[tuple[str, str, str]]:
    return set(double.stores[authorizer.client.get_store_id()].tuples.keys)


# ---------------------------------------------------------------- store and model


async def test_migrate_creates_the_store_and_model_once(double: OpenFgaDouble) -> None:
    config = config_for(double)
    with pytest.raises(StartupError, match="run `lakekeeper migrate`"):
        await locate(config)
    first = await migrate(config)
    assert first.created_store and first.wrote_model
    second = await migrate(config)
    assert (second.store_id, second.model_id) == (first.store_id, first.model_id)
    assert not second.created_store and not second.wrote_model
    store = double.store_named(config.store_name)
    assert len(store.models) == 1 and store.models[0]["id"] == first.model_id
    assert await locate(config) == second


async def test_a_new_model_version_is_written_beside_the_old(double: OpenFgaDouble) -> None:
    config = config_for(double)
    old = await migrate(config)
    newer = OpenFgaConfig(endpoint=double.url, store_name=config.store_name, authorization_model_prefix="other")
    new = await migrate(newer)
    assert new.store_id == old.store_id and new.model_id != old.model_id and new.wrote_model
    assert (await locate(config)).model_id == old.model_id
    pinned = OpenFgaConfig(endpoint=double.url, store_name=config.store_name, authorization_model_version="9.9")
    with pytest.raises(StartupError, match="9.9"):
        await migrate(pinned)


async def test_selected_by_config_and_migrated_by_the_host(double: OpenFgaDouble, capsys) -> None:
    """``LAKEKEEPER__AUTHZ_BACKEND=openfga`` finds the plugin by entry point; ``lakekeeper migrate``'s
    backend step writes the store and model; the API key reaches OpenFGA as a bearer token."""
    from lakekeeper_host.cli import migrate_selected_backends

    store_name = f"lakekeeper-{uuid.uuid4().hex[:8]}"
    settings = load_settings(environ={
        "LAKEKEEPER__AUTHZ_BACKEND": "openfga",
        "LAKEKEEPER__OPENFGA__ENDPOINT": double.url,
        "LAKEKEEPER__OPENFGA__STORE_NAME": store_name,
        "LAKEKEEPER__OPENFGA__API_KEY": "fga-key-123",
        "LAKEKEEPER__OPENFGA__MAX_BATCH_CHECK_SIZE": "7",
    })
    spec = Registry.collect(make_plugin_manager()).authorizer("openfga")
    section = settings.section(spec.config_cls)
    assert section.openfga.max_batch_check_size == 7
    assert "fga-key-123" not in repr(section)
    double.authorization_headers.clear()
    await migrate_selected_backends(settings)
    assert f"created store '{store_name}'" in capsys.readouterr().out
    assert set(double.authorization_headers) == {"Bearer fga-key-123"}
    authorizer = await spec.factory(section, BuildContext(settings=settings, server_id=SERVER_ID))
    try:
        assert authorizer.name == "openfga" and authorizer.max_batch_check_size == 7
        assert await authorizer.health()
    finally:
        await authorizer.close()


def test_configuration_errors_name_the_setting() -> None:
    with pytest.raises(StartupError, match="LAKEKEEPER__OPENFGA__ENDPOINT"):
        OpenFgaConfig().require_endpoint()
    with pytest.raises(StartupError, match="CLIENT_SECRET and TOKEN_ENDPOINT"):
        OpenFgaConfig(endpoint="http://fga:8080", client_id="lakekeeper").require_endpoint()


# ---------------------------------------------------------------- lifecycle and checks


async def test_creator_owns_what_they_create_and_others_see_nothing(authz: OpenFgaAuthorizer) -> None:
    for resource, action in [(PROJECT, "create_warehouse"), (WAREHOUSE, "create_namespace"), (SALES, "create_table"),
                             (ORDERS, "write_data"), (REPORT, "select"), (Resource("server", SERVER_ID),
                                                                             "create_project")]:
        assert await authz.is_allowed(ALICE, action, resource), (resource, action)
        assert not await authz.is_allowed(BOB, action, resource), (resource, action)
    for resource in (PROJECT, WAREHOUSE, SALES, ORDERS, REPORT):
        assert not await authz.is_allowed(BOB, "include_in_list", resource)
    assert not await authz.is_allowed(Actor(), "get_metadata", ORDERS)  # anonymous


async def test_a_grant_on_one_table_shows_its_path_and_nothing_else(authz: OpenFgaAuthorizer) -> None:
    await authz.write_assignments(ALICE, INVOICES, [Assignment("select", Principal("user", BOB.user_id))], [])
    assert await authz.is_allowed(BOB, "read_data", INVOICES)
    assert not await authz.is_allowed(BOB, "write_data", INVOICES)
    # visible: the path above the table; hidden: siblings
    visible = await authz.are_allowed(BOB, "include_in_list", [SALES, EU, HR])
    assert visible == [True, True, False]
    assert await authz.are_allowed(BOB, "include_in_list", [ORDERS, INVOICES, SALARIES]) == [False, True, False]
    assert await authz.is_allowed(BOB, "include_in_list", WAREHOUSE)
    assert await authz.is_allowed(BOB, "include_in_list", PROJECT)
    assert not await authz.is_allowed(BOB, "list_everything", WAREHOUSE)
    # reading the grants is for who may grant (Lakekeeper's can_read_assignments): a reader may not
    assert await authz.allowed_actions(BOB, INVOICES) == ["read_data", "get_metadata", "include_in_list", "get_tasks"]


async def test_namespace_grants_flow_down_to_nested_namespaces_and_tables(authz: OpenFgaAuthorizer) -> None:
    await authz.write_assignments(ALICE, SALES, [Assignment("modify", Principal("user", CAROL.user_id))], [])
    assert await authz.are_allowed(CAROL, "write_data", [ORDERS, INVOICES, SALARIES]) == [True, True, False]
    assert await authz.is_allowed(CAROL, "update_properties", EU)
    assert not await authz.is_allowed(CAROL, "create_table", EU)  # create is its own privilege
    assert await authz.is_allowed(CAROL, "commit", REPORT)


async def test_batch_checks_respect_the_batch_size(double: OpenFgaDouble) -> None:
    authz = await make_authorizer(double, max_batch_check_size=50, check_cache_capacity=0)
    try:
        await authz.on_created(ALICE, WAREHOUSE, None)
        await authz.on_created(ALICE, SALES, WAREHOUSE)
        tables = [Resource("table", f"t{i}", "w1") for i in range(120)]
        for table in tables[::10]:
            await authz.on_created(ALICE, table, SALES)
        before = double.requests["/stores/{store}/batch-check"]
        answers = await authz.are_allowed(ALICE, "get_metadata", tables)
        assert answers == [i % 10 == 0 for i in range(120)]
        assert double.requests["/stores/{store}/batch-check"] - before == 3  # 50 + 50 + 20
    finally:
        await authz.close()


async def test_deleting_removes_every_tuple_of_the_object(double: OpenFgaDouble, authz: OpenFgaAuthorizer) -> None:
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("user", BOB.user_id))], [])
    await authz.on_created(ALICE, ANALYSTS, PROJECT)
    await authz.write_assignments(ALICE, ANALYSTS, [Assignment("assignee", Principal("user", CAROL.user_id))], [])
    await authz.write_assignments(ALICE, INVOICES, [Assignment("select", Principal("role", ANALYSTS.id))], [])
    assert any("lakekeeper_table:w1/t-orders" in (u, o) for u, _, o in store_tuples(double, authz))

    await authz.on_deleted(ORDERS)
    await authz.on_deleted(ANALYSTS)
    left = store_tuples(double, authz)
    assert not [t for t in left if "lakekeeper_table:w1/t-orders" in (t[0], t[2])]
    assert not [t for t in left if t[0].startswith("role:r-analysts") or t[2] == "role:r-analysts"]
    assert not await authz.is_allowed(BOB, "read_data", ORDERS)
    assert await authz.is_allowed(ALICE, "read_data", INVOICES)  # the rest stands


async def test_deleting_a_user_revokes_all_their_grants(double: OpenFgaDouble, authz: OpenFgaAuthorizer) -> None:
    await authz.on_created(ALICE, ANALYSTS, PROJECT)
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("user", BOB.user_id))], [])
    await authz.write_assignments(ALICE, ANALYSTS, [Assignment("assignee", Principal("user", BOB.user_id))], [])
    await authz.write_assignments(ALICE, PROJECT, [Assignment("describe", Principal("user", BOB.user_id))], [])
    await authz.on_deleted(Resource("user", BOB.user_id))
    assert not [t for t in store_tuples(double, authz) if t[0] == "user:oidc~bob"]
    assert not await authz.is_allowed(BOB, "read_data", ORDERS)
    assert await authz.is_allowed(ALICE, "read_data", ORDERS)


async def test_a_moved_namespace_takes_its_new_parents_grants(double: OpenFgaDouble, authz: OpenFgaAuthorizer) -> None:
    await authz.write_assignments(ALICE, HR, [Assignment("select", Principal("user", DAVE.user_id))], [])
    assert not await authz.is_allowed(DAVE, "read_data", INVOICES)
    await authz.on_moved(EU, HR)
    assert await authz.is_allowed(DAVE, "read_data", INVOICES)
    assert await authz.is_allowed(DAVE, "include_in_list", EU)
    parents = {(u, r) for u, r, o in store_tuples(double, authz) if o == "namespace:ns-sales-eu" and r == "parent"}
    assert parents == {("namespace:ns-hr", "parent")}
    children = {o for u, r, o in store_tuples(double, authz) if u == "namespace:ns-sales-eu" and r == "child"}
    assert children == {"namespace:ns-hr"}


async def test_reconcile_makes_the_hierarchy_the_databases_and_keeps_grants(
    double: OpenFgaDouble, authz: OpenFgaAuthorizer
) -> None:
    """What the database holds after lifecycle writes failed: sales.eu moved below hr (on_moved
    failed), salaries dropped (on_deleted failed), the role analysts created with carol as member
    (on_created and the member write failed). Bob's grant on orders is a grant: it stays."""
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("user", BOB.user_id))], [])
    database = CatalogHierarchy(
        objects=(CatalogObject(PROJECT, None), CatalogObject(WAREHOUSE, PROJECT), CatalogObject(SALES, WAREHOUSE),
                 CatalogObject(EU, HR), CatalogObject(HR, WAREHOUSE), CatalogObject(ORDERS, SALES),
                 CatalogObject(INVOICES, EU), CatalogObject(REPORT, SALES), CatalogObject(ANALYSTS, PROJECT)),
        role_members=((ANALYSTS.id, Principal("user", CAROL.user_id)),),
    )
    reads: list[int] = []

    async def hierarchy() -> CatalogHierarchy:
        reads.append(double.requests["/stores/{store}/read"])  # the store was read before the database
        return database

    before = store_tuples(double, authz)
    # Lakekeeper's `openfga reconcile --mode add-missing`: the same writes, no deletion
    additive = await authz.reconcile(hierarchy, dry_run=True, delete_drift=False)
    assert additive.deleted == () and len(additive.written) == 4
    reads_before = double.requests["/stores/{store}/read"]
    dry = await authz.reconcile(hierarchy, dry_run=True)
    assert store_tuples(double, authz) == before and reads[1] > reads_before
    assert set(dry.written) == {"namespace:ns-hr parent namespace:ns-sales-eu",
                                "namespace:ns-sales-eu child namespace:ns-hr",
                                "project:p1 project role:r-analysts", "user:oidc~carol assignee role:r-analysts"}
    assert "namespace:ns-sales parent namespace:ns-sales-eu" in dry.deleted
    assert "namespace:ns-sales-eu child namespace:ns-sales" in dry.deleted
    assert {line for line in dry.deleted if "t-salaries" in line} == {
        "namespace:ns-hr parent lakekeeper_table:w1/t-salaries",
        "lakekeeper_table:w1/t-salaries child namespace:ns-hr",
        "user:oidc~alice ownership lakekeeper_table:w1/t-salaries"}
    assert len(dry.deleted) == 5
    assert dry.notes and "role:r-analysts" in dry.notes[0] and "ownership cannot be restored" in dry.notes[0]

    fixed = await authz.reconcile(hierarchy)
    assert (fixed.written, fixed.deleted) == (dry.written, dry.deleted)
    assert not [t for t in store_tuples(double, authz) if "t-salaries" in t[0] + t[2]]
    await authz.write_assignments(ALICE, HR, [Assignment("select", Principal("user", DAVE.user_id))], [])
    assert await authz.is_allowed(DAVE, "read_data", INVOICES)  # eu is below hr now
    assert await authz.is_allowed(BOB, "read_data", ORDERS)  # the grant stayed
    assert await authz.is_allowed(CAROL, "assume", ANALYSTS)
    again = await authz.reconcile(hierarchy)
    assert (again.written, again.deleted) == ((), ())


# ---------------------------------------------------------------- permissions API


async def test_assignments_round_trip(authz: OpenFgaAuthorizer) -> None:
    await authz.on_created(ALICE, ANALYSTS, PROJECT)
    grants = [Assignment("select", Principal("user", BOB.user_id)),
              Assignment("describe", Principal("role", ANALYSTS.id)),
              Assignment("ownership", Principal("user", CAROL.user_id))]
    await authz.write_assignments(ALICE, SALES, grants, [])
    found = set(await authz.read_assignments(SALES))
    assert found == {*grants, Assignment("ownership", Principal("user", ALICE.user_id))}
    assert set(await authz.read_assignments(SALES, ["select"])) == {grants[0]}

    await authz.write_assignments(ALICE, SALES, [], [grants[0]])
    assert grants[0] not in await authz.read_assignments(SALES)
    assert not await authz.is_allowed(BOB, "get_metadata", SALES)
    # a role's members get the role's grants
    await authz.write_assignments(ALICE, ANALYSTS, [Assignment("assignee", Principal("user", DAVE.user_id))], [])
    assert await authz.is_allowed(DAVE, "get_metadata", ORDERS)


async def test_grants_need_grant_rights(authz: OpenFgaAuthorizer) -> None:
    with pytest.raises(CatalogError) as denied:
        await authz.write_assignments(BOB, ORDERS, [Assignment("select", Principal("user", BOB.user_id))], [])
    assert denied.value.code == 403
    with pytest.raises(CatalogError) as invalid:
        await authz.write_assignments(ALICE, ORDERS, [Assignment("create", Principal("user", BOB.user_id))], [])
    assert invalid.value.code == 400
    # pass_grants + select lets bob hand on select, not modify
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("user", BOB.user_id)),
                                                  Assignment("pass_grants", Principal("user", BOB.user_id))], [])
    await authz.write_assignments(BOB, ORDERS, [Assignment("select", Principal("user", CAROL.user_id))], [])
    assert await authz.is_allowed(CAROL, "read_data", ORDERS)
    with pytest.raises(CatalogError):
        await authz.write_assignments(BOB, ORDERS, [Assignment("modify", Principal("user", CAROL.user_id))], [])


async def test_managed_access_takes_grant_management_from_owners(authz: OpenFgaAuthorizer) -> None:
    await authz.write_assignments(ALICE, SALES, [Assignment("ownership", Principal("user", DAVE.user_id))], [])
    assert await authz.is_allowed(DAVE, "grant_select", SALES)
    assert await authz.managed_access(WAREHOUSE) == {"managed-access": False}
    await authz.set_managed_access(ALICE, WAREHOUSE, True)
    assert await authz.managed_access(WAREHOUSE) == {"managed-access": True}
    assert await authz.managed_access(EU) == {"managed-access": False, "managed-access-inherited": True}
    assert not await authz.is_allowed(DAVE, "grant_select", SALES)
    with pytest.raises(CatalogError):
        await authz.write_assignments(DAVE, SALES, [Assignment("select", Principal("user", BOB.user_id))], [])
    assert await authz.is_allowed(DAVE, "write_data", ORDERS)  # ownership still means data access
    assert await authz.is_allowed(ALICE, "grant_select", SALES)  # project admin = security admin
    with pytest.raises(CatalogError):
        await authz.set_managed_access(DAVE, SALES, False)
    await authz.set_managed_access(ALICE, WAREHOUSE, False)
    assert await authz.is_allowed(DAVE, "grant_select", SALES)


async def test_instance_admins_get_nothing_from_the_tuples(authz: OpenFgaAuthorizer) -> None:
    # LAKEKEEPER__INSTANCE_ADMINS is applied by the host (server/authorize.py), for every authorizer
    assert not await authz.is_allowed(ROOT, "create_project", Resource("server", SERVER_ID))
    assert not await authz.is_allowed(ROOT, "get_metadata", ORDERS)


async def test_what_another_user_or_a_role_may_do(authz: OpenFgaAuthorizer) -> None:
    await authz.on_created(ALICE, ANALYSTS, PROJECT)
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("role", ANALYSTS.id))], [])
    role_actions = await authz.principal_allowed_actions(Principal("role", ANALYSTS.id), ORDERS)
    assert "read_data" in role_actions and "get_metadata" in role_actions
    assert "write_data" not in role_actions and "drop" not in role_actions
    assert await authz.principal_allowed_actions(Principal("user", BOB.user_id), ORDERS) == []
    assert await authz.principal_allowed_actions(Principal("user", ALICE.user_id), ORDERS, ["drop", "read_data"]) == [
        "drop", "read_data"]


async def test_an_assumed_role_acts_with_the_roles_grants(authz: OpenFgaAuthorizer) -> None:
    await authz.on_created(ALICE, ANALYSTS, PROJECT)
    await authz.write_assignments(ALICE, ANALYSTS, [Assignment("assignee", Principal("user", BOB.user_id))], [])
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("role", ANALYSTS.id))], [])
    assert await authz.is_allowed(Actor(user_id=BOB.user_id, assumed_role=ANALYSTS.id), "read_data", ORDERS)
    assert not await authz.is_allowed(Actor(user_id=CAROL.user_id, assumed_role=ANALYSTS.id), "read_data", ORDERS)
    assert await authz.is_allowed(BOB, "assume", ANALYSTS)
    assert not await authz.is_allowed(CAROL, "assume", ANALYSTS)


async def test_user_actions_on_oneself_and_by_server_admins(authz: OpenFgaAuthorizer) -> None:
    """Lakekeeper's rules: oneself (also while assuming a role) may do everything; any authenticated
    caller reads a user by id; updating, deleting and reading someone's roles is for server admins."""
    bob = Resource("user", BOB.user_id)
    assert await authz.is_allowed(BOB, "update", bob)
    assert await authz.is_allowed(Actor(user_id=BOB.user_id, assumed_role=str(uuid.uuid4())), "delete", bob)
    assert await authz.is_allowed(CAROL, "read", bob)
    assert not await authz.is_allowed(Actor(), "read", bob)  # anonymous
    assert await authz.are_allowed(CAROL, "update", [bob]) == [False]
    assert not await authz.is_allowed(CAROL, "read_role_assignments", bob)
    assert await authz.is_allowed(ALICE, "delete", bob)  # server admin
    assert await authz.is_allowed(ALICE, "read_role_assignments", bob)
    assert await authz.principal_allowed_actions(Principal("user", CAROL.user_id), bob) == ["read"]
    assert await authz.principal_allowed_actions(Principal("user", ALICE.user_id), bob) == [
        "read", "update", "delete", "read_role_assignments"]


async def test_bootstrap_as_operator(double: OpenFgaDouble) -> None:
    authz = await make_authorizer(double)
    try:
        await authz.bootstrap(CAROL, is_operator=True)
        await authz.on_created(DAVE, PROJECT, None)
        assert await authz.is_allowed(CAROL, "list_all_projects", Resource("server", SERVER_ID))
        assert await authz.is_allowed(CAROL, "delete", PROJECT)  # operators administer every project
        assert ("user:oidc~carol", "operator", f"server:{SERVER_ID}") in store_tuples(double, authz)
    finally:
        await authz.close()


# ---------------------------------------------------------------- ListObjects for lists

TABLES = (ORDERS, INVOICES, SALARIES)
NAMESPACES = (SALES, EU, HR)


async def test_visible_ids_are_what_the_checks_allow(authz: OpenFgaAuthorizer) -> None:
    """ListObjects names exactly the objects a per-object check would show, for sparse and dense callers."""
    await authz.write_assignments(ALICE, INVOICES, [Assignment("select", Principal("user", BOB.user_id))], [])
    await authz.write_assignments(ALICE, SALES, [Assignment("describe", Principal("user", CAROL.user_id))], [])
    for actor in (ALICE, BOB, CAROL, DAVE):
        for kind, resources in (("table", TABLES), ("namespace", NAMESPACES), ("view", (REPORT,))):
            allowed = await authz.are_allowed(actor, "include_in_list", resources)
            expected = {r.id for r, ok in zip(resources, allowed, strict=True) if ok}
            assert await authz.visible_ids(actor, "include_in_list", kind) == expected, (actor, kind)
    assert await authz.visible_ids(BOB, "include_in_list", "table") == {INVOICES.id}
    assert await authz.visible_ids(Actor(), "include_in_list", "table") == frozenset()  # anonymous
    assert await authz.visible_ids(BOB, "read", "user") is None  # users are no OpenFGA objects


async def test_visible_ids_of_an_assumed_role_need_membership(authz: OpenFgaAuthorizer) -> None:
    await authz.on_created(ALICE, ANALYSTS, PROJECT)
    await authz.write_assignments(ALICE, ANALYSTS, [Assignment("assignee", Principal("user", BOB.user_id))], [])
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("role", ANALYSTS.id))], [])
    as_analyst = await authz.visible_ids(Actor(user_id=BOB.user_id, assumed_role=ANALYSTS.id), "include_in_list",
                                         "table")
    assert as_analyst == {ORDERS.id}
    assert await authz.visible_ids(Actor(user_id=CAROL.user_id, assumed_role=ANALYSTS.id), "include_in_list",
                                   "table") == frozenset()


async def test_visible_ids_are_cached_until_a_grant_changes(double: OpenFgaDouble, authz: OpenFgaAuthorizer) -> None:
    from types import SimpleNamespace

    from lakekeeper_authz_openfga import lakekeeper_startup

    metrics = Metrics()
    lakekeeper_startup(SimpleNamespace(authorizer=authz, metrics=metrics))
    asked = double.requests["/stores/{store}/list-objects"]
    assert await authz.visible_ids(BOB, "include_in_list", "table") == frozenset()
    assert await authz.visible_ids(BOB, "include_in_list", "table") == frozenset()
    assert double.requests["/stores/{store}/list-objects"] == asked + 1
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("user", BOB.user_id))], [])
    assert await authz.visible_ids(BOB, "include_in_list", "table") == {ORDERS.id}  # at once
    await authz.write_assignments(ALICE, ORDERS, [], [Assignment("select", Principal("user", BOB.user_id))])
    assert await authz.visible_ids(BOB, "include_in_list", "table") == frozenset()
    sample = metrics.registry.get_sample_value
    assert sample("lakekeeper_cache_requests_total", {"cache": "authz-list-objects", "result": "hit"}) == 1
    assert sample("lakekeeper_cache_requests_total", {"cache": "authz-list-objects", "result": "miss"}) == 3


async def test_an_answer_at_openfgas_max_results_is_unknown(double: OpenFgaDouble, authz: OpenFgaAuthorizer) -> None:
    """OpenFGA cuts ListObjects at OPENFGA_LIST_OBJECTS_MAX_RESULTS without saying so."""
    authz.list_objects_max_results = 2  # the server's limit, as configured
    double.list_objects_max_results = 2
    try:
        assert await authz.visible_ids(ALICE, "include_in_list", "table") is None  # 3 tables, 2 named
        assert await authz.visible_ids(ALICE, "include_in_list", "view") == {REPORT.id}
    finally:
        double.list_objects_max_results = 1000


async def test_an_answer_that_took_openfgas_deadline_is_unknown(double: OpenFgaDouble) -> None:
    """OpenFGA answers with what it found when OPENFGA_LIST_OBJECTS_DEADLINE passes, without saying so."""
    authz = await make_authorizer(double, list_objects_deadline_secs=0.3)
    try:
        await authz.on_created(ALICE, PROJECT, None)
        await authz.on_created(ALICE, WAREHOUSE, PROJECT)
        await authz.on_created(ALICE, SALES, WAREHOUSE)
        for table in TABLES:
            await authz.on_created(ALICE, table, SALES)
        double.list_objects_deadline, double.list_objects_seconds_per_object = 0.3, 0.2
        started = double.requests["/stores/{store}/list-objects"]
        assert await authz.visible_ids(ALICE, "include_in_list", "table") is None  # the double named only one
        assert await authz.visible_ids(ALICE, "include_in_list", "table") is None  # remembered, not asked again
        assert await authz.visible_ids(ALICE, "include_in_list", "namespace") == {SALES.id}  # done in time
        double.list_objects_seconds_per_object = 0.01
        authz.list_cache.invalidate()
        assert await authz.visible_ids(ALICE, "include_in_list", "table") == {t.id for t in TABLES}
        assert double.requests["/stores/{store}/list-objects"] == started + 3
    finally:
        double.list_objects_deadline, double.list_objects_seconds_per_object = 3.0, 0.0
        await authz.close()


async def test_list_objects_can_be_turned_off(double: OpenFgaDouble) -> None:
    authz = await make_authorizer(double, list_objects_max_results=0)
    try:
        asked = double.requests["/stores/{store}/list-objects"]
        assert await authz.visible_ids(ALICE, "include_in_list", "table") is None
        assert double.requests["/stores/{store}/list-objects"] == asked
    finally:
        await authz.close()


# ---------------------------------------------------------------- check cache


async def test_repeated_checks_come_from_the_cache_until_a_grant_changes(
    double: OpenFgaDouble, authz: OpenFgaAuthorizer
) -> None:
    from types import SimpleNamespace

    from lakekeeper_authz_openfga import lakekeeper_startup

    metrics = Metrics()
    lakekeeper_startup(SimpleNamespace(authorizer=authz, metrics=metrics))  # as the host calls it
    checks = double.requests["/stores/{store}/check"]
    assert not await authz.is_allowed(BOB, "read_data", ORDERS)
    assert not await authz.is_allowed(BOB, "read_data", ORDERS)
    assert double.requests["/stores/{store}/check"] == checks + 1
    assert (authz.cache.hits, authz.cache.misses) == (1, 1)
    # another principal, another answer: never shared
    assert await authz.is_allowed(ALICE, "read_data", ORDERS)
    await authz.write_assignments(ALICE, ORDERS, [Assignment("select", Principal("user", BOB.user_id))], [])
    assert await authz.is_allowed(BOB, "read_data", ORDERS)  # the grant takes effect at once
    sample = metrics.registry.get_sample_value
    assert sample("lakekeeper_cache_requests_total", {"cache": "authz-check", "result": "hit"}) == 1
    assert sample("lakekeeper_cache_requests_total", {"cache": "authz-check", "result": "miss"}) >= 4


def test_the_cache_is_bounded_and_expires() -> None:
    from lakekeeper_authz_openfga.cache import TtlCache

    now = [0.0]
    cache = TtlCache(capacity=2, ttl_seconds=5, clock=lambda: now[0])
    for i in range(3):
        cache.put(("user:a", "can_x", f"table:{i}"), True, cache.generation)
    assert len(cache) == 2 and cache.get(("user:a", "can_x", "table:0")) is None
    assert cache.get(("user:a", "can_x", "table:2")) is True
    now[0] = 6
    assert cache.get(("user:a", "can_x", "table:2")) is None
    stale = cache.generation
    cache.invalidate()
    cache.put(("user:a", "can_x", "table:9"), True, stale)  # fetched before the write: not stored
    assert len(cache) == 0



async def test_client_credentials_fetch_a_token_for_openfga(double: OpenFgaDouble) -> None:
    """``CLIENT_ID``/``CLIENT_SECRET``/``TOKEN_ENDPOINT``: the SDK gets a token from the identity
    provider (the test suite's OIDC issuer) and OpenFGA sees it as a bearer token."""
    from lakekeeper_testing.oidc import OidcIssuer

    # an hour's token: the SDK fetches a new one for every request while less than 300-600 s remain,
    # and two tokens minted in different seconds differ (the default 300 s made this test flaky)
    with OidcIssuer(clients={"lakekeeper-fga": "fga-client-secret"}, token_lifetime=3600) as issuer:
        config = config_for(double, client_id="lakekeeper-fga", client_secret=Secret("fga-client-secret"),
                            token_endpoint=issuer.token_endpoint)
        double.authorization_headers.clear()
        await migrate(config)
        headers = set(double.authorization_headers)
        assert len(headers) == 1 and headers.pop().startswith("Bearer ey")  # a JWT from the issuer
        wrong = config_for(double, client_id="lakekeeper-fga", client_secret=Secret("wrong"),
                           token_endpoint=issuer.token_endpoint)
        with pytest.raises(StartupError, match="answered 401"):
            await migrate(wrong)
    with pytest.raises(StartupError, match="unreachable"):
        await migrate(OpenFgaConfig(endpoint="http://127.0.0.1:9"))
