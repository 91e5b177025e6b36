#!/usr/bin/env bash
# Makes sure the Python example consumer (deploy/examples/python-consumer) can run and the Python
# client (libs/python-client) can be built and installed offline: Debian's python (/usr/bin/python3,
# not a pyenv build on PATH) with confluent_kafka, google.protobuf, grpc, cryptography (AES-GCM, to open
# sealed session events), venv, setuptools and wheel, plus protoc and grpc_python_plugin. No PyPI:
# every piece is a Debian package.
# Idempotent: installs only what is missing, with apt-get, when running as root; `apt-get update` only
# when the install fails without it. Exits 1 with what to do when it cannot install.
set -uo pipefail
python=/usr/bin/python3
say() { echo "[python-deps] $*"; }
fail() { echo "[python-deps] $*" >&2; exit 1; }
# shellcheck source=apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"

missing() {
  local packages=()
  if [ ! -x "$python" ]; then
    packages+=(python3 python3-confluent-kafka python3-protobuf python3-grpcio python3-cryptography python3-venv python3-setuptools python3-wheel)
  else
    "$python" -c "import confluent_kafka" >/dev/null 2>&1 || packages+=(python3-confluent-kafka)
    "$python" -c "import google.protobuf" >/dev/null 2>&1 || packages+=(python3-protobuf)
    "$python" -c "import grpc" >/dev/null 2>&1 || packages+=(python3-grpcio)
    "$python" -c "from cryptography.hazmat.primitives.ciphers.aead import AESGCM" >/dev/null 2>&1 ||
      packages+=(python3-cryptography)
    "$python" -c "import ensurepip, venv" >/dev/null 2>&1 || packages+=(python3-venv)
    "$python" -c "import setuptools" >/dev/null 2>&1 || packages+=(python3-setuptools)
    "$python" -c "import wheel" >/dev/null 2>&1 || packages+=(python3-wheel)
  fi
  protoc --version >/dev/null 2>&1 || packages+=(protobuf-compiler)
  [ -x /usr/bin/grpc_python_plugin ] || packages+=(protobuf-compiler-grpc)
  echo "${packages[@]}"
}

report() {
  local versions
  versions=$("$python" -c 'import sys, confluent_kafka, grpc, cryptography, google.protobuf as pb
print(f"python {sys.version.split()[0]}, confluent_kafka {confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]}), protobuf {pb.__version__}, grpcio {grpc.__version__}, cryptography {cryptography.__version__}")')
  say "ok: $python: $versions; $(protoc --version) at $(command -v protoc); /usr/bin/grpc_python_plugin"
}

read -r -a packages <<<"$(missing)"
if [ "${#packages[@]}" -eq 0 ]; then report; exit 0; fi

say "missing: ${packages[*]}"
apt_install "${packages[@]}"

read -r -a still <<<"$(missing)"
[ "${#still[@]}" -eq 0 ] || fail "installed, but still missing: ${still[*]} (is /usr/bin/python3 Debian's python?)"
report
