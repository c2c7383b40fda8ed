"""model.fga is valid OpenFGA DSL, and model.json (what the plugin writes) is exactly its transform."""

from __future__ import annotations

import json
import subprocess

from fga_cli import fga_binary

from lakekeeper_authz_openfga.authorizer import fga_type
from lakekeeper_authz_openfga.model import MODEL_DSL_PATH, load_model
from lakekeeper_host.service.authz import ACTIONS


def test_dsl_is_valid() -> None:
    result = subprocess.run([fga_binary(), "model", "validate", "--file", str(MODEL_DSL_PATH)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["is_valid"] is True


def test_committed_json_is_the_transform_of_the_dsl() -> None:
    result = subprocess.run([fga_binary(), "model", "transform", "--file", str(MODEL_DSL_PATH)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == load_model(), "regenerate model.json: fga model transform --file model.fga"


def test_every_catalog_action_is_a_relation() -> None:
    types = {t["type"]: set(t.get("relations") or {}) for t in load_model()["type_definitions"]}
    for kind, actions in ACTIONS.items():
        if kind == "user":
            continue  # answered from the caller's identity and the server's relations
        missing = sorted(f"can_{a}" for a in actions if f"can_{a}" not in types[fga_type(kind)])
        assert not missing, f"{kind}: {missing}"
