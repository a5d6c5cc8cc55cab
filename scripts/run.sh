#!/usr/bin/env bash
# Runs the whole product on the embedded default: SQLite database, SQLite-backed Celery broker,
# web (gunicorn) + two Celery workers (enforcement; webhook deliveries) + Celery beat, an admin
# account, the demo partition and a simulated cluster that keeps changing (simulate_cluster --churn).
# Ctrl-C stops them all and leaves no process behind. Called by `make run`.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.venv/bin/python
PORT="${PORT:-8000}"
export SCHEDULER_ENV="${SCHEDULER_ENV:-local}"
export PYTHONUNBUFFERED=1
mkdir -p var

# One secret key per checkout, kept under var/ (never committed) unless the environment has one.
if [ -z "${SECRET_KEY:-}" ]; then
  [ -s var/secret_key ] || "$PY" -c 'import secrets; print(secrets.token_urlsafe(50))' > var/secret_key
  SECRET_KEY="$(cat var/secret_key)"
  export SECRET_KEY
fi

"$PY" manage.py migrate --noinput -v 0
"$PY" manage.py ensure_admin
"$PY" manage.py import_config demo/queues.yaml --skip-existing --comment "Demo partition"
# A simulated cluster for the demo partition (built once, kept on later runs): nodes, thousands of
# tasks, pending asks. The churn process below keeps it moving and acknowledges evictions, since
# no real cluster is connected.
"$PY" manage.py simulate_cluster --partition default

# Job control puts every background process in its own process group, so Ctrl-C reaches only
# this script, which then stops each group (gunicorn and Celery workers fork children).
set -m
pids=()
start() {
  local name=$1; shift
  "$@" > >(sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
}

say() { echo "$@" 2>/dev/null || true; }

stop() {
  trap - INT TERM EXIT
  # Keep going even if our output pipe is gone (e.g. `make run | tee log` after Ctrl-C killed
  # tee): a write to it must not kill the script before the children are stopped.
  trap '' PIPE HUP
  say
  say "Stopping web, workers, beat and the simulator..."
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  say "Stopped."
}
trap stop INT TERM HUP EXIT

start web .venv/bin/gunicorn scheduler_admin.wsgi:application \
  --bind "127.0.0.1:$PORT" --workers 2 --access-logfile - --graceful-timeout 5 --no-control-socket
# Two workers, as in docker-compose.yml: sweeps and runs on the default queue, eviction webhook
# deliveries on a queue of their own, so a slow webhook receiver never holds up enforcement.
start worker .venv/bin/celery -A scheduler_admin worker --loglevel INFO --concurrency 1 \
  --queues celery --hostname "worker@%h"
start webhooks .venv/bin/celery -A scheduler_admin worker --loglevel INFO --concurrency 1 \
  --queues webhooks --hostname "webhooks@%h"
start beat .venv/bin/celery -A scheduler_admin beat --loglevel INFO \
  --schedule var/celerybeat-schedule
start sim "$PY" manage.py simulate_cluster --partition default --churn --interval 3

for _ in $(seq 1 100); do
  "$PY" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/healthz', timeout=1)" \
    2>/dev/null && break
  sleep 0.2
done
echo
echo "Scheduler Admin is running at http://127.0.0.1:$PORT/  (sign in as ${ADMIN_USERNAME:-admin}; Ctrl-C stops it)"
echo

# Stop everything as soon as any of them exits on its own.
wait -n "${pids[@]}" || true
