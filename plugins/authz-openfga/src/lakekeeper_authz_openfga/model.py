"""The authorization model: ``model.fga`` (the DSL we write) and ``model.json`` (its JSON form, as
``fga model transform`` produces it and the OpenFGA API takes it; a test keeps them in agreement)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

MODEL_DSL_PATH = Path(__file__).with_name("model.fga")
MODEL_JSON_PATH = Path(__file__).with_name("model.json")


@cache
def _model_text() -> str:
    return MODEL_JSON_PATH.read_text()


def load_model() -> dict:
    """A fresh copy of the model's JSON (``schema_version`` and ``type_definitions``)."""
    return json.loads(_model_text())
