#!/usr/bin/env bash
# Makes sure the MariaDB server on 127.0.0.1:3306 answers; starts it when it is installed but down
# (the way this machine's image starts it). Tests create and drop their own databases.
set -euo pipefail
host="${MYSQL_HOST:-127.0.0.1}"
port="${MYSQL_PORT:-3306}"

ping_db() {
  if command -v mariadb-admin >/dev/null; then mariadb-admin --connect-timeout=2 -h "$host" -P "$port" -uroot ping >/dev/null 2>&1
  elif command -v mysqladmin >/dev/null; then mysqladmin --connect-timeout=2 -h "$host" -P "$port" -uroot ping >/dev/null 2>&1
  else (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; fi
}

case "${1:-ensure}" in
  ensure)
    if ping_db; then echo "[mariadb] answering on $host:$port"; exit 0; fi
    if [ -x /usr/sbin/mariadbd ]; then
      echo "[mariadb] not answering; starting /usr/sbin/mariadbd"
      start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
      for _ in $(seq 1 30); do ping_db && { echo "[mariadb] answering on $host:$port"; exit 0; }; sleep 1; done
      echo "[mariadb] did not answer within 30s" >&2; exit 1
    fi
    echo "[mariadb] no server on $host:$port and none installed: apt-get install mariadb-server (root with an empty password on loopback), or set TEST_MYSQL_URL" >&2
    exit 1 ;;
  *) echo "usage: $0 ensure" >&2; exit 2 ;;
esac
