"""``LAKEKEEPER__KV2__*`` in its three spellings, and the plugin's registration."""

from __future__ import annotations

import json

import pytest

from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager
from lakekeeper_host.registry import Registry, StartupError
from lakekeeper_secrets_vault import Kv2Settings

PASSWORD = "p@ss-w0rd-for-tests"
NESTED = {
    "LAKEKEEPER__KV2__URL": "http://vault:8200/",
    "LAKEKEEPER__KV2__USER": "lakekeeper",
    "LAKEKEEPER__KV2__PASSWORD": PASSWORD,
    "LAKEKEEPER__KV2__SECRET_MOUNT": "kv/",
}


def kv2(env: dict[str, str]):
    settings = load_settings(env)
    section = settings.section(Kv2Settings)
    assert settings.unknown_keys() == []
    return section.require()


@pytest.mark.parametrize(
    "env",
    [
        NESTED,
        {"LAKEKEEPER__KV2": f"{{url=http://vault:8200,user=lakekeeper,password={PASSWORD},secret_mount=kv}}"},
        {
            "LAKEKEEPER__KV2": json.dumps(
                {"url": "http://vault:8200", "user": "lakekeeper", "password": PASSWORD, "secret_mount": "kv"}
            )
        },
    ],
    ids=["nested", "compound", "json"],
)
def test_every_spelling_gives_the_same_config(env):
    config = kv2(env)
    assert (config.url, config.user, config.secret_mount) == ("http://vault:8200", "lakekeeper", "kv")
    assert config.password.get() == PASSWORD
    assert PASSWORD not in repr(config) and PASSWORD not in repr(load_settings(env).section(Kv2Settings))


def test_missing_keys_are_named():
    with pytest.raises(StartupError, match="LAKEKEEPER__KV2__PASSWORD, LAKEKEEPER__KV2__SECRET_MOUNT"):
        kv2({"LAKEKEEPER__KV2__URL": "http://vault:8200", "LAKEKEEPER__KV2__USER": "u"})
    with pytest.raises(StartupError, match="LAKEKEEPER__KV2__URL"):
        kv2({})


def test_bad_values_are_explained_without_echoing_the_password():
    with pytest.raises(StartupError, match="must be an http:// or https:// URL"):
        kv2({**NESTED, "LAKEKEEPER__KV2__URL": "vault:8200"})
    with pytest.raises(StartupError) as raised:
        kv2({"LAKEKEEPER__KV2": f"{{url=http://v,password={PASSWORD}"})
    assert PASSWORD not in str(raised.value)


def test_the_plugin_registers_kv2_and_its_alias_vault():
    registry = Registry.collect(make_plugin_manager())
    assert registry.secret_store("kv2") is registry.secret_store("VAULT")
    assert registry.secret_store("kv2").config_cls is Kv2Settings
