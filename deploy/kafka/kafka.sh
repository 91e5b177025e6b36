#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft) from Maven Central jars: no docker, no tarball.
#   kafka.sh fetch   download the broker's runtime jars once (cached in $KAFKA_HOME/jars)
#   kafka.sh start   format storage (first time) and start on 127.0.0.1:$KAFKA_PORT; waits until it answers
#   kafka.sh stop    stop the broker started by `start` (by pid), waiting for it to exit
#   kafka.sh status  exit 0 when the broker answers
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
KAFKA_VERSION="${KAFKA_VERSION:-3.9.1}"
KAFKA_HOME="${KAFKA_HOME:-$repo/.cache/kafka}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_DATA="${KAFKA_DATA:-$repo/.run/kafka-$KAFKA_PORT}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
jars="$KAFKA_HOME/jars-$KAFKA_VERSION"
pidfile="$KAFKA_DATA/kafka.pid"
logfile="$KAFKA_DATA/kafka.log"

log() { printf '[kafka] %s\n' "$*" >&2; }

fetch() {
  if [ -f "$jars/.complete" ]; then return 0; fi
  command -v mvn >/dev/null || { log "mvn not found: install Maven (apt-get install maven)"; exit 1; }
  command -v java >/dev/null || { log "java not found: install a JDK 17 (apt-get install openjdk-17-jre-headless)"; exit 1; }
  log "fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $jars (first run only)"
  rm -rf "$jars.tmp" && mkdir -p "$jars.tmp"
  mvn -q -B -f "$here/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$jars.tmp"
  touch "$jars.tmp/.complete"
  rm -rf "$jars" && mv "$jars.tmp" "$jars"
  log "fetched $(ls "$jars" | wc -l) jars"
}

java_cp() { printf '%s/*' "$jars"; }

answers() {
  # A TCP connect is not enough (the socket opens before the broker is ready): ask for metadata.
  java -cp "$(java_cp)" -Dlog4j.configuration="file:$here/log4j.properties" \
    kafka.admin.BrokerApiVersionsCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" >/dev/null 2>&1
}

running_pid() {
  [ -f "$pidfile" ] || return 1
  local pid; pid="$(cat "$pidfile")"
  kill -0 "$pid" 2>/dev/null && { echo "$pid"; return 0; }
  return 1
}

start() {
  fetch
  if pid="$(running_pid)"; then log "already running (pid $pid) on 127.0.0.1:$KAFKA_PORT"; return 0; fi
  mkdir -p "$KAFKA_DATA/logs"
  sed -e "s|@LOG_DIR@|$KAFKA_DATA/logs|" -e "s|@PORT@|$KAFKA_PORT|g" -e "s|@CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
    "$here/server.properties.template" > "$KAFKA_DATA/server.properties"
  if [ ! -f "$KAFKA_DATA/logs/meta.properties" ]; then
    local id; id="$(java -cp "$(java_cp)" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)"
    java -cp "$(java_cp)" -Dlog4j.configuration="file:$here/log4j.properties" \
      kafka.tools.StorageTool format -t "$id" -c "$KAFKA_DATA/server.properties" --ignore-formatted >/dev/null
    log "formatted KRaft storage in $KAFKA_DATA/logs (cluster $id)"
  fi
  log "starting broker on 127.0.0.1:$KAFKA_PORT (log: $logfile)"
  nohup java -Xms256m -Xmx512m -XX:+UseG1GC -cp "$(java_cp)" \
    -Dlog4j.configuration="file:$here/log4j.properties" \
    kafka.Kafka "$KAFKA_DATA/server.properties" >"$logfile" 2>&1 &
  echo $! > "$pidfile"
  local waited=0
  # Cheap check first (the log line), then one real metadata round trip.
  until grep -q "Kafka Server started" "$logfile" 2>/dev/null && answers; do
    if ! running_pid >/dev/null; then log "broker exited during start; last lines of $logfile:"; tail -n 30 "$logfile" >&2; exit 1; fi
    if [ "$waited" -ge "$KAFKA_START_TIMEOUT" ]; then log "broker did not answer within ${KAFKA_START_TIMEOUT}s"; tail -n 30 "$logfile" >&2; stop; exit 1; fi
    sleep 1; waited=$((waited + 1))
  done
  log "ready after ${waited}s (pid $(cat "$pidfile"))"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then log "not running"; rm -f "$pidfile"; return 0; fi
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  if kill -0 "$pid" 2>/dev/null; then log "pid $pid ignored SIGTERM for 30s; sending SIGKILL"; kill -9 "$pid" 2>/dev/null || true; fi
  rm -f "$pidfile"
  log "stopped (pid $pid)"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  status) answers && log "answering on 127.0.0.1:$KAFKA_PORT" ;;
  reset) stop; rm -rf "$KAFKA_DATA"; log "removed $KAFKA_DATA" ;;
  *) echo "usage: $0 fetch|start|stop|status|reset" >&2; exit 2 ;;
esac
