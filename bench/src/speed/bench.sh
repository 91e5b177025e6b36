#!/usr/bin/env bash
# `make bench`: a Kafka broker of its own (127.0.0.1:39092, data in .run/kafka-bench, wiped at start),
# the baseline worktree for "before" (.cache/bench-baseline at 2585937, created once), then
# bench/src/run.ts with the arguments given (--quick, --only=speed|replay|gateway; BENCH_ONLY=gateway
# is the same as --only=gateway). The broker (which the replay alone does not need) is stopped on
# any exit; service processes left by an interrupted run are killed by run.ts from .run/bench/*.pid.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$repo"
baseline_commit=2585937
log() { printf '[bench] %s\n' "$*" >&2; }

export KAFKA_PORT="${BENCH_KAFKA_PORT:-39092}"
export KAFKA_CONTROLLER_PORT="${BENCH_KAFKA_CONTROLLER_PORT:-39093}"
export KAFKA_DATA="$repo/.run/kafka-bench"
export KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT"
# A worktree shares the main checkout's jar cache instead of fetching the jars again.
if [ -z "${KAFKA_HOME:-}" ] && [ ! -d "$repo/.cache/kafka" ]; then
  common="$(cd "$(git rev-parse --git-common-dir)/.." && pwd)"
  [ -d "$common/.cache/kafka" ] && export KAFKA_HOME="$common/.cache/kafka"
fi

only="${BENCH_ONLY:-}"
for arg in "$@"; do case "$arg" in --only=*) only="${arg#--only=}" ;; esac; done
speed=1
kafka=1
case "$only" in
  replay) speed=0 kafka=0 ;;
  gateway) speed=0 ;;
esac

if [ "$speed" = 1 ]; then
  baseline="$repo/.cache/bench-baseline"
  if [ "${BENCH_SKIP_BASELINE:-0}" = 1 ]; then
    log "BENCH_SKIP_BASELINE=1: no before"; baseline=""
  else
    if [ ! -f "$baseline/.bench-ready" ]; then
      log "preparing the baseline worktree at $baseline_commit in $baseline (first run only)"
      if [ ! -e "$baseline/.git" ]; then
        git worktree prune
        git worktree add --detach "$baseline" "$baseline_commit" >&2
      fi
      (cd "$baseline" && { pnpm install --frozen-lockfile --offline >&2 || pnpm install --frozen-lockfile >&2; } \
        && pnpm --filter @prefix-guard/proto run gen >&2)
      touch "$baseline/.bench-ready"
    fi
  fi
  export BENCH_BASELINE="$baseline"
fi
if [ "$kafka" = 1 ]; then
  trap 'bash deploy/kafka/kafka.sh stop || true' EXIT
  # A run killed midway may have left the broker and its data: start from nothing.
  bash deploy/kafka/kafka.sh reset
  bash deploy/kafka/kafka.sh start
fi
node --import tsx bench/src/run.ts "$@"
