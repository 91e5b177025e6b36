#!/usr/bin/env bash
# Makes sure a real Prometheus and promtool are on this machine for the observability tests
# (deploy/observability: `promtool check rules`, `promtool test rules`, and the e2e that scrapes the
# services). Debian's `prometheus` package (2.42 on bookworm) ships both; no download from elsewhere.
# Idempotent: installs only when missing, with apt-get, when running as root; `apt-get update` only
# when the install fails without it. The package's own service is not needed by the tests and is
# stopped if the install started it. Exits 1 with what to do when it cannot install.
set -uo pipefail
say() { echo "[prometheus-deps] $*"; }
fail() { echo "[prometheus-deps] $*" >&2; exit 1; }
# shellcheck source=apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
present() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }
report() { say "ok: $(prometheus --version 2>&1 | head -1) at $(command -v prometheus); promtool at $(command -v promtool)"; }

if present; then report; exit 0; fi

say "missing: prometheus/promtool"

# policy-rc.d 101 keeps the package from starting its own daemon on :9090 (the tests start theirs).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ "$EUID" -eq 0 ] && [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1; fi
release_policy() { if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi; }
trap release_policy EXIT

apt_install prometheus

present || fail "installed, but prometheus or promtool is still not on PATH"
report
