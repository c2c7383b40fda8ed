#!/usr/bin/env python
"""Write docs/configuration.md from the config classes of the host and of the plugins in plugins/.

Only the distributions under plugins/ are documented (an example or test plugin installed in the same
environment is left out). ``--check`` exits 1 when the committed file differs.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "docs" / "configuration.md"


def repo_plugin_distributions() -> list[str]:
    return sorted(
        tomllib.loads(path.read_text())["project"]["name"] for path in (REPO / "plugins").glob("*/pyproject.toml")
    )


def generate() -> str:
    from lakekeeper_host.plugins import make_plugin_manager
    from lakekeeper_host.runtime.config_reference import reference_rows, render_markdown

    pm = make_plugin_manager()
    installed = {dist.project_name for _, dist in pm.list_plugin_distinfo()}
    missing = sorted(set(repo_plugin_distributions()) - installed)
    if missing:
        raise SystemExit(f"install every plugin first (pip install -e plugins/...): missing {', '.join(missing)}")
    return render_markdown(reference_rows(pm, include=repo_plugin_distributions()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    text = generate()
    if args.check:
        if TARGET.read_text() != text:
            print(f"{TARGET} is out of date: run python scripts/gen-config-reference.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
