"""Storage credentials: validated before they replace the old one, never echoed back.

Uses the test-only ``keyed`` storage (tests/management/plugins/lk_test_keyed_storage.py): a file
warehouse whose probe only passes with the token the storage currently accepts.
"""

from __future__ import annotations

import httpx
import pytest

MGMT = "/management/v1"


def credential(token: str) -> dict:
    return {"type": "keyed", "credential-type": "token", "token": token}


@pytest.mark.slow  # own server processes or waits out timeouts
def test_credential_replacement_and_validation(make_server, tmp_path):
    server = make_server()
    client = httpx.Client(base_url=server.url, timeout=30)
    root = tmp_path / "keyed"
    root.mkdir()
    (root / ".token").write_text("alpha")
    profile = {"type": "keyed", "root": str(root)}

    wrong = client.post(
        f"{MGMT}/warehouse",
        json={"warehouse-name": "keyed", "storage-profile": profile, "storage-credential": credential("nope")},
    )
    assert wrong.status_code == 400
    assert "lakekeeper-read-write" in wrong.json()["error"]["message"]

    created = client.post(
        f"{MGMT}/warehouse",
        json={"warehouse-name": "keyed", "storage-profile": profile, "storage-credential": credential("alpha")},
    )
    assert created.status_code == 201, created.text
    wid = created.json()["warehouse-id"]
    assert "alpha" not in created.text and "alpha" not in client.get(f"{MGMT}/warehouse/{wid}").text

    # the storage side rotates its key: the current credential stops working
    (root / ".token").write_text("beta")
    assert client.post(f"{MGMT}/warehouse/{wid}/storage/validate-access").json()["valid"] is False
    report = client.post(
        f"{MGMT}/warehouse/{wid}/storage/validate-credential", json={"new-storage-credential": credential("beta")}
    ).json()
    assert report["valid"] is True
    checks = {c["name"]: c["status"] for c in report["checks"]}
    assert checks["lakekeeper-read-write"] == "passed"

    # a credential the storage rejects is not stored; the warehouse keeps the previous one
    rejected = client.post(
        f"{MGMT}/warehouse/{wid}/storage-credential", json={"new-storage-credential": credential("gamma")}
    )
    assert rejected.status_code == 400
    (root / ".token").write_text("alpha")
    assert client.post(f"{MGMT}/warehouse/{wid}/storage/validate-access").json()["valid"] is True

    # a working one replaces it
    (root / ".token").write_text("beta")
    replaced = client.post(
        f"{MGMT}/warehouse/{wid}/storage-credential", json={"new-storage-credential": credential("beta")}
    )
    assert replaced.status_code == 200, replaced.text
    assert "beta" not in replaced.text
    assert client.post(f"{MGMT}/warehouse/{wid}/storage/validate-access").json()["valid"] is True

    # replacing the profile together with a credential, in one request
    (root / ".token").write_text("delta")
    both = client.post(
        f"{MGMT}/warehouse/{wid}/storage",
        json={"storage-profile": profile, "storage-credential": credential("delta")},
    )
    assert both.status_code == 200, both.text
    assert client.post(f"{MGMT}/warehouse/{wid}/storage/validate-access").json()["valid"] is True

    # and the server restarts with the stored (encrypted) secret intact
    server.stop()
    server.start()
    client = httpx.Client(base_url=server.url, timeout=30)
    assert client.post(f"{MGMT}/warehouse/{wid}/storage/validate-access").json()["valid"] is True
