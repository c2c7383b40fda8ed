"""The Rego bundle's own unit tests (``deploy/trino-opa/tests``, ``opa test`` style: every ``test_``
rule must hold), run on OPA's engine embedded in this process. They replace ``http.send`` with a
mocked catalog and identity provider, so no server starts; ``test_trino_opa.py`` runs the bundle
against a live catalog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BUNDLE = Path(__file__).resolve().parents[3] / "deploy" / "trino-opa"
TESTS = sorted((BUNDLE / "tests").glob("*_test.rego"))


def _test_rules() -> list[tuple[str, str]]:
    """(package, rule) of every ``test_`` rule of the bundle's test files."""
    found = []
    for path in TESTS:
        text = path.read_text()
        package = re.search(r"^package\s+([\w.]+)", text, re.MULTILINE).group(1)
        found += [(package, name) for name in re.findall(r"^(test_\w+)\s+if\b", text, re.MULTILINE)]
    return found


RULES = _test_rules()


@pytest.fixture(scope="module")
def engine():
    module = pytest.importorskip(
        "opa_bindings.engine", reason="opa-golib-python-bindings is not installed (scripts/install-test-deps.sh)"
    )
    opa = module.OpaEngine()
    for path in [*sorted((BUNDLE / "lakekeeper_trino").glob("*.rego")), *TESTS]:
        opa.add_policy(path.name, path.read_text())
    yield opa
    opa.close()


def test_the_bundle_has_unit_tests() -> None:
    assert len(RULES) >= 10, RULES


@pytest.mark.parametrize("package, rule", RULES, ids=[rule for _, rule in RULES])
def test_rule(engine, package: str, rule: str) -> None:
    from opa_bindings.engine import OpaUndefinedError

    try:
        held = engine.eval_document(f"{package}.{rule}")
    except OpaUndefinedError:  # a test rule whose body fails is undefined, as under `opa test`
        pytest.fail(f"{rule} does not hold")
    assert held is True
