"""The ``pyiceberg-client`` extra (issue 25): what it installs is consistent, i.e. `pip check` has
nothing to say about boto3, botocore, aiobotocore and s3fs, and the installed set is inside the caps."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"
CLIENT_STACK = ("boto3", "botocore", "aiobotocore", "s3fs", "fsspec", "pyiceberg")


def test_installed_client_stack_is_inside_the_extra():
    extra = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["pyiceberg-client"]
    for requirement in map(Requirement, extra):
        installed = importlib.metadata.version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), f"{requirement.name} {installed}"


def test_pip_check_finds_no_conflict_in_the_client_stack():
    result = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    conflicts = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].lower() in CLIENT_STACK]
    assert conflicts == [], result.stdout
