"""docs/generic-tables.md's Lance example runs as written: its Python block, unchanged, in a fresh
interpreter against a fresh embedded server (whose default warehouse is ``demo``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.catalog.helpers import wait_for

DOC = Path(__file__).parents[2] / "docs" / "generic-tables.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_the_lance_example_runs_as_written(tmp_path, lakekeeper_server_factory):
    pytest.importorskip("pylakekeeper")
    pytest.importorskip("lance")
    [example] = python_blocks(DOC.read_text())
    script = tmp_path / "example.py"
    script.write_text(example)
    with lakekeeper_server_factory() as server:
        server.start()
        run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300, env={**os.environ, "LAKEKEEPER_URL": server.url})
        assert run.returncode == 0, run.stdout + run.stderr
        # the example ends with a drop that purges the dataset: let the purge finish before the server goes
        [demo] = httpx.get(f"{server.url}/management/v1/warehouse").json()["warehouses"]
        root = Path(demo["storage-profile"]["root"])
        wait_for(lambda: not any(path.is_file() for path in root.rglob("*")),
                 what="the purge of the example's dataset")
    assert "100 rows; closest to product 42: ['product 42'" in run.stdout
    assert "image_embeddings lance " in run.stdout
