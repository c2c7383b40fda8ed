"""Benchmark suite for the lakekeeper-host Iceberg REST catalog (``python -m bench run``).

Modules: ``plan`` (sizes), ``run`` (orchestrator), ``driver`` + ``workloads`` + ``client``
(the load-driver process), ``dataset`` (Polaris tree dataset), ``floor_app`` (web-stack floor),
``processes`` (servers, RSS/CPU probes), ``peers`` (lakana-server), ``report`` (summary, plots,
RESULTS.md).
"""
