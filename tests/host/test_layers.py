"""The house's layer order holds: import-linter's contracts in pyproject.toml, checked by the real tool.

grimp (under import-linter) reads every import statement, including those inside functions, so a lazy
import cannot hide a dependency that runs the wrong way.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    lint_imports = shutil.which("lint-imports") or shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.fail("import-linter is part of the test extra; install it with pip install -e '.[test]'")
    result = subprocess.run([lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 kept, 0 broken" in result.stdout


def test_no_sql_outside_the_store() -> None:
    """SQL text lives in store/ (the forbidden-import contract covers drivers; this covers strings)."""
    offenders = []
    for path in (ROOT / "lakekeeper_host").rglob("*.py"):
        if "store" in path.relative_to(ROOT / "lakekeeper_host").parts[:1]:
            continue
        text = path.read_text()
        for keyword in ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM"):
            for line in text.splitlines():
                stripped = line.strip()
                if keyword in stripped and (stripped.startswith(('"', "'", 'f"')) or "execute(" in stripped):
                    offenders.append(f"{path.relative_to(ROOT)}: {stripped[:80]}")
    assert offenders == []
