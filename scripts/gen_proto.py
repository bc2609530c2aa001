"""Generate the Python protobuf modules of proto/curvestream/v1 into the client package.

Usage: python scripts/gen_proto.py [OUT_DIR]   (default: client/src)

The generated modules land at OUT_DIR/curvestream/v1/*_pb2.py(i); a test runs
this into a temporary directory and compares, so stale generated code fails CI.
"""

from __future__ import annotations

import pathlib
import sys

from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"


def generate(out_dir: pathlib.Path) -> list[pathlib.Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    protos = sorted(PROTO_ROOT.glob("curvestream/v1/*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *[str(p.relative_to(PROTO_ROOT)) for p in protos],
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    return sorted((out_dir / "curvestream" / "v1").glob("*_pb2.py*"))


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "client" / "src"
    for path in generate(out):
        print(path.relative_to(out))
