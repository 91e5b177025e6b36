#!/usr/bin/env bash
# Makes sure the Java example consumer (deploy/examples/java-consumer) can be built and run: a JDK 17+
# (javac, not only the runtime the Kafka broker needs), Maven, and Debian's protoc (protobuf-compiler),
# whose --java_out generates the event classes during the Maven build. The jars themselves
# (kafka-clients, protobuf-java) come from Maven Central into ~/.m2 at the first build.
# Idempotent: installs only what is missing, with apt-get, when running as root; `apt-get update` only
# when the install fails without it. Exits 1 with what to do when it cannot install.
set -uo pipefail
say() { echo "[java-deps] $*"; }
fail() { echo "[java-deps] $*" >&2; exit 1; }
# shellcheck source=apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"

javac_major() { javac -version 2>&1 | sed -n 's/^javac \([0-9][0-9]*\).*/\1/p'; }

missing() {
  local packages=()
  local major; major="$(javac_major)"
  { [ -n "$major" ] && [ "$major" -ge 17 ]; } || packages+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || packages+=(maven)
  protoc --version >/dev/null 2>&1 || packages+=(protobuf-compiler)
  echo "${packages[@]}"
}

report() {
  say "ok: $(javac -version 2>&1), $(mvn -v 2>/dev/null | head -n 1 | sed 's/\x1b\[[0-9;]*m//g'), $(protoc --version) at $(command -v protoc)"
}

read -r -a packages <<<"$(missing)"
if [ "${#packages[@]}" -eq 0 ]; then report; exit 0; fi

say "missing: ${packages[*]}"
apt_install "${packages[@]}"

read -r -a still <<<"$(missing)"
[ "${#still[@]}" -eq 0 ] || fail "installed, but still missing: ${still[*]} (is javac on PATH a JDK 17 or newer?)"
report
