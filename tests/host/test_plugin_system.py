"""The plugin system: discovery, blocking, validation, selection, listing."""

from __future__ import annotations

import sys
import textwrap

import pluggy
import pytest

from lakekeeper_host import hookimpl
from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import BUILTIN_PLUGINS, list_plugins, make_plugin_manager
from lakekeeper_host.registry import BackendSpec, Registry, StartupError
from lakekeeper_host.runtime.lifecycle import check_backend_selection
from tests.plugins import memory_storage


@pytest.fixture
def entry_point_plugin(tmp_path, monkeypatch):
    """A real installed distribution (a .dist-info on sys.path) with a `lakekeeper` entry point."""
    package = tmp_path / "lk_test_ep_plugin.py"
    package.write_text(
        textwrap.dedent(
            '''
            from lakekeeper_host import hookimpl
            from lakekeeper_host.registry import BackendSpec

            async def _build(config, ctx):
                return None

            @hookimpl
            def lakekeeper_event_sinks():
                return [BackendSpec(name="ep-test-sink", factory=_build)]
            '''
        )
    )
    dist = tmp_path / "lk_test_ep_plugin-1.2.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lk-test-ep-plugin\nVersion: 1.2.3\n")
    (dist / "entry_points.txt").write_text("[lakekeeper]\nep_test = lk_test_ep_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ep_test"
    sys.modules.pop("lk_test_ep_plugin", None)


def test_builtins_are_registered_as_plugins():
    pm = make_plugin_manager(load_entrypoints=False)
    names = {pm.get_name(p) for p in pm.get_plugins()}
    assert set(BUILTIN_PLUGINS) <= names
    registry = Registry.collect(pm)
    assert "allowall" in registry.authorizers and "allow-all" in registry.authorizers
    assert "postgres" in registry.secret_stores
    assert "file" in registry.storage
    assert "log" in registry.event_sinks


def test_entry_point_plugin_is_discovered_with_its_version(entry_point_plugin):
    pm = make_plugin_manager()
    registry = Registry.collect(pm)
    assert "ep-test-sink" in registry.event_sinks
    listing = {p["name"]: p for p in list_plugins(pm, registry.contributions)}
    assert listing["ep_test"]["version"] == "1.2.3"
    assert listing["ep_test"]["distribution"] == "lk-test-ep-plugin"
    assert listing["ep_test"]["provides"] == ["event-sink:ep-test-sink"]
    assert listing["ep_test"]["hooks"] == ["lakekeeper_event_sinks"]


def test_disabled_plugin_is_not_loaded(entry_point_plugin):
    pm = make_plugin_manager(disabled=[entry_point_plugin])
    assert pm.get_plugin(entry_point_plugin) is None
    assert "ep-test-sink" not in Registry.collect(pm).event_sinks


def test_disabled_plugins_come_from_configuration(entry_point_plugin):
    settings = load_settings({"LAKEKEEPER__DISABLED_PLUGINS": "ep_test,other"})
    assert settings.host.disabled_plugins == ("ep_test", "other")
    pm = make_plugin_manager(disabled=settings.host.disabled_plugins)
    assert "ep-test-sink" not in Registry.collect(pm).event_sinks


def test_misspelled_hookimpl_fails_at_startup():
    class Misspelled:
        @hookimpl
        def lakekeeper_storage_profile(self):  # missing the trailing "s"
            return []

    with pytest.raises(StartupError, match="lakekeeper_storage_profile"):
        make_plugin_manager(load_entrypoints=False, extra_plugins=[(Misspelled(), "misspelled")])


def test_duplicate_backend_name_fails_with_both_owners():
    class SecondAllowAll:
        @hookimpl
        def lakekeeper_authorizers(self):
            return [BackendSpec(name="AllowAll", factory=None)]

    pm = make_plugin_manager(load_entrypoints=False, extra_plugins=[(SecondAllowAll(), "second")])
    with pytest.raises(StartupError) as info:
        Registry.collect(pm)
    message = str(info.value)
    assert "Duplicate authorizer name 'allowall'" in message
    assert "second" in message and "lakekeeper_host.builtins.authz_allow_all" in message


def test_unknown_authz_backend_lists_valid_choices():
    pm = make_plugin_manager(load_entrypoints=False)
    settings = load_settings({"LAKEKEEPER__AUTHZ_BACKEND": "opnfga"})
    with pytest.raises(StartupError) as info:
        check_backend_selection(settings, Registry.collect(pm))
    assert str(info.value) == "LAKEKEEPER__AUTHZ_BACKEND='opnfga' is not a known backend; available: allowall"


def test_unknown_secret_backend_lists_valid_choices():
    pm = make_plugin_manager(load_entrypoints=False)
    settings = load_settings({"LAKEKEEPER__SECRET_BACKEND": "kv3"})
    with pytest.raises(StartupError, match="LAKEKEEPER__SECRET_BACKEND='kv3'.*available: postgres"):
        check_backend_selection(settings, Registry.collect(pm))


def test_test_only_storage_plugin_registers_a_new_type():
    pm = make_plugin_manager(load_entrypoints=False, extra_plugins=[(memory_storage, "test_memory_storage")])
    registry = Registry.collect(pm)
    assert registry.storage_spec("MEMORY").profile_cls is memory_storage.MemoryProfile


def test_hook_results_are_specs_not_awaitables():
    """pluggy cannot await: registration hooks must return plain lists."""
    pm = make_plugin_manager(load_entrypoints=False)
    for name in ("lakekeeper_storage_profiles", "lakekeeper_secret_stores", "lakekeeper_authorizers",
                 "lakekeeper_event_sinks", "lakekeeper_contract_checkers", "lakekeeper_task_queues"):
        for result in getattr(pm.hook, name)():
            assert isinstance(result, list), name


async def test_plugins_endpoint_lists_builtins(tmp_path):
    settings = load_settings({"LAKEKEEPER__DATA_DIR": str(tmp_path), "LAKEKEEPER__METRICS__ENABLED": "false"})
    app = create_app(settings, make_plugin_manager(load_entrypoints=False))
    async with app.test_app() as test_app:
        response = await test_app.test_client().get("/management/v1/plugins")
        assert response.status_code == 200
        plugins = {p["name"]: p for p in (await response.get_json())["plugins"]}
    storage = plugins["lakekeeper_host.builtins.storage_file"]
    assert storage["builtin"] is True
    assert storage["provides"] == ["storage:file"]
    assert storage["hooks"] == ["lakekeeper_storage_profiles"]


def test_every_hookspec_is_documented():
    """docs/hooks.md has a heading with each hook's exact signature (datasette's drift test)."""
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "hooks.md").read_text()
    pm = pluggy.PluginManager("lakekeeper")
    from lakekeeper_host import hookspecs

    pm.add_hookspecs(hookspecs)
    for name, caller in vars(pm.hook).items():
        if not name.startswith("lakekeeper_"):
            continue
        signature = f"{name}({', '.join(caller.spec.argnames)})"
        assert f"## {signature}" in docs, f"docs/hooks.md lacks a heading for {signature}"


def test_strict_config_accepts_every_setting_read_after_startup():
    """Settings that are read lazily (the task runtime's, the catalog features', the installed
    plugins') are known at the startup check, so strict mode does not refuse them."""
    pm = make_plugin_manager()
    settings = load_settings({
        "LAKEKEEPER__STRICT_CONFIG": "true",
        "LAKEKEEPER__TASK_MAX_RETRIES": "3",
        "LAKEKEEPER__ENDPOINT_STAT_FLUSH_INTERVAL": "10s",
        "LAKEKEEPER__METRICS_REPORTS__ENABLED": "false",
        "LAKEKEEPER__PG_SCHEMA": "catalog",
        "LAKEKEEPER__PG_SSL_MODE": "require",
        "LAKEKEEPER__PG_ACQUIRE_TIMEOUT": "2",
    })
    check_backend_selection(settings, Registry.collect(pm))  # raises ConfigError on an unknown key
    assert settings.unknown_keys() == []
