"""Regenerate the protobuf and gRPC modules from ``chat.proto``.

Run ``python -m navagent.core._proto._generate`` after editing the schema.
``protoc`` writes imports relative to its include root, so the schema is
compiled from a scratch tree shaped like the installed package; that makes the
generated ``_pb2_grpc`` import ``navagent.core._proto.chat_pb2`` rather than a
top-level ``chat_pb2``. Type stubs come from mypy-protobuf, which also types the
gRPC stubs (plain ``protoc --pyi_out`` leaves ``_pb2_grpc`` untyped).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_PATH = Path("navagent", "core", "_proto")
OUTPUTS = ("chat_pb2.py", "chat_pb2.pyi", "chat_pb2_grpc.py", "chat_pb2_grpc.pyi")


def _plugin(name: str) -> str:
    """Find a protoc plugin installed next to this interpreter (mypy-protobuf)."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: pip install -e '.[dev]'")
    return found


def generate(out_dir: Path) -> list[Path]:
    """Compile ``chat.proto`` into ``out_dir`` and return the written files."""
    from grpc_tools import protoc  # dev-only dependency

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / PACKAGE_PATH).mkdir(parents=True)
        shutil.copy(HERE / "chat.proto", root / PACKAGE_PATH / "chat.proto")
        status = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{root}",
                f"--python_out={root}",
                f"--grpc_python_out={root}",
                f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
                f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
                f"--mypy_out={root}",
                f"--mypy_grpc_out={root}",
                str(PACKAGE_PATH / "chat.proto"),
            ]
        )
        if status != 0:
            raise RuntimeError(f"protoc failed with status {status}")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for name in OUTPUTS:
            target = out_dir / name
            shutil.copy(root / PACKAGE_PATH / name, target)
            written.append(target)
        return written


if __name__ == "__main__":
    for path in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)  # noqa: T201
