"""Endpoint call statistics (hourly buckets) and warehouse statistics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

MGMT = "/management/v1"


def all_entries(response_json: dict) -> list[dict]:
    return [entry for bucket in response_json["called-endpoints"] for entry in bucket]


def test_endpoint_calls_are_counted_per_route_status_and_warehouse(http, warehouse):
    wid = warehouse["id"]
    project = http.post(f"{MGMT}/project", json={"project-name": "stats"}).json()["project-id"]
    headers = {"x-project-id": project}
    for _ in range(3):
        assert http.get(f"{MGMT}/warehouse/{wid}").status_code == 200
    assert http.get(f"{MGMT}/project", headers=headers).status_code == 200
    unknown = {"x-project-id": "00000000-0000-0000-0000-00000000dead"}
    assert http.get(f"{MGMT}/project", headers=unknown).status_code == 404

    stats = http.post(f"{MGMT}/endpoint-statistics", json={"warehouse": {"type": "warehouse-id", "id": wid}})
    assert stats.status_code == 200
    body = stats.json()
    assert set(body) == {"timestamps", "called-endpoints", "previous-page-token", "next-page-token"}
    assert len(body["timestamps"]) == len(body["called-endpoints"]) >= 1
    gets = [e for e in all_entries(body) if e["http-route"] == "GET /management/v1/warehouse/{warehouse_id}"]
    assert sum(e["count"] for e in gets) == 3
    assert all(e["warehouse-id"] == wid and e["warehouse-name"] == warehouse["name"] for e in gets)
    assert {e["status-code"] for e in gets} == {200}

    # calls without a warehouse are counted for the project they addressed
    unmapped = http.post(f"{MGMT}/endpoint-statistics", json={"warehouse": {"type": "unmapped"}}, headers=headers)
    routes = {(e["http-route"], e["status-code"]): e["count"] for e in all_entries(unmapped.json())}
    assert routes[("GET /management/v1/project", 200)] == 1
    assert all(e["warehouse-id"] is None for e in all_entries(unmapped.json()))

    only_errors = http.post(
        f"{MGMT}/endpoint-statistics", json={"warehouse": {"type": "all"}, "status-codes": [404]}
    ).json()
    assert all(e["status-code"] == 404 for e in all_entries(only_errors))

    # an explicit window in the past has nothing
    past = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    empty = http.post(
        f"{MGMT}/endpoint-statistics",
        json={"warehouse": {"type": "all"}, "range-specifier": {"type": "window", "end": past, "interval": "P1D"}},
    ).json()
    assert empty["timestamps"] == [] and empty["called-endpoints"] == []
    # page tokens step through time windows
    previous = http.post(
        f"{MGMT}/endpoint-statistics",
        json={
            "warehouse": {"type": "all"},
            "range-specifier": {"type": "page-token", "token": body["previous-page-token"]},
        },
    )
    assert previous.status_code == 200


def test_warehouse_statistics_report_table_and_view_counts(http, warehouse):
    response = http.get(f"{MGMT}/warehouse/{warehouse['id']}/statistics")
    assert response.status_code == 200
    body = response.json()
    assert body["warehouse-ident"] == warehouse["id"]
    [latest] = body["stats"]
    assert latest["number-of-tables"] == 0 and latest["number-of-views"] == 0
    assert latest["timestamp"].endswith(":00:00Z")
