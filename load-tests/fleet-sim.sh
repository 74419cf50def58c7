#!/usr/bin/env bash
# A simulated fleet against one replica, and a re-key wave through it:
#   1. starts one replica (external PostgreSQL at 127.0.0.1:5432, a fresh database) with a 50-grant
#      policy over 100 tags, and mints an enrollment token;
#   2. runs `meshplane simulate` (N agents in one process, the reference agent's protocol code) for
#      DURATION at INTERVAL: every agent enrolls, heartbeats with jitter, keeps peers and rules, and
#      executes commands;
#   3. once every agent has beaten (after RAMP), asks for REKEY re-keys at once (POST /v1/nodes/{id}/rekey,
#      16 in parallel) and polls PostgreSQL until all have succeeded: the time until the last one did,
#      and the distribution of (completed_at - requested_at);
#   4. reads the simulator's CPU time and its heap after a full GC (per agent), the service's CPU time
#      per heartbeat over the steady part of the run, and prints the simulator's summary lines.
# Usage: bash load-tests/fleet-sim.sh [JAR]
# Env:   NODES (10000) INTERVAL (30s) DURATION (4m) RAMP (90s: enrollment + one interval) REKEY (1000)
#        TAGS (100): the fleet is spread over tag:t0..tag:t<TAGS-1> (node n in tag:t<n mod TAGS>); the
#          policy's 50 grants pair tag:t0..t99, so with TAGS=100 every node has NODES/100 peers, with
#          TAGS=1000 a tenth of the fleet has NODES/1000 peers and the rest none
#        SIM_XMX (1g) SERVICE_XMX (2g) HTTP_PORT (18390) CONCURRENCY (64: the simulator's --concurrency)
#        KEEP_DIR: copy the simulator's output and the service log there (the work dir is removed on exit)
# Needs PostgreSQL at 127.0.0.1:5432 (user postgres), python3, curl, jcmd. Loopback only; every wait is bounded.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
NODES="${NODES:-10000}"
INTERVAL="${INTERVAL:-30s}"
DURATION="${DURATION:-4m}"
RAMP="${RAMP:-90s}"
REKEY="${REKEY:-1000}"
source "$SCRIPT_DIR/bench-lib.sh"
WORK="$(mktemp -d)"
DB="fleetsim_$$"
PORT="$(free_port "${HTTP_PORT:-18390}")"
PANEL="$(free_port $((PORT + 1)) "$PORT")"
CPORT="$(free_port 16090)"
log() { echo "[fleet-sim $(date +%T)] $*" >&2; }
cleanup() {
  if [[ -n "${KEEP_DIR:-}" ]]; then mkdir -p "$KEEP_DIR" && cp "$WORK"/sim.out "$WORK"/sim.err "$WORK"/service.log "$KEEP_DIR"/ 2>/dev/null || true; fi
  [[ -n "${SIM:-}" ]] && kill "$SIM" 2>/dev/null && wait "$SIM" 2>/dev/null || true
  [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB" >/dev/null
export MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" MESH_HTTP_HOST=127.0.0.1 MESH_HTTP_PORT="$PORT" MESH_PANEL_PORT="$PANEL" \
  MESH_CLUSTER_PORT="$CPORT" MESH_CLUSTER_MEMBERS="127.0.0.1:$CPORT" MESH_CLUSTER_HOST=127.0.0.1 MESH_CLUSTER_NAME="fs-$$" \
  MESH_KEYS_DIR="$WORK/keys" MESH_HEARTBEAT_INTERVAL="$INTERVAL" MESH_STALE_AFTER=1h MESH_OPERATIONS_DEADLINE=10m
java -Xms512m -Xmx"${SERVICE_XMX:-2g}" -jar "$JAR" run >"$WORK/service.log" 2>&1 &
PID=$!
for _ in $(seq 1 120); do curl -sf "localhost:$PORT/readyz" >/dev/null && break; sleep 0.5; done
curl -sf "localhost:$PORT/readyz" >/dev/null || { log "the service did not get ready"; tail -20 "$WORK/service.log"; exit 1; }
mint() { java -jar "$JAR" token create --name "$1" --team "$2" --environment "$3" --surface "$4" --expires 1d 2>/dev/null | tail -1; }
ADMIN="$(mint bench '*' '*' admin)"
ENROLL="$(mint fleet bench prod enrollment)"
BASE="http://127.0.0.1:$PORT"
POLICY="$(python3 -c 'import json; print(json.dumps({"grants":[{"src":["tag:t%d"%(2*i)],"dst":["tag:t%d"%(2*i+1)],"ports":["tcp/%d"%(1000+i)]} for i in range(50)]}))')"
code="$(curl -s -o "$WORK/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  --data-binary "$POLICY" "$BASE/v1/acl?team=bench&environment=prod")"
[[ "$code" == 200 ]] || { log "policy PUT: $code $(cat "$WORK/put.json")"; exit 1; }

cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK="$(getconf CLK_TCK)"
hb_total() { curl -s "$BASE/metrics" | awk '/^mesh_node_heartbeats_total/ {print $2}'; }

log "simulating $NODES agents at $INTERVAL for $DURATION"
java -Xmx"${SIM_XMX:-1g}" -jar "$JAR" simulate --coordinator "$BASE" --enroll-token "$ENROLL" --nodes "$NODES" \
  --interval "$INTERVAL" --duration "$DURATION" --tags "tag:t0" --spread-tags "${TAGS:-100}" --concurrency "${CONCURRENCY:-64}" >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM=$!
sleep "$(to_seconds "$RAMP")"
kill -0 "$SIM" 2>/dev/null || { log "the simulator stopped early"; tail -20 "$WORK/sim.err" "$WORK/sim.out"; exit 1; }

# steady state: service CPU per heartbeat over 60 s
S0="$(cpu_of "$PID")"; H0="$(hb_total)"; sleep 60; S1="$(cpu_of "$PID")"; H1="$(hb_total)"

REKEY_LINE="re-key wave skipped (REKEY=0)"
if [[ "$REKEY" -gt 0 ]]; then
  # the first REKEY nodes of the fleet, by id
  python3 - "$BASE" "$ADMIN" "$REKEY" >"$WORK/ids.txt" <<'PY'
import json, sys, urllib.request
base, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids, cursor = [], None
while len(ids) < n:
    url = base + "/v1/nodes?limit=1000" + ("&cursor=" + cursor if cursor else "")
    j = json.load(urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token}), timeout=30))
    ids += [i["id"] for i in j["items"]]
    cursor = j["next_cursor"]
    if not cursor: break
print("\n".join(ids[:n]))
PY
  log "re-keying $(wc -l <"$WORK/ids.txt") nodes at once"
  T0="$(date +%s.%N)"
  xargs -P 16 -I{} curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $ADMIN" "$BASE/v1/nodes/{}/rekey" \
    <"$WORK/ids.txt" >"$WORK/rekey-codes.txt"
  T1="$(date +%s.%N)"
  limit=$(( $(to_seconds "$INTERVAL") * 4 + 30 ))
  for _ in $(seq 1 "$limit"); do
    done_n="$(psql -h 127.0.0.1 -U postgres -d "$DB" -tAc "SELECT count(*) FROM operations WHERE status <> 'pending' AND status <> 'delivered'")"
    [[ "$done_n" -ge "$(wc -l <"$WORK/ids.txt")" ]] && break
    sleep 1
  done
  T2="$(date +%s.%N)"
  REKEY_LINE="$(psql -h 127.0.0.1 -U postgres -d "$DB" -tA -F ' ' -c "
    SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE status NOT IN ('succeeded')),
           round(extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY completed_at - requested_at))::numeric, 1),
           round(extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY completed_at - requested_at))::numeric, 1),
           round(extract(epoch FROM max(completed_at) - min(requested_at))::numeric, 1)
    FROM operations WHERE kind = 'rekey'" | awk -v ask="$(python3 -c "print(round($T1 - $T0, 1))")" \
      '{printf "re-key wave: %d succeeded, %d not; asked in %s s; requested->completed p50 %s s, p99 %s s; first request to last completion %s s", $1, $2, ask, $3, $4, $5}')"
  echo "   answers to the requests: $(sort "$WORK/rekey-codes.txt" | uniq -c | tr '\n' ' ')"
fi

# the simulator's heap after a full GC, per agent
jcmd "$SIM" GC.run >/dev/null 2>&1 || true
HEAP_KB="$(jcmd "$SIM" GC.heap_info 2>/dev/null | awk '/used/ {for (i = 1; i <= NF; i++) if ($i == "used") {v = $(i + 1); sub("K", "", v); print v; exit}}')"
SIMCPU="$(cpu_of "$SIM")"
wait "$SIM" || log "the simulator exited with $?"
SIM=""
echo "fleet: $NODES simulated agents at $INTERVAL, one replica (external PostgreSQL), 50-grant policy, fleet over ${TAGS:-100} tags"
python3 - "$S0" "$S1" "$H0" "$H1" "$TICK" "$SIMCPU" "$HEAP_KB" "$NODES" <<'PY'
import sys
s0, s1, h0, h1, tick, simcpu, heap, n = [float(x or 0) for x in sys.argv[1:9]]
hb = h1 - h0
print("  service over 60 s of steady state: %.0f heartbeats/s, %.0f us CPU per heartbeat" % (hb / 60, (s1 - s0) / tick * 1e6 / max(hb, 1)))
print("  simulator: %.1f s CPU so far (%.0f us per agent per heartbeat is in its summary); heap after full GC %.0f MB = %.0f B per agent"
      % (simcpu / tick, 0, heap / 1024, heap * 1024 / n))
PY
echo "  $REKEY_LINE"
echo "simulator summary (last lines):"
tail -5 "$WORK/sim.out"
echo "service log ERROR lines: $(grep -c ERROR "$WORK/service.log" || true); simulator stderr lines: $(wc -l <"$WORK/sim.err")"
