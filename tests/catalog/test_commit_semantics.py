"""What a commit leaves behind when it fails, when it races, and when its outcome is unknown.

A commit writes its metadata file first and then swaps the table's metadata location in the
database. The tests below look at both halves after every kind of outcome: the answer the client
gets, where the table points, and which files are in the table's ``metadata/`` directory.

Creates and registers end with a COMMIT too (the INSERT of the row), settled the same way: a
create whose reply was lost is a success, one that never reached the database leaves nothing
behind, and a registered metadata file -- the user's -- is never deleted.

The unknown-outcome tests need the database COMMIT itself to fail (a lost connection, a reply
that comes after ``MAX_REQUEST_TIME``), which no real database does on demand: they run the app
in-process with the test-only ``commit_faults`` plugin (tests/plugins/commit_faults.py), which
fails exactly that step. Everything else there is real, the database included. The other tests
use the shared server over HTTP.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager
from tests.catalog.helpers import SCHEMA, error
from tests.plugins.commit_faults import CommitFaults

SET_COMMENT = [{"action": "set-properties", "updates": {"comment": "changed"}}]


def metadata_files(metadata: dict[str, Any]) -> set[str]:
    """The metadata files in the table's ``metadata/`` directory (as local paths)."""
    directory = Path(urlsplit(metadata["location"]).path) / "metadata"
    return {str(p) for p in directory.glob("*.metadata.json")}


def referenced_files(metadata_location: str, metadata: dict[str, Any]) -> set[str]:
    """The current file and the files of the metadata log: all a table may keep."""
    locations = [metadata_location] + [e["metadata-file"] for e in metadata.get("metadata-log", [])]
    return {urlsplit(location).path for location in locations}


# ---------------------------------------------------------------- unknown outcome (in-process, faults)


class FaultyCatalog:
    """The in-process app with the commit_faults plugin: raw requests on one warehouse."""

    def __init__(self, client: Any, prefix: str, faults: CommitFaults, root: Path):
        self.client = client
        self.prefix = f"/catalog/v1/{prefix}"
        self.faults = faults
        self.root = root  # the warehouse's storage root

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        extra = {} if body is None else {"json": body}
        response = await self.client.open(self.prefix + path, method=method, **extra)
        return response.status_code, (await response.get_json()) or {}

    async def create_table(self, name: str) -> dict[str, Any]:
        status, body = await self.request("POST", "/namespaces/ns/tables", {"name": name, "schema": SCHEMA})
        assert status == 200, body
        return body

    async def create_view(self, name: str) -> tuple[str, Path]:
        """A new view: its metadata location and the directory of its metadata files."""
        status, body = await self.request("POST", "/namespaces/ns/views", view_body(name))
        assert status == 200, body
        return body["metadata-location"], Path(urlsplit(body["metadata"]["location"]).path) / "metadata"

    async def load(self, kind: str, name: str) -> dict[str, Any]:
        status, body = await self.request("GET", f"/namespaces/ns/{kind}/{name}")
        assert status == 200, body
        return body


def view_body(name: str, **extra: Any) -> dict[str, Any]:
    """A createView body with one SQL version."""
    return {"name": name, "schema": SCHEMA, "view-version": {
        "version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {},
        "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
        "default-namespace": ["ns"],
    }, **extra}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
async def faulty(request, tmp_path_factory) -> FaultyCatalog:
    faults = CommitFaults()
    data_dir = tmp_path_factory.mktemp("commit-faults")
    env = {"LAKEKEEPER__DATA_DIR": str(data_dir), "LAKEKEEPER__MAX_REQUEST_TIME": "2s"}
    # no background task pollers: they share this test's event loop, which the HTTP tests of this
    # module block, and nothing here needs them
    for queue in ("SOFT_DELETION", "TABULAR_PURGE", "LOG_CLEANUP", "TABLE_MAINTENANCE"):
        env[f"LAKEKEEPER__TASK_{queue}_WORKERS"] = "0"
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url_factory")()
        env |= {
            "LAKEKEEPER__PG_DATABASE_URL_WRITE": url,
            "LAKEKEEPER__PG_DATABASE_URL_READ": url,
            "LAKEKEEPER__DEBUG__MIGRATE_BEFORE_SERVE": "true",
            "LAKEKEEPER__PG_ENCRYPTION_KEY": "test-encryption-key-0123456789abcdef",
        }
    pm = make_plugin_manager(load_entrypoints=False, extra_plugins=[(faults, "commit_faults")])
    app = create_app(load_settings(env), pm)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        if request.param == "postgres":
            await client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
        created = await client.post("/management/v1/warehouse", json={
            "warehouse-name": "faults", "storage-profile": {"type": "file", "root": str(data_dir / "wh")},
        })
        assert created.status_code == 201, await created.get_data()
        catalog = FaultyCatalog(client, (await created.get_json())["warehouse-id"], faults, data_dir / "wh")
        status, body = await catalog.request("POST", "/namespaces", {"namespace": ["ns"]})
        assert status == 200, body
        yield catalog


@pytest.fixture
def faults(faulty) -> CommitFaults:
    faulty.faults.fired.clear()
    yield faulty.faults
    faulty.faults.disarm()
    faulty.faults.heal()


async def test_lost_commit_reply_when_the_commit_landed_is_a_success(faulty, faults):
    created = await faulty.create_table("reply-lost")
    faults.arm("reply-lost")
    status, body = await faulty.request("POST", "/namespaces/ns/tables/reply-lost", {"updates": SET_COMMENT})
    assert faults.fired == ["reply-lost"]
    assert status == 200, body
    loaded = await faulty.load("tables", "reply-lost")
    assert loaded["metadata-location"] == body["metadata-location"] != created["metadata-location"]
    assert loaded["metadata"]["properties"]["comment"] == "changed"
    # the file the table points at is there
    assert metadata_files(loaded["metadata"]) == referenced_files(loaded["metadata-location"], loaded["metadata"])


async def test_commit_lost_before_the_database_is_a_409_and_leaves_no_file(faulty, faults):
    """A two-table transaction whose COMMIT never reached the database: both tables unchanged."""
    tables = {name: await faulty.create_table(name) for name in ("lost-a", "lost-b")}
    faults.arm("commit-lost")
    status, body = await faulty.request("POST", "/transactions/commit", {"table-changes": [
        {"identifier": {"namespace": ["ns"], "name": name}, "updates": SET_COMMENT} for name in tables
    ]})
    assert faults.fired == ["commit-lost"]
    assert status == 409 and body["error"]["type"] == "CommitFailedException", body
    assert not body["error"]["message"].startswith("Commit failed")
    for name, created in tables.items():
        loaded = await faulty.load("tables", name)
        assert loaded["metadata-location"] == created["metadata-location"]
        assert "comment" not in loaded["metadata"]["properties"]
        assert metadata_files(loaded["metadata"]) == referenced_files(created["metadata-location"], {})


async def test_unknown_commit_outcome_is_commit_state_unknown_and_keeps_the_file(faulty, faults):
    """The COMMIT's reply is lost and the database is unreachable afterwards: the server cannot
    tell, answers 500 CommitStateUnknownException (clients then keep their files too) and keeps
    its metadata file -- which the table does point at once the database is back."""
    await faulty.create_table("unknown")
    faults.arm("reply-lost-db-down")
    status, body = await faulty.request("POST", "/namespaces/ns/tables/unknown", {"updates": SET_COMMENT})
    assert faults.fired == ["reply-lost-db-down"]
    assert status == 500 and body["error"]["type"] == "CommitStateUnknownException", body
    faults.heal()
    loaded = await faulty.load("tables", "unknown")
    assert loaded["metadata"]["properties"]["comment"] == "changed"
    assert Path(urlsplit(loaded["metadata-location"]).path).is_file()
    assert metadata_files(loaded["metadata"]) == referenced_files(loaded["metadata-location"], loaded["metadata"])


async def test_commit_cancelled_by_max_request_time_after_it_landed_is_a_success(faulty, faults):
    """The COMMIT's reply comes after MAX_REQUEST_TIME (2 s here) cancelled the request: the
    commit landed, so the answer is 200, not a 408 that would make a client delete its files."""
    created = await faulty.create_table("late")
    faults.arm("reply-late")
    status, body = await faulty.request("POST", "/namespaces/ns/tables/late", {"updates": SET_COMMENT})
    assert faults.fired == ["reply-late"]
    assert status == 200, body
    loaded = await faulty.load("tables", "late")
    assert loaded["metadata-location"] == body["metadata-location"] != created["metadata-location"]
    assert Path(urlsplit(loaded["metadata-location"]).path).is_file()


async def test_view_commit_with_an_unknown_outcome_is_settled_like_a_table_commit(faulty, faults):
    before, view_files = await faulty.create_view("v")

    faults.arm("commit-lost")
    status, body = await faulty.request("POST", "/namespaces/ns/views/v", {"updates": SET_COMMENT})
    assert status == 409 and body["error"]["type"] == "CommitFailedException", body
    assert (await faulty.load("views", "v"))["metadata-location"] == before
    assert {p.name for p in view_files.iterdir()} == {Path(before).name}  # its file was deleted

    faults.arm("reply-lost")
    status, body = await faulty.request("POST", "/namespaces/ns/views/v", {"updates": SET_COMMENT})
    assert status == 200, body
    loaded = await faulty.load("views", "v")
    assert loaded["metadata-location"] == body["metadata-location"] != before
    assert loaded["metadata"]["properties"]["comment"] == "changed"
    assert Path(urlsplit(loaded["metadata-location"]).path).is_file()
    assert faults.fired == ["commit-lost", "reply-lost"]


async def test_retries_exhausted_is_a_409_whose_message_reads_once(faulty, faults):
    """Every compare-and-swap loses (the plugin answers each as if another commit had just moved
    the table): after the server's retries, a 409 without the "Commit failed: " the Java client
    puts in front, no file of any attempt left behind, and the table unchanged."""
    created = await faulty.create_table("contended")
    faults.arm("lose-race")
    status, body = await faulty.request("POST", "/namespaces/ns/tables/contended", {"updates": SET_COMMENT})
    assert len(faults.fired) == 10  # every attempt raced
    assert status == 409 and body["error"]["type"] == "CommitFailedException", body
    message = body["error"]["message"]
    assert message.startswith("Table ns.contended was changed concurrently") and "Commit failed" not in message
    faults.disarm()
    loaded = await faulty.load("tables", "contended")
    assert loaded["metadata-location"] == created["metadata-location"]
    assert metadata_files(loaded["metadata"]) == referenced_files(created["metadata-location"], {})


async def test_view_commit_that_always_loses_the_race_is_a_409_and_leaves_the_view_as_it_was(faulty, faults):
    """The view path of the table test above: every compare-and-swap of a view commit loses, the
    server retries against the latest metadata, gives up with 409, and no attempt's file remains."""
    before, view_files = await faulty.create_view("contended-view")
    faults.arm("lose-race")
    status, body = await faulty.request("POST", "/namespaces/ns/views/contended-view", {"updates": SET_COMMENT})
    faults.disarm()
    assert faults.fired == ["lose-race"] * 10  # every attempt raced
    assert status == 409 and body["error"]["type"] == "CommitFailedException", body
    assert body["error"]["message"].startswith("View ns.contended-view was changed concurrently")
    loaded = await faulty.load("views", "contended-view")
    assert loaded["metadata-location"] == before
    assert "comment" not in loaded["metadata"]["properties"]
    assert {p.name for p in view_files.iterdir()} == {Path(before).name}


# ---------------------------------------------------------------- creates and registers with an unknown outcome


def create_transaction(location: str, table_uuid: str | None = None) -> dict[str, Any]:
    """The commit of Java's create transaction: ``assert-create`` and the whole new table."""
    return {"requirements": [{"type": "assert-create"}], "updates": [
        {"action": "assign-uuid", "uuid": table_uuid or str(uuid.uuid4())},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": SCHEMA, "last-column-id": 2},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": location},
    ]}


def files_under(location: str) -> set[str]:
    """The metadata files in ``<location>/metadata`` (as local paths)."""
    return {str(p) for p in (Path(urlsplit(location).path) / "metadata").glob("*.metadata.json")}


async def user_metadata_file(faulty: FaultyCatalog, kind: str, location: str) -> str:
    """A metadata file for a new table or view at ``location``, written the way a user prepares
    one to register: a copy of a created one's, with a new location and uuid."""
    template = f"template-{uuid.uuid4().hex[:8]}"
    if kind == "tables":
        metadata = (await faulty.create_table(template))["metadata"]
        metadata |= {"location": location, "table-uuid": str(uuid.uuid4())}
    else:
        status, body = await faulty.request("POST", "/namespaces/ns/views", view_body(template))
        assert status == 200, body
        metadata = body["metadata"] | {"location": location, "view-uuid": str(uuid.uuid4())}
    path = Path(urlsplit(location).path) / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(metadata))
    return f"file://{path}"


async def create_request(
    faulty: FaultyCatalog, operation: str, name: str, location: str
) -> tuple[str, str, dict[str, Any], str | None]:
    """(kind, path, body, the user's metadata file for a register) of one create at ``location``."""
    if operation == "create-table":
        return "tables", "/namespaces/ns/tables", {"name": name, "schema": SCHEMA, "location": location}, None
    if operation == "create-transaction":  # a commit that creates the table (no stage-create before)
        return "tables", f"/namespaces/ns/tables/{name}", create_transaction(location), None
    if operation == "create-view":
        return "views", "/namespaces/ns/views", view_body(name, location=location), None
    kind = "tables" if operation == "register-table" else "views"
    registered = await user_metadata_file(faulty, kind, location)
    path = "/namespaces/ns/register" if kind == "tables" else "/namespaces/ns/register-view"
    return kind, path, {"name": name, "metadata-location": registered}, registered


@pytest.mark.parametrize("mode", ["reply-lost", "commit-lost", "reply-lost-db-down"])
@pytest.mark.parametrize(
    "operation", ["create-table", "create-transaction", "register-table", "create-view", "register-view"]
)
async def test_create_with_an_unknown_commit_outcome(faulty, faults, operation, mode):
    """The COMMIT of a create's INSERT fails.

    - ``reply-lost``: the row is there, so the answer is a success and the table or view loads,
      pointing at a file that exists;
    - ``commit-lost``: nothing was created: an error a client may retry on -- 503 (a 409 from a
      create or register endpoint reads "already exists" to clients), 409 CommitFailed from a
      commit --, the name is free and no file is left, except a registered file: the user's;
    - ``reply-lost-db-down``: 500 CommitStateUnknownException and the file kept: once the
      database is back, the table or view is there and points at it.
    """
    name = f"{operation}-{mode}"
    location = f"file://{faulty.root}/created/{name}"
    kind, path, body, registered = await create_request(faulty, operation, name, location)
    faults.arm(mode)
    status, answer = await faulty.request("POST", path, body)
    assert faults.fired == [mode]

    if mode == "commit-lost":
        expected = (409, "CommitFailedException") if operation == "create-transaction" else (
            503, "ServiceUnavailableException")
        assert (status, answer["error"]["type"]) == expected, answer
        assert (await faulty.request("GET", f"/namespaces/ns/{kind}/{name}"))[0] == 404
        assert files_under(location) == ({urlsplit(registered).path} if registered else set())
        return
    if mode == "reply-lost-db-down":
        assert status == 500 and answer["error"]["type"] == "CommitStateUnknownException", answer
        faults.heal()
    else:
        assert status == 200, answer
    loaded = await faulty.load(kind, name)
    if mode == "reply-lost":
        assert loaded["metadata-location"] == answer["metadata-location"]
    if registered:
        assert loaded["metadata-location"] == registered
    assert files_under(location) == {urlsplit(loaded["metadata-location"]).path}


async def test_create_cancelled_by_max_request_time_after_it_landed_is_a_success(faulty, faults):
    faults.arm("reply-late")
    status, body = await faulty.request("POST", "/namespaces/ns/tables", {"name": "late-create", "schema": SCHEMA})
    assert faults.fired == ["reply-late"]
    assert status == 200, body
    loaded = await faulty.load("tables", "late-create")
    assert loaded["metadata-location"] == body["metadata-location"]
    assert Path(urlsplit(body["metadata-location"]).path).is_file()


async def test_stage_create_with_an_unknown_commit_outcome_can_be_retried_and_completed(faulty, faults):
    """stage-create (Spark CTAS, DuckDB) writes no file, only a staged row. A COMMIT that never
    reached the database is a 503 the client may retry; a retry whose reply is lost is a
    success, and the create transaction's commit then completes the table it staged."""
    stage = {"name": "staged", "schema": SCHEMA, "stage-create": True}
    faults.arm("commit-lost")
    status, body = await faulty.request("POST", "/namespaces/ns/tables", stage)
    assert status == 503 and body["error"]["type"] == "ServiceUnavailableException", body
    faults.arm("reply-lost")
    status, body = await faulty.request("POST", "/namespaces/ns/tables", stage)
    assert faults.fired == ["commit-lost", "reply-lost"]
    assert status == 200 and body["metadata-location"] is None, body
    staged = body["metadata"]
    status, body = await faulty.request(
        "POST", "/namespaces/ns/tables/staged", create_transaction(staged["location"], staged["table-uuid"])
    )
    assert status == 200, body
    loaded = await faulty.load("tables", "staged")
    assert loaded["metadata"]["table-uuid"] == staged["table-uuid"]
    assert files_under(staged["location"]) == {urlsplit(loaded["metadata-location"]).path}


# ---------------------------------------------------------------- atomic transactions (shared server)


def _change(name: str, updates: list[dict], requirements: list[dict] | None = None) -> dict[str, Any]:
    return {"identifier": {"namespace": ["ns"], "name": name}, "updates": updates, "requirements": requirements or []}


def test_transaction_is_all_or_nothing_when_the_second_tables_requirement_fails(rest):
    rest.create_namespace("ns")
    first = rest.create_table("ns", "first").json()
    rest.create_table("ns", "second")
    response = rest.transaction([
        _change("first", SET_COMMENT),
        _change("second", SET_COMMENT, [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}]),
    ])
    assert response.status_code == 409 and error(response)["type"] == "CommitFailedException", response.text
    assert "UUID does not match" in error(response)["message"]
    loaded = rest.load("ns", "first").json()
    assert loaded["metadata-location"] == first["metadata-location"]
    assert "comment" not in loaded["metadata"]["properties"]
    assert metadata_files(loaded["metadata"]) == referenced_files(first["metadata-location"], {})


def test_transaction_is_all_or_nothing_when_the_second_table_fails_inside_the_database(rest):
    """The second table's change fails in the database transaction, after the first table's swap
    ran in it (a location that overlaps a third table): the first swap is rolled back too and
    its new metadata file deleted."""
    rest.create_namespace("ns")
    first = rest.create_table("ns", "first").json()
    rest.create_table("ns", "second")
    taken = rest.create_table("ns", "third").json()["metadata"]["location"]
    response = rest.transaction([
        _change("first", SET_COMMENT),
        _change("second", [{"action": "set-location", "location": taken}]),
    ])
    assert response.status_code == 409 and error(response)["type"] == "LocationAlreadyTaken", response.text
    loaded = rest.load("ns", "first").json()
    assert loaded["metadata-location"] == first["metadata-location"]
    assert metadata_files(loaded["metadata"]) == referenced_files(first["metadata-location"], {})


# ---------------------------------------------------------------- concurrent server-side retry


def test_parallel_commits_to_one_table_lose_nothing_and_leave_no_files_behind(rest, server, warehouse):
    """16 clients set one property each on the same table at once, without conflicting
    requirements: each answer is 200 or 409 (retries exhausted), every 200 is in the final
    metadata and no 409 is, and the metadata directory holds exactly the current file plus the
    log the table keeps (``write.metadata.previous-versions-max`` = 3; older ones are deleted)."""
    writers = 16
    rest.create_namespace("ns")
    created = rest.create_table("ns", "hot", properties={"write.metadata.previous-versions-max": "3"}).json()
    table_uuid = created["metadata"]["table-uuid"]
    barrier = threading.Barrier(writers)
    answers: dict[int, httpx.Response] = {}

    def commit(i: int) -> None:
        with httpx.Client(base_url=f"{server.url}/catalog/v1/{warehouse['id']}", timeout=120) as client:
            barrier.wait()
            answers[i] = client.post("/namespaces/ns/tables/hot", json={
                "requirements": [{"type": "assert-table-uuid", "uuid": table_uuid}],
                "updates": [{"action": "set-properties", "updates": {f"writer-{i}": str(i)}}],
            })

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert {a.status_code for a in answers.values()} <= {200, 409}, {i: a.text for i, a in answers.items()}
    accepted = {i for i, a in answers.items() if a.status_code == 200}
    assert accepted
    for i, answer in answers.items():
        if answer.status_code == 409:
            assert error(answer)["type"] == "CommitFailedException"
            assert not error(answer)["message"].startswith("Commit failed")
        else:
            assert answer.json()["metadata"]["properties"][f"writer-{i}"] == str(i)
    final = rest.load("ns", "hot").json()
    properties = final["metadata"]["properties"]
    assert {k for k in properties if k.startswith("writer-")} == {f"writer-{i}" for i in accepted}
    assert len(final["metadata"]["metadata-log"]) == min(3, len(accepted))
    assert metadata_files(final["metadata"]) == referenced_files(final["metadata-location"], final["metadata"])


# ---------------------------------------------------------------- update actions


KEY_1 = {"key-id": "k1", "encrypted-key-metadata": "AAECAw==", "encrypted-by-id": "kms-master",
         "properties": {"algorithm": "AES_GCM_256"}}
KEY_2 = {"key-id": "k2", "encrypted-key-metadata": "BAUGBw=="}


def _stored(location: str) -> dict[str, Any]:
    """The metadata file itself, as engines read it."""
    data = Path(unquote(urlsplit(location).path)).read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def test_encryption_keys_are_added_kept_and_removed_on_v3_tables(rest, catalog):
    """``add-encryption-key`` / ``remove-encryption-key`` (format v3): the keys live in the
    metadata's ``encryption-keys``, survive later commits, and follow Java's leniency (an id that
    is already there, or a key that is not, changes nothing)."""
    rest.create_namespace("ns")
    created = rest.create_table("ns", "secret", properties={"format-version": "3"}).json()
    added = rest.commit("ns", "secret", [
        {"action": "add-encryption-key", "encryption-key": KEY_1},
        {"action": "add-encryption-key", "encryption-key": KEY_2},
    ])
    assert added.status_code == 200, added.text
    assert added.json()["metadata"]["encryption-keys"] == [KEY_1, KEY_2]
    assert _stored(added.json()["metadata-location"])["encryption-keys"] == [KEY_1, KEY_2]

    again = rest.commit("ns", "secret", [{"action": "add-encryption-key", "encryption-key": KEY_1 | {
        "encrypted-key-metadata": "ZZZZ"}}])
    assert again.status_code == 200
    assert again.json()["metadata-location"] == added.json()["metadata-location"]  # nothing changed

    later = rest.commit("ns", "secret", [{"action": "set-properties", "updates": {"owner": "ops"}}])
    assert later.json()["metadata"]["encryption-keys"] == [KEY_1, KEY_2]  # read back from the database
    assert catalog.load_table(("ns", "secret")).metadata.format_version == 3  # PyIceberg still loads it

    removed = rest.commit("ns", "secret", [
        {"action": "remove-encryption-key", "key-id": "k1"},
        {"action": "remove-encryption-key", "key-id": "never-there"},
    ])
    assert removed.status_code == 200, removed.text
    assert removed.json()["metadata"]["encryption-keys"] == [KEY_2]
    last = rest.commit("ns", "secret", [{"action": "remove-encryption-key", "key-id": "k2"}]).json()
    assert "encryption-keys" not in last["metadata"]
    assert "encryption-keys" not in _stored(last["metadata-location"])
    assert last["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]


def test_encryption_keys_need_format_v3_and_a_well_formed_key(rest):
    rest.create_namespace("ns")
    created = rest.create_table("ns", "v2", properties={"format-version": "2"}).json()
    refused = rest.commit("ns", "v2", [{"action": "add-encryption-key", "encryption-key": KEY_1}])
    assert refused.status_code == 400
    assert error(refused)["message"] == (
        "Invalid table update: Cannot add an encryption key to a v2 table: encryption keys need format version 3"
    )
    malformed = rest.commit("ns", "v2", [{"action": "add-encryption-key", "encryption-key": {"key-id": "k"}}])
    assert malformed.status_code == 400
    assert "encrypted-key-metadata" in error(malformed)["message"]
    assert rest.load("ns", "v2").json()["metadata-location"] == created["metadata-location"]


def test_registered_metadata_keeps_its_encryption_keys(rest):
    rest.create_namespace("ns")
    source = rest.create_table("ns", "source", properties={"format-version": "3"}).json()
    keyed = rest.commit("ns", "source", [{"action": "add-encryption-key", "encryption-key": KEY_1}]).json()
    assert rest.http.delete("/namespaces/ns/tables/source", params={"purgeRequested": "false"}).status_code == 204
    registered = rest.http.post(
        "/namespaces/ns/register", json={"name": "again", "metadata-location": keyed["metadata-location"]}
    )
    assert registered.status_code == 200, registered.text
    assert registered.json()["metadata"]["encryption-keys"] == [KEY_1]
    assert registered.json()["metadata"]["table-uuid"] == source["metadata"]["table-uuid"]


def _snapshot(snapshot_id: int, sequence_number: int, location: str, parent: int | None = None) -> dict[str, Any]:
    snapshot = {
        "snapshot-id": snapshot_id, "sequence-number": sequence_number, "timestamp-ms": int(time.time() * 1000),
        "manifest-list": f"{location}/metadata/snap-{snapshot_id}.avro", "summary": {"operation": "append"},
        "schema-id": 0,
    }
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    return snapshot


def _statistics(snapshot_id: int, location: str) -> dict[str, Any]:
    return {
        "snapshot-id": snapshot_id, "statistics-path": f"{location}/metadata/stats-{snapshot_id}.puffin",
        "file-size-in-bytes": 100, "file-footer-size-in-bytes": 10,
        "blob-metadata": [{"type": "apache-datasketches-theta-v1", "snapshot-id": snapshot_id,
                           "sequence-number": 1, "fields": [1], "properties": {"ndv": "3"}}],
    }


def _partition_statistics(snapshot_id: int, location: str) -> dict[str, Any]:
    return {"snapshot-id": snapshot_id, "file-size-in-bytes": 50,
            "statistics-path": f"{location}/metadata/partition-stats-{snapshot_id}.parquet"}


def test_statistics_and_remove_snapshots_commits_show_in_the_loaded_metadata(rest):
    rest.create_namespace("ns")
    location = rest.create_table("ns", "t").json()["metadata"]["location"]

    def commit(*updates: dict) -> dict[str, Any]:
        response = rest.commit("ns", "t", list(updates))
        assert response.status_code == 200, response.text
        loaded = rest.metadata("ns", "t")
        assert loaded == response.json()["metadata"]
        return loaded

    def main(snapshot_id: int) -> dict:
        return {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}

    commit({"action": "add-snapshot", "snapshot": _snapshot(1, 1, location)}, main(1))
    commit({"action": "add-snapshot", "snapshot": _snapshot(2, 2, location, parent=1)}, main(2))

    md = commit(
        {"action": "set-statistics", "statistics": _statistics(1, location)},
        {"action": "set-statistics", "statistics": _statistics(2, location)},
        {"action": "set-partition-statistics", "partition-statistics": _partition_statistics(1, location)},
        {"action": "set-partition-statistics", "partition-statistics": _partition_statistics(2, location)},
    )
    assert sorted(s["snapshot-id"] for s in md["statistics"]) == [1, 2]
    assert md["statistics"][0]["blob-metadata"][0]["properties"] == {"ndv": "3"}
    assert sorted(s["snapshot-id"] for s in md["partition-statistics"]) == [1, 2]

    # replacing the statistics of a snapshot keeps one file per snapshot
    replaced = {**_statistics(2, location), "statistics-path": f"{location}/metadata/stats-2-b.puffin"}
    md = commit({"action": "set-statistics", "statistics": replaced})
    assert [s["statistics-path"] for s in md["statistics"] if s["snapshot-id"] == 2] == [replaced["statistics-path"]]

    md = commit({"action": "remove-statistics", "snapshot-id": 2},
                {"action": "remove-partition-statistics", "snapshot-id": 2})
    assert [s["snapshot-id"] for s in md["statistics"]] == [1]
    assert [s["snapshot-id"] for s in md["partition-statistics"]] == [1]
    # removing statistics that are not there changes nothing (as in Java)
    unchanged = rest.commit("ns", "t", [{"action": "remove-statistics", "snapshot-id": 2},
                                        {"action": "remove-partition-statistics", "snapshot-id": 2}])
    assert unchanged.status_code == 200 and unchanged.json()["metadata"] == md

    # removing snapshot 1 drops its statistics and partition statistics and its log entry
    md = commit({"action": "remove-snapshots", "snapshot-ids": [1]})
    assert [s["snapshot-id"] for s in md["snapshots"]] == [2]
    assert md["snapshots"][0].get("parent-snapshot-id") is None
    assert [e["snapshot-id"] for e in md["snapshot-log"]] == [2]
    assert md["statistics"] == [] and md["partition-statistics"] == []
    assert md["refs"]["main"]["snapshot-id"] == 2 and md["current-snapshot-id"] == 2
