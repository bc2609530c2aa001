"""The page's TypeScript API types are the bridge's models: the committed
``types/api.ts`` is what ``scripts/gen_api_types.py`` writes from
``curvestream_bridge.api.models``, so a field renamed, added or retyped on one
side only fails here."""

from __future__ import annotations

import pathlib
import runpy

from curvestream_bridge.api import models

GENERATOR = runpy.run_path(str(pathlib.Path(__file__).resolve().parent.parent / "scripts" / "gen_api_types.py"))


def test_the_page_api_types_are_generated_from_the_bridge_models():
    committed = GENERATOR["OUT"].read_text()
    assert committed == GENERATOR["render"](), "types/api.ts is stale or edited by hand: run `make api-types`"


def test_the_generated_types_name_every_field_of_every_model():
    text = GENERATOR["render"]()
    for model in (*models.HTTP_MODELS, *models.LIVE_MODELS):
        block = text.split(f"export interface {model.__name__} {{\n", 1)[1].split("\n}", 1)[0]
        fields = [line.strip().split(":")[0].rstrip("?") for line in block.splitlines()
                  if line.startswith("  ") and not line.strip().startswith(("/**", "*"))]
        assert fields == list(model.model_fields), model.__name__
