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
present() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }
report() { say "ok: $(prometheus --version 2>&1 | head -1) at $(command -v prometheus); promtool at $(command -v promtool)"; }

if present; then report; exit 0; fi

manual="install it yourself: apt-get install -y prometheus (Debian/Ubuntu), then run this script again"
say "missing: prometheus/promtool"
[ "$EUID" -eq 0 ] || fail "not root, cannot install; $manual"
command -v apt-get >/dev/null || fail "no apt-get on this machine; $manual"

# policy-rc.d 101 keeps the package from starting its own daemon on :9090 (the tests start theirs).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1; fi
release_policy() { if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi; }
trap release_policy EXIT

install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus; }
say "apt-get install -y --no-install-recommends prometheus"
if ! install; then
  say "install failed; running apt-get update once and retrying"
  DEBIAN_FRONTEND=noninteractive apt-get update || fail "apt-get update failed (no network or no package mirror?); $manual"
  install || fail "apt-get install failed even after apt-get update; $manual"
fi

present || fail "installed, but prometheus or promtool is still not on PATH"
report
