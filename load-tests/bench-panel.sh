#!/usr/bin/env bash
# What the panel's way in costs the service, in deterministic-ish figures: the replica's CPU time per
# request (from /proc/PID/stat over a fixed request count), for the same inventory page read
#   - through the coordinator API with a bearer token (GET /v1/nodes?limit=100), and
#   - through the panel API with a session cookie (GET /api/v1/nodes?limit=100: + a session lookup
#     and a rate-limit bucket in the Hazelcast map),
# and for a login (argon2id, m=19 MiB, t=2), whose cost is the password hash.
#
# Usage: bash load-tests/bench-panel.sh [JAR]     (default JAR: <repo>/target/meshplane.jar)
# Env:   REQUESTS (3000) LOGINS (30) NODES (100) PGURL (postgresql://postgres@127.0.0.1:5432; a fresh
#        database is created and dropped) HTTP_PORT (18190) PANEL_PORT (18191) CLUSTER_PORT (15890)
# Needs: java, node (20+), psql, curl. Loopback only; every wait is bounded.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
JAR="${1:-$REPO_ROOT/target/meshplane.jar}"
REQUESTS="${REQUESTS:-3000}"; LOGINS="${LOGINS:-30}"; NODES="${NODES:-100}"
PGURL="${PGURL:-postgresql://postgres@127.0.0.1:5432}"
source "$SCRIPT_DIR/bench-lib.sh"
log() { printf '[bench-panel %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
[[ -f "$JAR" ]] || { log "jar not found: $JAR (mvn -B -q package -DskipTests)"; exit 1; }
HTTP_PORT="$(free_port "${HTTP_PORT:-18190}")"; PANEL_PORT="$(free_port "${PANEL_PORT:-18191}" "$HTTP_PORT")"
CLUSTER_PORT="$(free_port "${CLUSTER_PORT:-15890}")"
WORK="$(mktemp -d)"; DB="bench_panel_$$"; PID=""
cleanup() {
  [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && for _ in $(seq 1 30); do kill -0 "$PID" 2>/dev/null || break; sleep 0.5; done
  psql "$PGURL/postgres" -qAtc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
psql "$PGURL/postgres" -qAtc "CREATE DATABASE $DB" >/dev/null
OPENS="$(sed -n 's:.*<jvm.opens>\(.*\)</jvm.opens>.*:\1:p' "$REPO_ROOT/pom.xml" | head -n 1)"
export MESH_PG_URL="$PGURL/$DB" MESH_HTTP_HOST=127.0.0.1 MESH_HTTP_PORT="$HTTP_PORT" MESH_PANEL_PORT="$PANEL_PORT"
export MESH_CLUSTER_PORT="$CLUSTER_PORT" MESH_CLUSTER_HOST=127.0.0.1 MESH_CLUSTER_MEMBERS="127.0.0.1:$CLUSTER_PORT"
export MESH_CLUSTER_NAME="bench-panel-$$" MESH_KEYS_DIR="$WORK/keys" MESH_PANEL_COOKIE_SECURE=false
export MESH_PANEL_API_RATE=100000 MESH_PANEL_API_BURST=100000 MESH_PANEL_LOGIN_PER_ADDRESS=100000 MESH_PANEL_LOGIN_FAILURES=1000
# shellcheck disable=SC2086
java -Xmx1g $OPENS -jar "$JAR" run >"$WORK/service.log" 2>&1 &
PID=$!
for _ in $(seq 1 180); do grep -q "ready: the coordinator API" "$WORK/service.log" && break; kill -0 "$PID" || { cat "$WORK/service.log"; exit 1; }; sleep 0.5; done
grep -q "ready: the coordinator API" "$WORK/service.log" || { log "not ready in 90 s"; exit 1; }
# shellcheck disable=SC2086
TOKEN="$(java $OPENS -jar "$JAR" token create --name bench --team '*' --environment '*' --surface admin --expires 1d 2>/dev/null | tail -n 1)"
# shellcheck disable=SC2086
BENCH_PASSWORD="bench password long enough" java $OPENS -jar "$JAR" user create --username bench --role admin --team '*' \
  --environment '*' --password-env BENCH_PASSWORD >/dev/null 2>&1
for i in $(seq 1 "$NODES"); do
  key="$(head -c 32 /dev/urandom | base64)"
  curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d "{\"name\":\"n$i\",\"public_key\":\"$key\",\"team\":\"bench\",\"environment\":\"prod\",\"tags\":[\"tag:bench\"]}" \
    "http://127.0.0.1:$HTTP_PORT/v1/nodes"
done
COOKIE="$(curl -s -D - -o /dev/null -H 'Content-Type: application/json' -d '{"username":"bench","password":"bench password long enough"}' \
  "http://127.0.0.1:$PANEL_PORT/api/v1/session" | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\);.*/\1/p')"
[[ -n "$COOKIE" ]] || { log "login failed"; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ="$(getconf CLK_TCK)"
phase() { # NAME N args...
  local name="$1" n="$2"; shift 2
  node "$SCRIPT_DIR/panel-requests.mjs" "$@" >/dev/null   # warm-up with the same count
  local t0; t0="$(ticks)"
  local out; out="$(node "$SCRIPT_DIR/panel-requests.mjs" "$@")"
  local t1; t1="$(ticks)"
  local us=$(( (t1 - t0) * 1000000 / HZ / n ))
  printf '%-34s n=%-6s service CPU %6s µs/request   %s\n' "$name" "$n" "$us" "$out"
}
echo "jar: $JAR   nodes: $NODES   java: $(java -version 2>&1 | head -n 1)"
phase "GET /v1/nodes?limit=100 (bearer)" "$REQUESTS" "http://127.0.0.1:$HTTP_PORT/v1/nodes?limit=100" "$REQUESTS" "Authorization:Bearer $TOKEN"
phase "GET /api/v1/nodes?limit=100 (cookie)" "$REQUESTS" "http://127.0.0.1:$PANEL_PORT/api/v1/nodes?limit=100" "$REQUESTS" "Cookie:$COOKIE"
phase "GET /v1/relays (bearer)" "$REQUESTS" "http://127.0.0.1:$HTTP_PORT/v1/relays" "$REQUESTS" "Authorization:Bearer $TOKEN"
phase "GET /api/v1/relays (cookie)" "$REQUESTS" "http://127.0.0.1:$PANEL_PORT/api/v1/relays" "$REQUESTS" "Cookie:$COOKIE"
phase "POST /api/v1/session (argon2id)" "$LOGINS" "http://127.0.0.1:$PANEL_PORT/api/v1/session" "$LOGINS" \
  --post '{"username":"bench","password":"bench password long enough"}'
