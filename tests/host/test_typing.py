"""What a plugin author reads is typed: mypy strict holds on the hook contract, the registry, the
plugin manager, the service interfaces and the built-in backends (``[tool.mypy]`` in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_plugin_facing_modules_pass_mypy_strict() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.fail("mypy is part of the test extra; install it with pip install -e '.[test]'")
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout
