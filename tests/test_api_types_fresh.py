"""The page's TypeScript API types are the bridge's models: the committed
``types/api.ts`` is what ``scripts/gen_api_types.py`` writes from
``curvestream_bridge.api.models``, so a field renamed, added or retyped on one
side only fails here."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("gen_api_types", ROOT / "scripts" / "gen_api_types.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_api_types_are_generated_from_the_bridge_models():
    generator = _generator()
    committed = generator.OUT.read_text()
    assert committed == generator.render(), "types/api.ts is stale or edited by hand: run `make api-types`"


def test_the_generated_types_name_every_field_of_every_model():
    from curvestream_bridge.api import models

    text = _generator().render()
    for model in (*models.HTTP_MODELS, *models.LIVE_MODELS):
        block = text.split(f"export interface {model.__name__} {{\n", 1)[1].split("\n}", 1)[0]
        fields = [line.strip().split(":")[0].rstrip("?") for line in block.splitlines()
                  if line.startswith("  ") and not line.strip().startswith(("/**", "*"))]
        assert fields == list(model.model_fields), model.__name__
