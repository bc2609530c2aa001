"""The generated protobuf code in the wire package matches proto/."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("gen_proto", ROOT / "scripts" / "gen_proto.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_python_matches_the_proto_files(tmp_path):
    generated = _generator().generate(tmp_path)
    assert generated, "no proto files found"
    committed = ROOT / "proto" / "src" / "curvestream_wire" / "v1"
    for path in generated:
        mine = committed / path.name
        assert mine.exists(), f"{path.name} is not committed: run `make proto`"
        assert mine.read_text() == path.read_text(), f"{path.name} is stale: run `make proto`"
