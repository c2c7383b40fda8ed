"""Make test-only plugins installed entry-point plugins of a ``lakekeeper serve`` subprocess.

A server finds plugins the way it does in production: through the ``lakekeeper`` entry-point
group of installed distributions. ``plugin_env`` writes a minimal ``.dist-info`` that declares
the given modules under that group and returns the ``PYTHONPATH`` that puts it (and this
repository, so ``tests.plugins.*`` imports) in front of the server.

    env = {**plugin_env(tmp_path, deny_all="tests.plugins.deny_all_contracts"), ...}
    server = lakekeeper_server_factory(env)
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def plugin_env(directory: Path, *, extra_paths: tuple[str, ...] = (), **entry_points: str) -> dict[str, str]:
    """``{"PYTHONPATH": ...}`` under which ``entry_points`` (name -> module) are installed plugins."""
    if not entry_points:
        raise ValueError("name at least one entry point")
    dist_name = "lk-test-" + "-".join(sorted(entry_points)).replace("_", "-")
    dist = Path(directory) / f"{dist_name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {module}\n" for name, module in entry_points.items())
    (dist / "entry_points.txt").write_text(f"[lakekeeper]\n{lines}")
    paths = [str(directory), str(REPO), *extra_paths, os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
