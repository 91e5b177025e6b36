#!/usr/bin/env bash
# Builds the prefix-guard Python wheel offline, outside the source tree:
#   bash libs/python-client/build.sh OUT_DIR   ->  OUT_DIR/prefix_guard-<version>-py3-none-any.whl
# Stages this directory and proto/prefixguard in a temp dir, then `pip wheel` with Debian's
# setuptools (--no-build-isolation) and no package index (--no-index): nothing is downloaded.
# setup.py generates the gRPC stubs with /usr/bin/protoc and /usr/bin/grpc_python_plugin
# (deploy/scripts/python-deps.sh installs them). Install the wheel with
#   python3 -m venv --system-site-packages VENV && VENV/bin/pip install --no-index OUT_DIR/prefix_guard-*.whl
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${PYTHON:-/usr/bin/python3}"
out="${1:?usage: build.sh OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$(mktemp -d "${TMPDIR:-/tmp}/pg-pybuild-XXXXXX")"
trap 'rm -rf "$stage"' EXIT
cp -r "$here/pyproject.toml" "$here/setup.py" "$here/MANIFEST.in" "$here/README.md" "$here/src" "$stage/"
mkdir -p "$stage/proto"
cp -r "$repo/proto/prefixguard" "$stage/proto/"
find "$stage/src" -name __pycache__ -prune -exec rm -rf {} +
"$python" -m pip wheel --quiet --no-build-isolation --no-index --no-deps --wheel-dir "$out" "$stage"
ls "$out"/prefix_guard-*.whl
