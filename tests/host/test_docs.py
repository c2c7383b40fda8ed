"""Documentation a user relies on stays true (issue 25): the generated configuration reference matches
the config classes, and the deployment files parse and call commands the CLI has."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]


def test_configuration_reference_is_up_to_date():
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen-config-reference.py"), "--check"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr + result.stdout


def test_configuration_reference_names_host_and_plugin_variables():
    from lakekeeper_host.plugins import make_plugin_manager
    from lakekeeper_host.runtime.config_reference import reference_rows

    rows = {row.name: row for row in reference_rows(make_plugin_manager())}
    assert rows["LAKEKEEPER__LISTEN_PORT"].default == "8181" and rows["LAKEKEEPER__LISTEN_PORT"].reader == "host"
    assert rows["LAKEKEEPER__CACHE__SECRETS__CAPACITY"].default == "500"  # the section's own default, not the class's
    assert rows["LAKEKEEPER__PG_ENCRYPTION_KEY_FILE"].type == "path"
    assert rows["LAKEKEEPER__REQUIRE_POSTGRES"].meaning.startswith("production")
    assert rows["LAKEKEEPER__NATS_ADDRESS"].reader == "lakekeeper-events-nats"
    assert "lakekeeper-storage-s3" in rows["LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS"].reader
    committed = (REPO / "docs" / "configuration.md").read_text()
    assert "`LAKEKEEPER__KV2`" in committed and "`LAKEKEEPER__KAFKA_TOPIC`" in committed


def test_every_configuration_variable_has_a_meaning_a_default_and_an_example():
    """docs/configuration.md leaves no cell blank: each variable says what it means, what it is when
    unset and what a value looks like (issue 32). A new setting needs a comment above its field, and
    an ``example:`` comment unless it is a boolean or has a fixed set of values."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        generator = __import__("gen-config-reference")
    finally:
        sys.path.remove(str(REPO / "scripts"))
    from lakekeeper_host.plugins import make_plugin_manager
    from lakekeeper_host.runtime.config_reference import reference_rows

    rows = reference_rows(make_plugin_manager(), include=generator.repo_plugin_distributions())
    blank = [f"{row.name} ({row.reader}): " + ", ".join(
        what for what, value in (("meaning", row.meaning), ("default", row.default), ("example", row.example))
        if not value.strip()) for row in rows if not (row.meaning.strip() and row.default and row.example.strip())]
    assert not blank, "variables with blank cells:\n" + "\n".join(blank)
    table = [line for line in (REPO / "docs" / "configuration.md").read_text().splitlines()
             if line.startswith("| `LAKEKEEPER__")]
    assert len(table) == len(rows)
    for line in table:
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        assert len(cells) == 6 and all(cells), line


def _lakekeeper_subcommands() -> set[str]:
    from lakekeeper_host.cli import COMMANDS

    return set(COMMANDS) | {"version"}


def _known_variables() -> set[str]:
    from lakekeeper_host.plugins import make_plugin_manager
    from lakekeeper_host.runtime.config_reference import reference_rows

    return {row.name for row in reference_rows(make_plugin_manager())}


def test_containerfile_calls_real_commands_and_variables():
    import json
    import shlex

    text = (REPO / "deploy" / "Containerfile").read_text().replace("\\\n", " ")
    instructions = [line.split(None, 1) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    by_name: dict[str, list[str]] = {}
    for name, rest in instructions:
        by_name.setdefault(name.upper(), []).append(rest)
    assert json.loads(by_name["ENTRYPOINT"][0]) == ["lakekeeper"]
    assert json.loads(by_name["CMD"][0])[0] in _lakekeeper_subcommands()
    healthcheck = json.loads(by_name["HEALTHCHECK"][0].split("CMD", 1)[1])
    assert healthcheck[0] == "lakekeeper" and healthcheck[1] in _lakekeeper_subcommands()
    env_names = {token.split("=", 1)[0] for line in by_name["ENV"] for token in shlex.split(line)}
    assert env_names and env_names <= _known_variables()
    assert "LAKEKEEPER__REQUIRE_POSTGRES" in env_names
    # every directory it copies and installs exists in the checkout
    for line in by_name["COPY"]:
        for source in line.split()[:-1]:
            assert (REPO / source).exists(), source
    import tomllib

    for argument in by_name["RUN"][0].split("pip install --no-cache-dir", 1)[1].split("&&")[0].split():
        path, _, extras = argument.strip("\"'").partition("[")  # ".[fast]": the checkout with an extra
        assert (REPO / path / "pyproject.toml").is_file(), path
        project = tomllib.loads((REPO / path / "pyproject.toml").read_text())["project"]
        declared = project.get("optional-dependencies", {})
        assert all(extra in declared for extra in filter(None, extras.rstrip("]").split(","))), argument


def test_kubernetes_manifest_parses_and_runs_real_commands():
    import yaml

    documents = [doc for doc in yaml.safe_load_all((REPO / "deploy" / "k8s" / "lakekeeper.yaml").read_text()) if doc]
    kinds = {doc["kind"]: doc for doc in documents}
    assert set(kinds) == {"Job", "Deployment", "Service"}
    deployment = kinds["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert kinds["Service"]["spec"]["selector"].items() <= pod_labels.items()

    secret = yaml.safe_load((REPO / "deploy" / "k8s" / "secret.example.yaml").read_text())
    known = _known_variables()
    for workload in (kinds["Job"], deployment):
        pod = workload["spec"]["template"]["spec"]
        for container in pod.get("initContainers", []) + pod["containers"]:
            assert container["args"][0] in _lakekeeper_subcommands(), container["name"]
            for variable in container.get("env", []):
                assert variable["name"] in known, variable["name"]
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"]
    server = deployment["spec"]["template"]["spec"]["containers"][0]
    assert server["readinessProbe"]["httpGet"]["path"] == "/health"
    # the flags the manifest passes exist on the subcommands
    from lakekeeper_host.cli import build_parser

    for workload in (kinds["Job"], deployment):
        pod = workload["spec"]["template"]["spec"]
        for container in pod.get("initContainers", []) + pod["containers"]:
            build_parser().parse_args(container["args"])


def test_docs_link_to_files_that_exist():
    import re

    for page in [REPO / "docs" / "deployment.md", *(REPO / "docs" / "plugins").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.name}: {target}"
    plugin_pages = {p.stem for p in (REPO / "docs" / "plugins").glob("*.md")}
    assert plugin_pages == {p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file()}


# ---------------------------------------------------------------- links (issue 32)

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]


def _anchors(path: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens."""
    anchors, in_code = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip()
            custom = re.search(r"\{\s*#([\w-]+)", title)
            if custom:
                anchors.add(custom[1])
            anchors.add(re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-"))
    return anchors


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # code blocks hold no links
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in _LINK.findall(text)]


def test_relative_links_in_the_readme_and_docs_resolve():
    """Every relative link (and its #anchor, for Markdown targets) in README.md, CHANGELOG.md and docs/ points
    at something that exists, so a moved or renamed page cannot leave dead links behind."""
    broken = []
    for path in _markdown_files():
        for link in _links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # http:, https:, mailto: ...
                continue
            target, _, anchor = link.partition("#")
            resolved = (path.parent / target).resolve() if target else path
            where = f"{path.relative_to(REPO)}: {link}"
            if not resolved.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{where} (no heading #{anchor})")
    assert not broken, "broken links:\n" + "\n".join(broken)
