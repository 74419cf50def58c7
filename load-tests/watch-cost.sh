#!/usr/bin/env bash
# What an idle watch stream costs a replica (issue 27): one replica on external PostgreSQL, NODES simulated
# agents (`meshplane simulate --watch`) that each hold a stream, over HTTP/1.1 (MODE=h1: one TCP connection
# per stream) or HTTP/2 (MODE=h2: up to 1,000 streams per connection), from several loopback source
# addresses. Once every stream is open and the fleet is quiet it records the replica's heap after a full
# GC, its open files and its CPU over IDLE seconds; then it stops the simulator (every stream closes) and
# records the same without the streams. Prints the heap per stream, the CPU of the open streams (pings
# every 15 s) in % of one core, and the files per stream. The agents' heartbeats (every 5 minutes) stop with
# the simulator: the streams' CPU includes them (15,000 agents: 50 heartbeats/s, about 0.3 % of one core).
# Usage: MODE=h1|h2 NODES=15000 bash load-tests/watch-cost.sh [JAR]
# Env:   NODES (15000) MODE (h1) IDLE (120s) SETTLE (90s: after the last stream opened, for the JIT and the enrollment's work) SOURCES (127.0.0.2,…,127.0.0.5) SERVICE_XMX (3g) SIM_XMX (3g) HTTP_PORT (18590)
#        MESHPLANE_CP (run from this class path instead of the jar)
#        SERVICE_OPTS: more JVM options for the replica, split on spaces (e.g. "-XX:StartFlightRecording=filename=/tmp/w.jfr")
#        HISTO: a file prefix: the replica's class histograms with and without the streams go to HISTO.with / HISTO.without
# Needs PostgreSQL at 127.0.0.1:5432 (user postgres, trust), curl, psql, jcmd; an open-file limit of at least
# NODES + 2,000 in each process for MODE=h1 (this machine: 20,000 hard, so at most ~18,000 streams).
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
source "$SCRIPT_DIR/bench-lib.sh"
NODES="${NODES:-15000}"
MODE="${MODE:-h1}"
IDLE_S="$(to_seconds "${IDLE:-120s}")"
if [[ -n "${MESHPLANE_CP:-}" ]]; then MP=(java -cp "$MESHPLANE_CP" io.meshplane.Main); else
  [[ -f "$JAR" ]] || { echo "no jar at $JAR: run mvn -B -q package -DskipTests first" >&2; exit 2; }
  MP=(java -jar "$JAR"); fi
WORK="$(mktemp -d)"
DB="watchcost_$$"
PORT="$(free_port "${HTTP_PORT:-18590}")"
PANEL="$(free_port $((PORT + 1)) "$PORT")"
CPORT="$(free_port 16290)"
log() { echo "[watch-cost $(date +%T)] $*" >&2; }
cleanup() {
  if [[ -n "${SIM:-}" ]]; then kill "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true; fi
  if [[ -n "${PID:-}" ]]; then kill "$PID" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$PID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB" >/dev/null
export MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" MESH_HTTP_HOST=0.0.0.0 MESH_HTTP_PORT="$PORT" MESH_PANEL_PORT="$PANEL" \
  MESH_CLUSTER_PORT="$CPORT" MESH_CLUSTER_MEMBERS="127.0.0.1:$CPORT" MESH_CLUSTER_HOST=127.0.0.1 MESH_CLUSTER_NAME="wcost-$$" \
  MESH_KEYS_DIR="$WORK/keys" MESH_HEARTBEAT_INTERVAL=5m MESH_STALE_AFTER=15m MESH_WATCH_ADMIT_PER_SECOND=2000
read -r -a SERVICE_OPTS <<<"${SERVICE_OPTS:-}"
java -Xms256m -Xmx"${SERVICE_XMX:-3g}" "${SERVICE_OPTS[@]}" --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  "${MP[@]:1}" run >"$WORK/service.log" 2>&1 &
PID=$!
for _ in $(seq 1 180); do curl -sf "localhost:$PORT/readyz" >/dev/null && break; kill -0 "$PID" 2>/dev/null || break; sleep 0.5; done
curl -sf "localhost:$PORT/readyz" >/dev/null || { log "the service did not get ready"; tail -20 "$WORK/service.log"; exit 2; }
ENROLL="$("${MP[@]}" token create --name fleet --team cost --environment prod --surface enrollment --expires 1d 2>/dev/null | tail -1)"
metric() { curl -s "localhost:$PORT/metrics" | awk -v n="$1" '$1 == n {print $2}'; }
heap() { "${JCMD:-jcmd}" "$PID" GC.run >/dev/null; sleep 2; "${JCMD:-jcmd}" "$PID" GC.heap_info | awk '/garbage-first heap/ {for (i = 1; i <= NF; i++) if ($i == "used") {v = $(i + 1); sub(/K,?/, "", v); print v}}'; }
cpu() { metric process_cpu_seconds_total; }
fds() { ls "/proc/$PID/fd" | wc -l; }
WATCH_ARGS=(--watch --source-addresses "${SOURCES:-127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5}")
[[ "$MODE" == h2 ]] || WATCH_ARGS+=(--no-watch-http2)
log "$NODES agents, streams over $MODE: enrolling"
java -Xmx"${SIM_XMX:-3g}" "${MP[@]:1}" simulate --coordinator "http://127.0.0.1:$PORT" --enroll-token "$ENROLL" --nodes "$NODES" \
  --interval 5m --duration 30m --concurrency 64 "${WATCH_ARGS[@]}" >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM=$!
deadline=$((SECONDS + NODES / 50 + 300))
while :; do
  open="$(metric mesh_watch_streams)"; open="${open%.*}"
  [[ "${open:-0}" -ge "$NODES" ]] && break
  kill -0 "$SIM" 2>/dev/null || { log "the simulator ended"; tail -5 "$WORK/sim.err" "$WORK/sim.out"; exit 2; }
  (( SECONDS < deadline )) || { log "only ${open:-0} of $NODES streams open"; tail -3 "$WORK/sim.out"; exit 2; }
  sleep 5
done
log "every stream open; letting the enrollment's work settle"
sleep "$(to_seconds "${SETTLE:-90s}")"
H1="$(heap)"; F1="$(fds)"; [[ -z "${HISTO:-}" ]] || "${JCMD:-jcmd}" "$PID" GC.class_histogram >"$HISTO.with"; C0="$(cpu)"; sleep "$IDLE_S"; C1="$(cpu)"
log "stopping the simulator: every stream closes"
kill "$SIM"; wait "$SIM" 2>/dev/null || true; SIM=""
for _ in $(seq 1 120); do open="$(metric mesh_watch_streams)"; [[ "${open%.*}" == 0 ]] && break; sleep 1; done
sleep 10
H0="$(heap)"; F0="$(fds)"; [[ -z "${HISTO:-}" ]] || "${JCMD:-jcmd}" "$PID" GC.class_histogram >"$HISTO.without"; C2="$(cpu)"; sleep "$IDLE_S"; C3="$(cpu)"
awk -v n="$NODES" -v mode="$MODE" -v h1="$H1" -v h0="$H0" -v f1="$F1" -v f0="$F0" -v c0="$C0" -v c1="$C1" -v c2="$C2" -v c3="$C3" -v idle="$IDLE_S" 'BEGIN {
  printf "watch cost: %d idle streams over %s, one replica\n", n, (mode == "h2" ? "HTTP/2 (1,000 per connection)" : "HTTP/1.1 (one TCP connection each)")
  printf "  heap after full GC: %.1f MiB with the streams, %.1f MiB without: %.2f KB per stream\n", h1 / 1024, h0 / 1024, (h1 - h0) * 1.024 / n
  printf "  open files: %d with, %d without: %.3f per stream\n", f1, f0, (f1 - f0) / n
  printf "  CPU over %d s idle: %.1f %% of one core with the streams, %.1f %% without: %.2f %% for the streams\n", idle, (c1 - c0) * 100 / idle, (c3 - c2) * 100 / idle, ((c1 - c0) - (c3 - c2)) * 100 / idle
}'
grep "streams open" "$WORK/sim.out" | tail -1 | sed 's/^/  simulator: /' | cut -c1-400
