#!/usr/bin/env bash
# `make up` / `make down`: each service as its own process on Kafka + MariaDB (one database per service).
# The gateway serves HTTP (GATEWAY_PORT, 8787) in front of OPENAI_UPSTREAM_URL / ANTHROPIC_UPSTREAM_URL
# (the real providers unless set); the others serve gRPC.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
run="$repo/.run/stack"
mkdir -p "$run"
brokers="${KAFKA_BROKERS:-127.0.0.1:9092}"
services=(session-events rules-snapshot prompt-assembly cache-monitor gateway)
declare -A ports=([session-events]=50051 [rules-snapshot]=50052 [prompt-assembly]=50053 [cache-monitor]=50054 [gateway]="${GATEWAY_PORT:-8787}")
declare -A metrics=([session-events]=9461 [rules-snapshot]=9462 [prompt-assembly]=9463 [cache-monitor]=9464 [gateway]=9465)
# How each one is reached: gRPC, or the gateway's base URL.
endpoint() { if [ "$1" = gateway ]; then echo "http://127.0.0.1:${ports[$1]}"; else echo "127.0.0.1:${ports[$1]}"; fi; }

create_db() {
  local name="prefix_guard_${1//-/_}"
  local client; client="$(command -v mariadb || command -v mysql)" || { echo "[stack] needs the mariadb client" >&2; exit 1; }
  "$client" -h "${MYSQL_HOST:-127.0.0.1}" -P "${MYSQL_PORT:-3306}" -u "${MYSQL_USER:-root}" \
    -e "CREATE DATABASE IF NOT EXISTS \`$name\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
  echo "mysql://${MYSQL_USER:-root}@${MYSQL_HOST:-127.0.0.1}:${MYSQL_PORT:-3306}/$name"
}

up() {
  for s in "${services[@]}"; do
    if [ -f "$run/$s.pid" ] && kill -0 "$(cat "$run/$s.pid")" 2>/dev/null; then echo "[stack] $s already running"; continue; fi
    local url; url="$(create_db "$s")"
    echo "[stack] starting $s on $(endpoint "$s") (log: $run/$s.log)"
    TRANSPORT=kafka KAFKA_BROKERS="$brokers" DATABASE_URL="$url" GRPC_PORT="${ports[$s]}" GATEWAY_PORT="${ports[gateway]}" METRICS_PORT="${metrics[$s]}" \
      SESSION_EVENTS_ADDRESS="127.0.0.1:${ports[session-events]}" RULES_SNAPSHOT_ADDRESS="127.0.0.1:${ports[rules-snapshot]}" \
      nohup node --import tsx "services/$s/src/main.ts" >"$run/$s.log" 2>&1 &
    echo $! > "$run/$s.pid"
  done
  for s in "${services[@]}"; do
    for _ in $(seq 1 60); do
      grep -q "serving" "$run/$s.log" 2>/dev/null && break
      kill -0 "$(cat "$run/$s.pid")" 2>/dev/null || { echo "[stack] $s exited; see $run/$s.log"; tail -n 20 "$run/$s.log"; exit 1; }
      sleep 0.5
    done
    echo "[stack] $s serving on $(endpoint "$s") (metrics :${metrics[$s]}/metrics)"
  done
}

down() {
  for s in "${services[@]}"; do
    [ -f "$run/$s.pid" ] || continue
    local pid; pid="$(cat "$run/$s.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$run/$s.pid"; echo "[stack] stopped $s"
  done
}

status() {
  for s in "${services[@]}"; do
    if [ -f "$run/$s.pid" ] && kill -0 "$(cat "$run/$s.pid")" 2>/dev/null; then echo "$s: running (pid $(cat "$run/$s.pid"), $(endpoint "$s"))"; else echo "$s: stopped"; fi
  done
}

case "${1:-}" in up) up ;; down) down ;; status) status ;; *) echo "usage: $0 up|down|status" >&2; exit 2 ;; esac
