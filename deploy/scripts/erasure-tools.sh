#!/usr/bin/env bash
# Makes sure the erasure e2e (deploy/test/erasure.e2e.test.ts) has the outside tools it proves
# erasure with: `kcat` (reads every topic and DLQ from the beginning, as an attacker with broker
# access would) and `mariadb-dump` / `mysqldump` from `mariadb-client` (dumps every service
# database, as a backup would). The test reads the stores with these tools rather than with the
# services' own code, so a copy the code forgets about is still seen. Debian packages only.
# Idempotent: installs only what is missing, with apt-get, when running as root; `apt-get update` only
# when the install fails without it. Exits 1 with what to do when it cannot install.
set -uo pipefail
say() { echo "[erasure-tools] $*"; }
fail() { echo "[erasure-tools] $*" >&2; exit 1; }
# shellcheck source=apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"

missing() {
  local packages=()
  command -v kcat >/dev/null 2>&1 || packages+=(kcat)
  { command -v mariadb-dump >/dev/null 2>&1 || command -v mysqldump >/dev/null 2>&1; } || packages+=(mariadb-client)
  echo "${packages[@]}"
}

report() {
  local dump
  dump=$(command -v mariadb-dump || command -v mysqldump)
  # kcat -V prints its version and librdkafka's on the first line.
  say "ok: $(kcat -V 2>&1 | head -1) at $(command -v kcat); $("$dump" --version 2>&1 | head -1)"
}

read -r -a packages <<<"$(missing)"
if [ "${#packages[@]}" -eq 0 ]; then report; exit 0; fi

say "missing: ${packages[*]}"
apt_install "${packages[@]}"

read -r -a still <<<"$(missing)"
[ "${#still[@]}" -eq 0 ] || fail "installed, but still missing: ${still[*]}"
report
