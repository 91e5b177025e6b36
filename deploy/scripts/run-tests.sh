#!/usr/bin/env bash
# `make test`: a private Kafka on 19092 (fresh data every run, stopped even on failure), the local
# MariaDB, then lint, type check and every vitest tier. Ends with one "N passed, N failed" line.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
tier="${1:-all}"
export PATH="$repo/node_modules/.bin:$PATH"
export KAFKA_PORT="${TEST_KAFKA_PORT:-19092}" KAFKA_CONTROLLER_PORT="${TEST_KAFKA_CONTROLLER_PORT:-19093}" KAFKA_DATA="$repo/.run/kafka-test"
export TEST_KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT"
mkdir -p .run
started=$(date +%s)

cleanup() { [ "$tier" = unit ] || bash deploy/kafka/kafka.sh stop >/dev/null 2>&1 || true; }
trap cleanup EXIT

step() { printf '\n== %s (%ss)\n' "$*" "$(( $(date +%s) - started ))"; }

if [ "$tier" != unit ]; then
  step "MariaDB"; bash deploy/scripts/mariadb.sh ensure || exit 1
  step "Kafka (test broker on 127.0.0.1:$KAFKA_PORT)"; bash deploy/kafka/kafka.sh reset >/dev/null 2>&1; bash deploy/kafka/kafka.sh start || exit 1
  step "Python tooling for the example consumer and the Python client (Debian packages)"; bash deploy/scripts/python-deps.sh || echo "python consumer and python client tests will be skipped"
  step "JDK, Maven and protoc for the Java example consumer (Debian packages; its jars come from Maven Central)"; bash deploy/scripts/java-deps.sh || echo "the Java consumer test will be skipped"
  step "Prometheus and promtool for the alert-rule and scrape tests (Debian package)"; bash deploy/scripts/prometheus-deps.sh || echo "the Prometheus tests will be skipped"
  step "kcat and mariadb-dump for the erasure proof (Debian packages)"; bash deploy/scripts/erasure-tools.sh || echo "the erasure e2e's Kafka and MariaDB part will be skipped"
fi
step "lint (biome), type check (tsc), import graph and contract (buf breaking against proto/baseline)"
biome check . || exit 1
tsc -p tsconfig.json --noEmit || exit 1
node --import tsx deploy/scripts/import-graph.ts || exit 1
node --import tsx proto/src/contract-check.ts || exit 1

step "vitest ($tier)"
project_args=()
[ "$tier" = unit ] && project_args=(--project unit)
vitest run "${project_args[@]}" --reporter=default --reporter=json --outputFile.json=.run/vitest.json
status=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(".run/vitest.json", "utf8"));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(`\nvitest: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
  if (r.numTotalTests === 0) { console.log("no test ran"); process.exit(1); }
' || status=1
step "done"
exit $status
