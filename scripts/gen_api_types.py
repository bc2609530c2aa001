"""Write the page's TypeScript API types from the bridge's models.

Usage: python scripts/gen_api_types.py [OUT_FILE]   (default: panels/echarts-plugin/src/types/api.ts; `make api-types`)

The models (``curvestream_bridge.api.models``) are the one source of the HTTP
API's answers and the live WebSocket's messages: their JSON schemas become
TypeScript interfaces and types of the same names, descriptions become doc
comments. A test renders this again and compares it with the committed file,
so a field renamed in the models and not here (or the reverse) fails.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

from curvestream_bridge.api import models

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "panels" / "echarts-plugin" / "src" / "types" / "api.ts"
REF = "#/$defs/"
HEADER = """\
/**
 * Shapes of the bridge's HTTP and WebSocket API (docs/http-api.md). Only types: the core and every host share them.
 *
 * Generated from bridge/src/curvestream_bridge/api/models.py by scripts/gen_api_types.py (`make api-types`):
 * edit the models, not this file.
 */
"""
PRIMITIVES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


def _literal(value: Any) -> str:
    if not isinstance(value, str):
        return json.dumps(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ts_type(schema: dict[str, Any]) -> str:
    """The TypeScript type of a JSON schema (the subset pydantic writes for these models)."""
    if "$ref" in schema:
        return schema["$ref"].removeprefix(REF)
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return _union([ts_type(s) for s in schema[union]])
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return _union([_literal(v) for v in schema["enum"]])
    kind = schema.get("type")
    if kind in PRIMITIVES:
        return PRIMITIVES[kind]
    if kind == "array":
        item = ts_type(schema.get("items", {}))
        return f"({item})[]" if " | " in item else f"{item}[]"
    if kind == "object" and "properties" not in schema:
        values = schema.get("additionalProperties", True)
        return f"Record<string, {ts_type(values) if isinstance(values, dict) else 'unknown'}>"
    if not schema:
        return "unknown"
    raise ValueError(f"no TypeScript type for the schema {schema}")


def _union(members: list[str]) -> str:
    return " | ".join(dict.fromkeys(members))


def _doc(text: str | None, indent: str = "") -> list[str]:
    if not text:
        return []
    lines = text.strip().splitlines()
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *[f"{indent} * {line}".rstrip() for line in lines], f"{indent} */"]


def _declaration(name: str, schema: dict[str, Any]) -> list[str]:
    if "properties" not in schema:
        members = [ts_type(s) for s in schema.get("oneOf", schema.get("anyOf", []))]
        body = ts_type({k: v for k, v in schema.items() if k not in ("description", "discriminator", "title")})
        if len(members) > 3:
            return [*_doc(schema.get("description")), f"export type {name} =", *[f"  | {m}" for m in members[:-1]],
                    f"  | {members[-1]};"]
        return [*_doc(schema.get("description")), f"export type {name} = {body};"]
    required = set(schema.get("required", ()))
    fields = []
    for field, prop in schema["properties"].items():
        fields += _doc(prop.get("description"), "  ")
        fields.append(f"  {field}{'' if field in required else '?'}: {ts_type(prop)};")
    return [*_doc(schema.get("description")), f"export interface {name} {{", *fields, "}"]


def render() -> str:
    definitions = models.definitions(REF + "{model}")
    order = [a.__name__ for a in models.TYPE_ALIASES]
    order += [m.__name__ for m in (*models.HTTP_MODELS, *models.LIVE_MODELS)] + ["LiveMessage"]
    missing = set(definitions) - set(order)
    if missing:
        raise ValueError(f"shapes not listed in the models' order: {sorted(missing)}")
    blocks = ["\n".join(_declaration(name, definitions[name])) for name in order]
    return HEADER + "\n" + "\n\n".join(blocks) + "\n"


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.write_text(render())
    print(out.relative_to(ROOT) if out.is_relative_to(ROOT) else out)
