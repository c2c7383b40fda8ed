"""`lakekeeper rotate-encryption-key` against real servers, and the warning about the default key."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from lakekeeper_host.builtins.secrets_database import (
    SecretDecryptionError,
    derive_key,
    open_sealed,
)
from lakekeeper_testing.secrets_conformance import server_database, storage_works
from lakekeeper_testing.server import CatalogServer

from .conftest import CHATTY

pytestmark = pytest.mark.slow  # runs the CLI and servers as subprocesses

NEW_KEY = "rotated-key-00112233445566778899"


def rotate(server: CatalogServer, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lakekeeper_host", "rotate-encryption-key", *args],
        env=server.environment(),
        input=stdin,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def all_rows(server: CatalogServer) -> list[dict]:
    async with server_database(server) as db:
        return await db.fetch_all("SELECT id, ciphertext FROM secret")


@pytest.mark.s3
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_rotation_keeps_every_warehouse_working(lakekeeper_server_factory, seaweed_two_users, backend):
    server = lakekeeper_server_factory(CHATTY, backend=backend)
    old_key = server.environment()["LAKEKEEPER__PG_ENCRYPTION_KEY"]
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            warehouse_ids = []
            for which in ("first", "second"):
                response = await client.post(
                    "/management/v1/warehouse",
                    json={
                        "warehouse-name": f"rotation-{which}",
                        "storage-profile": seaweed_two_users.profile("lakekeeper", f"rotation-{backend}-{which}"),
                        "storage-credential": seaweed_two_users.credential(which),
                    },
                )
                assert response.status_code == 201, response.text
                warehouse_ids.append(response.json()["warehouse-id"])
        server.stop()

        # a wrong configured key changes nothing
        server.extra_env["LAKEKEEPER__PG_ENCRYPTION_KEY"] = "not-the-key-the-secrets-use"
        refused = rotate(server, "--new-key", NEW_KEY)
        assert refused.returncode == 1 and "nothing was changed" in refused.stderr
        server.extra_env["LAKEKEEPER__PG_ENCRYPTION_KEY"] = old_key

        done = rotate(server, "--new-key-file", "-", stdin=NEW_KEY + "\n")
        assert done.returncode == 0, done.stderr
        assert "re-encrypted 2 secret(s)" in done.stdout
        assert NEW_KEY not in done.stdout + done.stderr and old_key not in done.stdout + done.stderr

        rows = await all_rows(server)
        assert len(rows) == 2
        for row in rows:
            open_sealed(derive_key(NEW_KEY), row["id"], row["ciphertext"])
            with pytest.raises(SecretDecryptionError):
                open_sealed(derive_key(old_key), row["id"], row["ciphertext"])

        # a server still configured with the old key refuses to start, saying why
        with pytest.raises(RuntimeError, match="does not decrypt the stored secrets"):
            server.start()

        server.extra_env["LAKEKEEPER__PG_ENCRYPTION_KEY"] = NEW_KEY
        server.start()
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            for warehouse_id in warehouse_ids:
                probe = await storage_works(client, warehouse_id)
                assert probe.status_code == 200 and probe.json()["valid"] is True, probe.text
            # new secrets are written under the new key
            updated = await client.post(
                f"/management/v1/warehouse/{warehouse_ids[0]}/storage-credential",
                json={"new-storage-credential": seaweed_two_users.credential("second")},
            )
            assert updated.status_code == 200, updated.text
        for row in await all_rows(server):
            open_sealed(derive_key(NEW_KEY), row["id"], row["ciphertext"])
        log = server.log_path.read_text(errors="replace")
        assert NEW_KEY not in log and old_key not in log
        assert seaweed_two_users.secret_key not in log and seaweed_two_users.second_secret_key not in log
    finally:
        server.close()


class DefaultKeyServer(CatalogServer):
    """A server started without LAKEKEEPER__PG_ENCRYPTION_KEY (the harness normally sets one)."""

    def environment(self) -> dict[str, str]:
        env = super().environment()
        del env["LAKEKEEPER__PG_ENCRYPTION_KEY"]
        return env


def test_the_default_key_is_mentioned_calmly_on_the_embedded_quickstart():
    with DefaultKeyServer() as server:
        log = server.log_path.read_text()
    assert "LAKEKEEPER__PG_ENCRYPTION_KEY is not set" in log and "THIS IS UNSAFE" not in log


def test_the_default_key_gets_a_loud_warning_on_postgres(caplog):
    """Lakekeeper's warning, for a server whose secrets live in a shared database."""
    import logging

    from lakekeeper_host.builtins.secrets_database import warn_if_default_key
    from lakekeeper_host.config import load_settings

    pg = load_settings({"LAKEKEEPER__PG_DATABASE_URL_WRITE": "postgresql://u@db/x"}).pg
    with caplog.at_level(logging.INFO):
        warn_if_default_key(pg, embedded=False)
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "THIS IS UNSAFE! LAKEKEEPER__PG_ENCRYPTION_KEY is not set" in caplog.text


def test_rotation_of_an_empty_store_and_refused_keys(tmp_path, lakekeeper_server_factory):
    server = lakekeeper_server_factory(data_dir=str(tmp_path))
    server.stop()  # the rotation command runs against a stopped server
    assert "THIS IS UNSAFE" not in server.log_path.read_text()  # a key is configured
    assert rotate(server, "--new-key", "too-short").returncode == 1
    done = rotate(server, "--new-key", NEW_KEY)
    assert done.returncode == 0 and "re-encrypted 0 secret(s)" in done.stdout
    usage = rotate(server)
    assert usage.returncode == 2 and "--new-key" in usage.stderr
