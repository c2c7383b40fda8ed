"""docs/authorization.md's "Try it" section, run as written: a newcomer with nothing but a checkout
gets alice and bob with a grant working (issue 32).

The section's ``bash`` blocks are run in order in one shell, in an empty directory. Only the ports
are changed (to free ones, so the test cannot collide with other servers on the machine); the
``pip install`` line is checked (every path it installs exists) rather than run, since the test
environment has them installed. Every ``curl -w '%{http_code}'`` answer must be the one the doc
promises in its ``# -> NNN`` comment.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lakekeeper_testing.services import free_port

pytestmark = pytest.mark.slow  # servers in subprocesses

REPO = Path(__file__).parents[2]
DOC = REPO / "docs" / "authorization.md"
SECTION = "## Try it: alice and bob in five minutes, without any infrastructure"
PORTS = ("8181", "8080", "8090")  # the catalog, OpenFGA's HTTP API, the identity provider


def walkthrough() -> tuple[list[str], list[str]]:
    """(install lines, shell blocks) of the section."""
    text = DOC.read_text()
    assert SECTION in text, "the walk-through section was renamed: update this test with it"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    install = [b for b in blocks if b.lstrip().startswith("pip install")]
    return install, [b for b in blocks if b not in install]


def test_the_install_line_installs_what_the_walkthrough_uses():
    [install], _ = walkthrough()
    command = install.split("#", 1)[0].split()
    assert command[:2] == ["pip", "install"]
    paths = [arg for arg in command[2:] if arg != "-e"]
    assert paths and all((REPO / path / "pyproject.toml").is_file() for path in paths), paths
    names = {re.search(r'^name = "([^"]+)"', (REPO / p / "pyproject.toml").read_text(), re.M)[1] for p in paths}
    assert names == {"lakekeeper-host", "lakekeeper-authz-openfga", "lakekeeper-testing"}


def test_alice_and_bob_following_the_doc(tmp_path):
    _, blocks = walkthrough()
    script = "\n".join(blocks)
    expected = re.findall(r"^# -> (\d{3})\b", script, flags=re.M)
    assert len(expected) >= 6, "the walk-through lost its checks"
    ports = {port: str(free_port()) for port in PORTS}
    for port, free in ports.items():
        script = re.sub(rf"(?<![0-9]){port}(?![0-9])", free, script)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEKEEPER__", "ICEBERG_REST__"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # the doc relies on the defaults for these two, which may be other servers' ports on this machine
    env["LAKEKEEPER__LISTEN_PORT"] = ports["8181"]
    env["LAKEKEEPER__METRICS__PORT"] = str(free_port())
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout_file, err.open("w") as stderr_file:  # files: the `&` servers keep pipes open
        process = subprocess.Popen(
            ["bash", "-c", "set -euo pipefail\n" + script], cwd=tmp_path, env=env, stdout=stdout_file,
            stderr=stderr_file, text=True, start_new_session=True,
        )
        try:
            process.wait(timeout=600)
        finally:
            try:
                os.killpg(process.pid, signal.SIGTERM)  # the servers the walk-through left running (`&`)
            except ProcessLookupError:
                pass
    stdout, stderr = out.read_text(), err.read_text()
    assert process.returncode == 0, f"stdout:\n{stdout}\nstderr:\n{stderr[-5000:]}"
    answers = [line for line in stdout.splitlines() if re.fullmatch(r"\d{3}", line)]
    assert answers == expected, f"stdout:\n{stdout}\nstderr:\n{stderr[-5000:]}"
    # the doubles said loudly what they are
    assert stdout.count("NOT FOR PRODUCTION") == 2
