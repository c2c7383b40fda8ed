"""What a run measures and how big: the full plan (about 20 minutes on 2 cores) and ``--quick``.

Concurrency follows Polaris (20 for namespace/table reads and creates, 10 for views; 8 readers +
2 writers for contention) except the open-model rates, scaled to a 2-core machine that hosts
server, driver and database together: read-update 50/s (Polaris 100/s), durations 30-60 s
(Polaris 5 min).
"""

from __future__ import annotations

from typing import Any

import attrs

from bench.dataset import TreeShape


@attrs.frozen
class Plan:
    quick: bool
    shape: TreeShape = TreeShape()
    workers: tuple[int, ...] = (1, 2)
    read_concurrency: int = 20
    read_tree_s: float = 20.0
    load_concurrency: int = 16
    load_table_s: float = 15.0
    db_floor_s: float = 10.0
    read_update_rate: float = 50.0
    read_update_s: float = 60.0
    commit_table_rate: float = 10.0
    commit_view_rate: float = 5.0
    create_commits_s: float = 60.0
    contention_s: float = 60.0
    append_concurrency: tuple[int, ...] = (1, 4)
    append_s: float = 15.0
    snapshot_points: tuple[int, ...] = (1, 10, 100, 1000, 10_000)
    list_points: tuple[int, ...] = (100, 1000, 10_000, 100_000)
    list_time_budget_s: float = 300.0  # then the rest is cloned in SQL (see workloads.list_curve)
    curve_samples: int = 20
    peers: tuple[str, ...] = ("sqlcatalog", "seaweedfs", "lakana")
    # wrk (compiled load generator): seconds per workload and target, connections, the workloads
    wrk_s: float = 10.0
    wrk_warmup_s: float = 2.0
    wrk_connections: int = 16
    wrk_workloads: tuple[str, ...] = ("load_table", "head_table", "list_tables", "read_tree")
    # append commits on a table that already has this many snapshots (ours vs SqlCatalog)
    history_snapshots: int = 10_000
    history_commit_s: float = 15.0
    # py-spy profile of ours (1 worker) under wrk loadTable, when py-spy is installed
    profile_s: float = 10.0

    @classmethod
    def full(cls) -> Plan:
        return cls(quick=False)

    @classmethod
    def quick_plan(cls) -> Plan:
        """Under two minutes on a busy 2-core machine: same workloads, seconds instead of minutes."""
        return cls(
            quick=True, workers=(1,), read_tree_s=2.0, load_table_s=2.0, db_floor_s=1.0, read_update_rate=20.0,
            read_update_s=3.0, create_commits_s=2.0, contention_s=3.0, append_s=2.0,
            snapshot_points=(1, 10, 100), list_points=(50, 150), list_time_budget_s=5.0,
            curve_samples=5, peers=("sqlcatalog",), wrk_s=1.0, wrk_warmup_s=0.0, history_snapshots=50,
            history_commit_s=1.0, profile_s=0.0,
        )

    def shortened(self, seconds: float) -> Plan:
        """Every timed step ``seconds`` long (open-model rates unchanged): to exercise the full
        plan's steps in a few minutes. Such a run is never the recorded full run."""
        return attrs.evolve(
            self, read_tree_s=seconds, load_table_s=seconds, db_floor_s=seconds, read_update_s=seconds,
            create_commits_s=seconds, contention_s=seconds, append_s=seconds, wrk_s=max(1.0, seconds),
            history_commit_s=seconds, profile_s=min(self.profile_s, seconds),
            list_time_budget_s=min(self.list_time_budget_s, max(seconds * 5, 5.0)))

    @property
    def is_full(self) -> bool:
        """The plan ``python -m bench run`` uses without flags: what ``latest.json`` records."""
        return self == Plan.full()

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self, value_serializer=lambda _inst, _field, value: list(value)
                            if isinstance(value, tuple) else value)
