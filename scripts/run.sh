#!/usr/bin/env bash
# Runs the whole product on the embedded default: SQLite database, SQLite-backed Celery broker,
# web (gunicorn) + two Celery workers (enforcement; webhook deliveries) + Celery beat, an admin
# account, the demo partition and a simulated cluster that keeps changing (simulate_cluster --churn).
# Called by `make run`. Environment: PORT (default 8000), SCHEDULER_VAR_DIR (default var/),
# ADMIN_USERNAME/ADMIN_PASSWORD (manage.py ensure_admin), ACCESS_LOG=1 (gunicorn's access log,
# off by default: the console polls), LOG_LEVEL (the workers' and beat's, default INFO),
# PROMETHEUS_MULTIPROC_DIR (default var/metrics, emptied at start).
#
# Stopping. Any number and mix of SIGINT, SIGTERM and SIGHUP, to this script or to the whole
# process group of `make run` (Ctrl-C, a closed terminal, `kill`), stops every process it started
# and then the script, which exits by the first signal it got. How:
# - The traps only record the signal. All the work is done by `stop_all`, which runs once, from
#   the main flow: a trap that did the work itself ran again on the next signal (a double Ctrl-C),
#   and a second signal arriving after it had reset its traps killed the script half-way,
#   leaving every child running.
# - The traps are set before anything else, so a signal during the set-up (migrate, ensure_admin,
#   import) is handled too. Every command is started in a process group of its own (job control
#   on, `set -m`, only while it starts one) and its group is remembered; the only foreground
#   command is a short sleep. The terminal's Ctrl-C therefore reaches only make, this script
#   and that sleep; the children hear about it from `stop_all`: SIGTERM to each group's
#   leader (gunicorn's master and Celery's main process stop their own workers gracefully; a
#   SIGTERM to a Celery pool child would kill its task mid-way), up to STOP_SECONDS for every
#   group to empty, then SIGKILL to every group.
# - No `set -e`: a failing `kill` of a process that had already exited aborted the old stop
#   routine. Errors are checked where they matter.
# - The log prefixers (sed) are part of their service's group but ignore the signals, so the
#   services' last lines still get printed; they end when their service closes the pipe.
# - Waiting is a short foreground sleep in a loop that checks the recorded signal, instead of
#   `wait -n`, which a signal arriving just before it started would not interrupt.
set -uo pipefail

# A script started in the background by another script (`make run &` in a CI job or a wrapper)
# inherits SIGINT *ignored*, and bash cannot trap a signal that was ignored when it started: a
# later SIGINT would then stop nothing. Start over once with SIGINT at its default, so the trap
# below takes. (SIGHUP is left as found: `nohup make run` ignores it on purpose.)
if [ -z "${SCHEDULER_RUN_SIGINT_RESET:-}" ] && [ -r "/proc/$$/status" ]; then
  ignored=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$$/status")
  if [ -n "$ignored" ] && (( (16#$ignored >> 1) & 1 )); then
    export SCHEDULER_RUN_SIGINT_RESET=1
    python="$(dirname "$0")/../.venv/bin/python"
    [ -x "$python" ] || python=python3
    exec "$python" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv("/bin/bash", ["bash", *sys.argv[1:]])' "$0" "$@"
  fi
fi

stop_signal=""
for signal_name in INT TERM HUP; do
  trap "stop_signal=\${stop_signal:-$signal_name}" "$signal_name"
done
# Output to a terminal that went away (or `make run | tee log` after tee died) must not kill the
# script before it has stopped its children: writes then fail, and `say` ignores that.
trap ':' PIPE

cd "$(dirname "$0")/.." || exit 1

PY=.venv/bin/python
PORT="${PORT:-8000}"
VAR_DIR="${SCHEDULER_VAR_DIR:-var}"
BASE_URL="http://127.0.0.1:$PORT"
# Celery's warm shutdown alone takes 4 to 7 s on an idle machine (it lets a running task end).
STOP_SECONDS=15
READY_SECONDS=90
READY_DIR="$VAR_DIR/run-ready"
ADMIN_NOTE="$VAR_DIR/run-admin-note"
export SCHEDULER_ENV="${SCHEDULER_ENV:-local}"
export PYTHONUNBUFFERED=1
mkdir -p "$VAR_DIR" || exit 1

groups=()   # the process group of everything started, set-up steps included
services=() # "name:pgid" of each long-running service
block_shown=0
admin_note=""

say() { printf '%s\n' "$@" 2> /dev/null || true; }

nap() { sleep "$1" 2> /dev/null || true; }

# Is any live (non-zombie) process left in one of our process groups? One pass over /proc when
# there is one: a zombie whose parent died waits for init to reap it, which a container's init
# may never do, and it holds nothing. Elsewhere `kill -0` on each group (zombies count there).
anything_left() {
  local pgid stat fields state pgrp
  ((${#groups[@]})) || return 1
  if [ -r /proc/self/stat ]; then
    local -A ours=()
    for pgid in "${groups[@]}"; do ours[$pgid]=1; done
    for stat in /proc/[0-9]*/stat; do
      read -r fields 2> /dev/null < "$stat" || continue
      fields=${fields##*) }  # after "(command name)": state ppid pgrp ...
      state=${fields%% *}
      fields=${fields#* }
      fields=${fields#* }
      pgrp=${fields%% *}
      [ "$state" != Z ] && [ -n "${ours[$pgrp]:-}" ] && return 0
    done
    return 1
  fi
  for pgid in "${groups[@]}"; do kill -0 -- "-$pgid" 2> /dev/null && return 0; done
  return 1
}

# Stop everything started so far; runs once (an EXIT after it finds nothing to do).
stop_all() {
  local pgid deadline=$((SECONDS + STOP_SECONDS))
  ((${#groups[@]})) || return 0
  if ((${#services[@]})); then say "" "Stopping web, workers, beat and the simulator..."
  else say "" "Stopping the start-up..."; fi
  for pgid in "${groups[@]}"; do kill -TERM "$pgid" 2> /dev/null; done
  while anything_left && ((SECONDS < deadline)); do nap 0.1; done
  if anything_left; then
    say "Still running after ${STOP_SECONDS}s: killing what is left."
    for pgid in "${groups[@]}"; do kill -KILL -- "-$pgid" 2> /dev/null; done
  fi
  wait 2> /dev/null
  groups=()
  rm -rf "$READY_DIR" "$ADMIN_NOTE"
  say "Stopped."
}

# Stop everything and exit: by the signal that asked for it (so make and shells see an
# interrupted command; 128 + its number should it be ignored), else with status $1.
finish() {
  stop_all
  # A generated password must not get lost when the start-up ends before the final block.
  [ "$block_shown" = 0 ] && [ -n "$admin_note" ] && say "" "$admin_note"
  trap - EXIT
  if [ -n "$stop_signal" ]; then
    trap - "$stop_signal"
    kill -s "$stop_signal" $$
    exit $((128 + $(kill -l "$stop_signal")))
  fi
  exit "${1:-1}"
}
trap 'finish 1' EXIT

stop_if_asked() { [ -z "$stop_signal" ] || finish; }

# Start a command (one process: a program, or a function that ends in exec) in a process group
# of its own, which it leads; remember the group. With job control off, bash would start it in
# our group, where the terminal's Ctrl-C reaches it, and ignoring SIGINT.
spawn() {
  set -m
  "$@" &
  set +m
  groups+=("$!")
}

# A set-up step: run it in its own group, wait for it or for a signal; stop on failure.
# With --to FILE its standard output goes to FILE.
step() {
  local to="" pid status
  if [ "$1" = --to ]; then to=$2; shift 2; fi
  stop_if_asked
  if [ -n "$to" ]; then spawn "$@" < /dev/null > "$to"; else spawn "$@" < /dev/null; fi
  pid=$!
  while kill -0 "$pid" 2> /dev/null; do
    stop_if_asked
    nap 0.1
  done
  wait "$pid"
  status=$?
  unset 'groups[-1]'  # gone: never signal its number again (it could be reused)
  stop_if_asked
  if ((status != 0)); then
    say "Start-up stopped: '$*' failed (exit status $status)."
    finish "$status"
  fi
}

# The log prefixer of service $1: ignores the stop signals (see above), and copies each line that
# matches the service's readiness pattern $2 to $READY_DIR/$1.
prefix() {
  trap '' INT TERM HUP
  exec sed -u -e "/$2/w $READY_DIR/$1" -e "s/^/[$1] /"
}

# A long-running service: name, readiness pattern, command. Its output goes through its prefixer,
# a child of the service's own process (so in its group), which the group's leader is.
service() {
  stop_if_asked
  spawn _exec_prefixed "$@"
  services+=("$1:$!")
}
_exec_prefixed() {
  local name=$1 ready=$2
  shift 2
  exec "$@" < /dev/null > >(prefix "$name" "$ready") 2>&1
}

# Does /healthz answer 200? Plain bash, no process started (this runs every 0.2 s at start-up).
healthy() {
  local status=""
  { exec 3<> "/dev/tcp/127.0.0.1/$PORT"; } 2> /dev/null || return 1
  printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 2> /dev/null
  read -r -t 2 _ status _ <&3 2> /dev/null
  exec 3<&-
  [ "$status" = 200 ]
}

# The services that have not said they are ready.
not_ready() {
  local entry name
  for entry in "${services[@]}"; do
    name=${entry%%:*}
    if [ "$name" = web ]; then healthy || printf '%s ' "$name"
    elif [ ! -s "$READY_DIR/$name" ]; then printf '%s ' "$name"
    fi
  done
}

# The first service whose main process has exited, if any.
exited_service() {
  local entry
  for entry in "${services[@]}"; do
    kill -0 "${entry#*:}" 2> /dev/null || { printf '%s' "${entry%%:*}"; return 0; }
  done
  return 1
}

show_block() {
  local waiting=$1 user="${ADMIN_USERNAME:-admin}" env_prefix="SCHEDULER_ENV=$SCHEDULER_ENV"
  [ -n "${SCHEDULER_VAR_DIR:-}" ] && env_prefix+=" SCHEDULER_VAR_DIR=$SCHEDULER_VAR_DIR"
  local rule="========================================================================"
  say "" "$rule" "Scheduler Admin is running at $BASE_URL/" \
    "  REST API:      API=$BASE_URL/api/v1   (the curl examples of the docs use \$API)" \
    "  Help:          $BASE_URL/docs/   (each console page's Help link opens its part)" \
    "  Sign in as:    $user"
  [ -n "$admin_note" ] && say "$admin_note" | sed 's/^/  /'
  say "  Reset the password: $env_prefix .venv/bin/python manage.py changepassword $user"
  [ -n "$waiting" ] && say "  Still starting: $waiting"
  say "Ctrl-C stops everything." "$rule" ""
  block_shown=1
}

# --- Set-up -------------------------------------------------------------------------------------
if (exec 3<> "/dev/tcp/127.0.0.1/$PORT") 2> /dev/null; then
  say "Port $PORT is in use; pick another one, e.g. PORT=$((PORT + 1)) make run"
  exit 1
fi

# One secret key per checkout, kept under var/ (never committed) unless the environment has one.
if [ -z "${SECRET_KEY:-}" ]; then
  if [ ! -s "$VAR_DIR/secret_key" ]; then
    (umask 077 && : > "$VAR_DIR/secret_key.new")
    step --to "$VAR_DIR/secret_key.new" "$PY" -c 'import secrets; print(secrets.token_urlsafe(50))'
    mv "$VAR_DIR/secret_key.new" "$VAR_DIR/secret_key"
  fi
  SECRET_KEY="$(cat "$VAR_DIR/secret_key")"
  export SECRET_KEY
fi

# Prometheus's multiprocess files (README "Metrics"): web, the workers and the simulator count
# into one directory, which /metrics adds up. Emptied at every start (only its *.db files: the
# directory may be one the caller named), so an earlier run's counts never join this one's.
PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$VAR_DIR/metrics}"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR" || exit 1
PROMETHEUS_MULTIPROC_DIR="$(cd "$PROMETHEUS_MULTIPROC_DIR" && pwd)"
find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -type f -name '*.db' -delete
export PROMETHEUS_MULTIPROC_DIR

step "$PY" manage.py migrate --noinput -v 0
# ensure_admin prints a generated password once: it is kept for the block at the end (and shown
# by `finish` if the start-up never gets there), in a file only we can read, removed at once.
(umask 077 && : > "$ADMIN_NOTE")
step --to "$ADMIN_NOTE" "$PY" manage.py ensure_admin
admin_note=$(cat "$ADMIN_NOTE")
rm -f "$ADMIN_NOTE"
step "$PY" manage.py import_config demo/queues.yaml --skip-existing --comment "Demo partition"

# --- Services -----------------------------------------------------------------------------------
rm -rf "$READY_DIR"
mkdir -p "$READY_DIR"
access_log=()
[ "${ACCESS_LOG:-0}" = 1 ] && access_log=(--access-logfile -)
service web 'Listening at' .venv/bin/gunicorn scheduler_admin.wsgi:application \
  --bind "127.0.0.1:$PORT" --workers 2 "${access_log[@]}" --graceful-timeout 5 \
  --no-control-socket
# Two workers, as in docker-compose.yml: sweeps and runs on the default queue, eviction webhook
# deliveries on a queue of their own, so a slow webhook receiver never holds up enforcement.
# --quiet: no banner (the block at the end says what matters).
service worker ' ready\.$' .venv/bin/celery -A scheduler_admin --quiet worker \
  --loglevel "${LOG_LEVEL:-INFO}" --concurrency 1 --queues celery --hostname "worker@%h"
service webhooks ' ready\.$' .venv/bin/celery -A scheduler_admin --quiet worker \
  --loglevel "${LOG_LEVEL:-INFO}" --concurrency 1 --queues webhooks --hostname "webhooks@%h"
service beat 'beat: Starting' .venv/bin/celery -A scheduler_admin --quiet beat \
  --loglevel "${LOG_LEVEL:-INFO}"
# A simulated cluster for the demo partition (built on the first run, kept on later runs): nodes,
# thousands of tasks, pending asks. It keeps moving and acknowledges evictions, since no real
# cluster is connected.
service sim '^Churning' "$PY" manage.py simulate_cluster --partition default --churn --interval 3

# --- Running ------------------------------------------------------------------------------------
# Until a signal, or until a service exits on its own (then everything stops). The block with
# the URL and the account comes once every service is ready, so it is the last thing printed.
ready_deadline=$((SECONDS + READY_SECONDS))
while :; do
  stop_if_asked
  if gone=$(exited_service); then
    say "[$gone] exited on its own; stopping the others."
    finish 1
  fi
  if [ "$block_shown" = 0 ]; then
    waiting=$(not_ready)
    if [ -z "$waiting" ] || ((SECONDS >= ready_deadline)); then
      # Checking readiness takes a moment (web's health check may wait up to 2 s): a Ctrl-C in
      # that moment stops here, before the block says everything runs.
      stop_if_asked
      show_block "$waiting"
    fi
    nap 0.2
  else
    nap 0.5
  fi
done
