#!/usr/bin/env bash
# with-test-redis.sh COMMAND...: run COMMAND (the test suite) with a Redis it may use.
#
# The suite runs in pytest-xdist workers, and each worker keeps its Celery traffic in a block of
# 16 Redis databases of its own (tests/support/processes.py): four workers need 64, more than a
# default Redis server has (16). So when REDIS_URL is not set, this starts a Redis server of the
# run's own on a free loopback port with 64 databases, exports REDIS_URL for COMMAND, and stops
# the server when COMMAND ends (whatever its outcome). A REDIS_URL given from outside wins: its
# server must then have the databases (tests/conftest.py checks, and says what to do), or run
# the suite in one process with `make test PYTEST_PARALLEL=`.
set -euo pipefail

if [ -n "${REDIS_URL:-}" ]; then
  exec "$@"
fi
if ! command -v redis-server > /dev/null 2>&1; then
  echo "with-test-redis: redis-server is not installed (apt-get install redis-server), or set REDIS_URL" >&2
  exit 2
fi

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Stop the server and wait for it to be gone before removing its folder: Redis opens its log
# file again for every line, so a server still saying goodbye while `rm -rf` runs put a new
# log file into the half-removed folder ("Directory not empty"), and that failure became the
# exit status of a run whose tests had all passed. The command's own status is kept.
stop_redis() {
  local status=$? pid=""
  [ -s "$dir/redis.pid" ] && pid=$(cat "$dir/redis.pid" 2> /dev/null)
  if [ -n "$pid" ]; then
    kill "$pid" 2> /dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.1
    done
  fi
  rm -rf "$dir" 2> /dev/null || rm -rf "$dir" 2> /dev/null || true
  exit "$status"
}
trap stop_redis EXIT
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --databases 64 --save "" \
  --appendonly no --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
for _ in $(seq 1 60); do
  redis-cli -h 127.0.0.1 -p "$port" ping 2> /dev/null | grep -q PONG && break
  sleep 0.5
done
echo "tests: a Redis server of this run's own on 127.0.0.1:$port (64 databases)"
export REDIS_URL="redis://127.0.0.1:$port/0"
"$@"
