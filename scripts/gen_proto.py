"""Generate the Python protobuf modules of proto/curvestream/v1 into the wire package.

Usage: python scripts/gen_proto.py [OUT_DIR]   (default: proto/src)

The generated modules land at OUT_DIR/curvestream_wire/v1/*_pb2.py(i); a test runs
this into a temporary directory and compares, so stale generated code fails CI.

The .proto files keep their import path (``curvestream/v1/...``) and protobuf
package (``curvestream.v1``): that is the wire contract. Only the Python
location differs: protoc names a generated module after its .proto path, so
the generated cross-imports are pointed at ``curvestream_wire.v1`` here.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PYTHON_PACKAGE = "curvestream_wire"


def generate(out_dir: pathlib.Path) -> list[pathlib.Path]:
    protos = sorted(PROTO_ROOT.glob("curvestream/v1/*.proto"))
    target = out_dir / PYTHON_PACKAGE / "v1"
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            *[str(p.relative_to(PROTO_ROOT)) for p in protos],
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        for path in sorted((pathlib.Path(tmp) / "curvestream" / "v1").glob("*_pb2.py*")):
            text = path.read_text().replace("from curvestream.v1 import", f"from {PYTHON_PACKAGE}.v1 import")
            (target / path.name).write_text(text)
    return sorted(target.glob("*_pb2.py*"))


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else PROTO_ROOT / "src"
    for path in generate(out):
        print(path.relative_to(out))
