"""Lakekeeper's immutable table properties (issue 24, parity): ``encryption.key-id`` may be set at create or by
the commit that first sets it, and set again to the same value; changing or removing it is a 400 with
Lakekeeper's error types ``ImmutablePropertyModification`` / ``ImmutablePropertyRemoval``."""

from __future__ import annotations

import pytest

from tests.catalog.helpers import error

KEY = "encryption.key-id"


def _set(value: str, **more: str) -> dict:
    return {"action": "set-properties", "updates": {KEY: value, **more}}


def test_raw_http_key_id_is_immutable(rest):
    assert rest.create_namespace("enc").status_code == 200
    created = rest.create_table("enc", "t", properties={KEY: "key-1"})
    assert created.status_code == 200, created.text
    assert created.json()["metadata"]["properties"][KEY] == "key-1"

    same = rest.commit("enc", "t", [_set("key-1", other="x")])
    assert same.status_code == 200, same.text
    assert rest.metadata("enc", "t")["properties"]["other"] == "x"

    changed = rest.commit("enc", "t", [_set("key-2")])
    assert changed.status_code == 400, changed.text
    err = error(changed)
    assert err["type"] == "ImmutablePropertyModification"
    assert KEY in err["message"]

    removed = rest.commit("enc", "t", [{"action": "remove-properties", "removals": [KEY]}])
    assert removed.status_code == 400, removed.text
    assert error(removed)["type"] == "ImmutablePropertyRemoval"

    # a rejected commit applies nothing, also not its other updates
    mixed = rest.commit("enc", "t", [{"action": "set-properties", "updates": {"third": "y"}}, _set("key-3")])
    assert mixed.status_code == 400
    properties = rest.metadata("enc", "t")["properties"]
    assert properties[KEY] == "key-1" and "third" not in properties

    # through transactions/commit too
    change = {"identifier": {"namespace": ["enc"], "name": "t"}, "requirements": [], "updates": [_set("key-4")]}
    transaction = rest.transaction([change])
    assert transaction.status_code == 400 and error(transaction)["type"] == "ImmutablePropertyModification"


def test_raw_http_first_commit_may_set_the_key(rest):
    assert rest.create_namespace("enc2").status_code == 200
    assert rest.create_table("enc2", "t").status_code == 200
    # removing a key that is not set is fine (Java and Lakekeeper ignore it)
    assert rest.commit("enc2", "t", [{"action": "remove-properties", "removals": [KEY]}]).status_code == 200
    assert rest.commit("enc2", "t", [_set("key-1")]).status_code == 200
    assert rest.commit("enc2", "t", [_set("key-2")]).status_code == 400


def test_pyiceberg_key_id_is_immutable(catalog):
    from pyiceberg.exceptions import BadRequestError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog.create_namespace("encp")
    table = catalog.create_table(
        "encp.t", Schema(NestedField(1, "id", LongType(), required=False)), properties={KEY: "key-1"}
    )
    assert table.properties[KEY] == "key-1"
    with table.transaction() as tx:  # the same value again
        tx.set_properties({KEY: "key-1", "owner": "me"})
    table = catalog.load_table("encp.t")
    assert table.properties["owner"] == "me"
    with pytest.raises(BadRequestError, match="ImmutablePropertyModification|Cannot modify immutable"):
        with table.transaction() as tx:
            tx.set_properties({KEY: "key-2"})
    with pytest.raises(BadRequestError, match="ImmutablePropertyRemoval|Cannot remove immutable"):
        with catalog.load_table("encp.t").transaction() as tx:
            tx.remove_properties(KEY)
    assert catalog.load_table("encp.t").properties[KEY] == "key-1"
