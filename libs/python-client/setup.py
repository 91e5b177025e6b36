"""Build hook: the gRPC stubs are generated from the .proto files when the package is built.

protoc (Debian's protobuf-compiler) and grpc_python_plugin (protobuf-compiler-grpc) write
`prefixguard/<pkg>/v1/*_pb2.py` and `*_pb2_grpc.py` straight into the build directory, so the
generated top-level package `prefixguard` ships in the same wheel as `prefix_guard` and its
absolute imports (`from prefixguard.common.v1 import common_pb2`) work unchanged. Nothing
generated is written to the source tree.

The .proto files are read from `proto/` next to this file (an sdist, or build.sh's staging copy),
else from the repository's `proto/` two levels up, else from $PREFIX_GUARD_PROTO_ROOT.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def proto_root() -> Path:
    candidates = [os.environ.get("PREFIX_GUARD_PROTO_ROOT"), HERE / "proto", HERE.parent.parent / "proto"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "prefixguard").is_dir():
            return Path(candidate)
    raise SystemExit(
        "prefix-guard: no proto/prefixguard directory found (looked in $PREFIX_GUARD_PROTO_ROOT, "
        f"{HERE / 'proto'}, {HERE.parent.parent / 'proto'})"
    )


def tool(name: str, debian_path: str, package: str) -> str:
    # Debian's protoc matches Debian's python3-protobuf; a newer protoc earlier on PATH may not.
    found = debian_path if Path(debian_path).exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"prefix-guard: {name} not found: apt-get install {package} (or deploy/scripts/python-deps.sh)")
    return found


def generate(root: Path, out: Path) -> None:
    protos = sorted(str(p.relative_to(root)) for p in (root / "prefixguard").rglob("*.proto"))
    protoc = tool("protoc", "/usr/bin/protoc", "protobuf-compiler")
    plugin = tool("grpc_python_plugin", "/usr/bin/grpc_python_plugin", "protobuf-compiler-grpc")
    out.mkdir(parents=True, exist_ok=True)
    command = [
        protoc,
        f"-I{root}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--plugin=protoc-gen-grpc_python={plugin}",
        *protos,
    ]
    version = subprocess.run([protoc, "--version"], capture_output=True, text=True).stdout.split()[-1]
    # proto3 `optional` is on by default from protoc 3.15; 3.12 to 3.14 need the experimental flag.
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) < (3, 15):
        command.insert(1, "--experimental_allow_proto3_optional")
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"prefix-guard: protoc failed:\n{result.stderr}")
    # protoc writes no __init__.py: make every generated directory a regular package.
    for directory in [out / "prefixguard", *(p for p in (out / "prefixguard").rglob("*") if p.is_dir())]:
        (directory / "__init__.py").touch()


class BuildPyWithStubs(build_py):
    def run(self) -> None:
        super().run()
        generate(proto_root(), Path(self.build_lib).resolve())


setup(package_dir={"": "src"}, packages=["prefix_guard"], cmdclass={"build_py": BuildPyWithStubs})
