"""The model's case table (``model_cases.yaml``), run by ``fga model test`` (OpenFGA's own engine)
and by the OpenFGA double: tuples in Lakekeeper's format, and per (user, object) the relations that
hold -- every other relation of the type is asserted not to. The table covers every relation of
every type of model.fga."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml
from fga_cli import fga_binary

from lakekeeper_authz_openfga.model import MODEL_DSL_PATH, load_model
from lakekeeper_testing.openfga_double import evaluate_offline

CASES = Path(__file__).with_name("model_cases.yaml")


def _relations() -> dict[str, set[str]]:
    return {t["type"]: set(t.get("relations") or {}) for t in load_model()["type_definitions"]}


def _table() -> tuple[list[tuple[str, str, str]], list[dict]]:
    """(tuples, checks): each check ``{"user", "object", "assertions": {relation: bool}}``."""
    data = yaml.safe_load(CASES.read_text())
    relations = _relations()
    checks = []
    for case in data["cases"]:
        holds, lacks = set(case["holds"]), set(case.get("lacks", ()))
        type_relations = relations[case["object"].partition(":")[0]]
        unknown = (holds | lacks) - type_relations
        assert not unknown, f"{case['object']}: no such relations {sorted(unknown)}"
        asked = holds | lacks if case.get("only") else type_relations
        checks.append({"user": case["user"], "object": case["object"],
                       "assertions": {r: r in holds for r in sorted(asked)}})
    return [tuple(t) for t in data["tuples"]], checks


def test_the_table_covers_every_relation_of_every_type() -> None:
    _, checks = _table()
    asked: dict[str, set[str]] = {}
    held: dict[str, set[str]] = {}
    for check in checks:
        kind = check["object"].partition(":")[0]
        asked.setdefault(kind, set()).update(check["assertions"])
        held.setdefault(kind, set()).update(r for r, ok in check["assertions"].items() if ok)
    for kind, relations in _relations().items():
        assert relations - asked.get(kind, set()) == set(), f"{kind}: relations never asked"
        # every relation is shown to hold somewhere, except the wildcard-only flag nobody is granted
        assert relations - held.get(kind, set()) == set(), f"{kind}: relations never shown to hold"


def test_openfgas_engine_agrees_with_the_table(tmp_path: Path) -> None:
    tuples, checks = _table()
    tests_file = tmp_path / "cases.fga.yaml"
    tests_file.write_text(json.dumps({
        "model": MODEL_DSL_PATH.read_text(),
        "tuples": [{"user": u, "relation": r, "object": o} for u, r, o in tuples],
        "tests": [{"name": "model cases", "check": checks}],
    }))
    result = subprocess.run([fga_binary(), "model", "test", "--tests", str(tests_file)], capture_output=True,
                            text=True, timeout=600)
    failures = [line for line in (result.stdout + result.stderr).splitlines() if "FAIL" in line or "expected" in line]
    assert result.returncode == 0, "\n".join(failures[:60]) or result.stdout[-3000:] + result.stderr[-3000:]


def test_the_double_agrees_with_the_table() -> None:
    tuples, checks = _table()
    engine, index = evaluate_offline(load_model(), tuples)
    wrong = [(c["user"], c["object"], relation, expected)
             for c in checks for relation, expected in c["assertions"].items()
             if engine.check(index, c["user"], relation, c["object"]) != expected]
    assert not wrong, wrong[:40]
