#!/usr/bin/env bash
# How long a policy change takes to reach a fleet, on one replica with external PostgreSQL:
#   1. enrolls NODES nodes (tags tag:t<i % 100>), PUTs the 50-grant policy of the heartbeat benchmark
#      (grant i: tag:t(2i) -> tag:t(2i+1) on tcp/(1000+i)), and brings every agent current
#      (enroll.py beat --versions-out: passes until every node is answered unchanged);
#   2. PUTs a changed policy (same pairs, other ports: every destination node's rules change, no
#      node's peers do), timing the PUT (it answers once this replica's model has applied it) and
#      reading the service's CPU time around it (the recomputation, plus the request);
#   3. one pass of heartbeats, every agent with the versions it holds, as fast as 8 threads go: how
#      many answers carried new rules, and when the last one did. Real agents beat every interval_s
#      (30 s), so in a fleet the last node has the change one interval after the PUT at most; the
#      pass shows the service's side of it: how fast it hands out the new versions.
# Usage: bash load-tests/policy-change.sh [JAR]   Env: NODES (10000) HTTP_PORT (18290)
# Needs PostgreSQL at 127.0.0.1:5432 (user postgres), python3, curl. Loopback only; bounded waits.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
NODES="${NODES:-10000}"
source "$SCRIPT_DIR/bench-lib.sh"
WORK="$(mktemp -d)"
DB="policychange_$$"
PORT="$(free_port "${HTTP_PORT:-18290}")"
PANEL="$(free_port $((PORT + 1)) "$PORT")"
CPORT="$(free_port 15990)"
log() { echo "[policy-change $(date +%T)] $*" >&2; }
cleanup() {
  [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB" >/dev/null
export MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" MESH_HTTP_HOST=127.0.0.1 MESH_HTTP_PORT="$PORT" MESH_PANEL_PORT="$PANEL" \
  MESH_CLUSTER_PORT="$CPORT" MESH_CLUSTER_MEMBERS="127.0.0.1:$CPORT" MESH_CLUSTER_HOST=127.0.0.1 MESH_CLUSTER_NAME="pc-$$" \
  MESH_KEYS_DIR="$WORK/keys" MESH_HEARTBEAT_INTERVAL=30s MESH_STALE_AFTER=1h
java -Xms512m -Xmx1g -jar "$JAR" run >"$WORK/service.log" 2>&1 &
PID=$!
for _ in $(seq 1 120); do curl -sf "localhost:$PORT/readyz" >/dev/null && break; sleep 0.5; done
curl -sf "localhost:$PORT/readyz" >/dev/null || { log "the service did not get ready"; tail -20 "$WORK/service.log"; exit 1; }
TOKEN="$(java -jar "$JAR" token create --name bench --team '*' --environment '*' --surface admin --expires 1d 2>/dev/null | tail -1)"
BASE="http://127.0.0.1:$PORT"
log "enrolling $NODES nodes"
timeout 1000 python3 "$SCRIPT_DIR/enroll.py" enroll "$BASE" "$TOKEN" "$NODES" "$WORK/nodes.txt" --tags 100 >/dev/null
policy() { # policy PORT_BASE: the 50 grants with ports from PORT_BASE
  python3 -c 'import json,sys; b=int(sys.argv[1]); print(json.dumps({"grants":[{"src":["tag:t%d"%(2*i)],"dst":["tag:t%d"%(2*i+1)],"ports":["tcp/%d"%(b+i)]} for i in range(50)]}))' "$1"
}
put() { curl -s -o "$WORK/put.json" -w '%{http_code} %{time_total}\n' -X PUT -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' --data-binary "$1" "$BASE/v1/acl?team=bench&environment=prod"; }
read -r code _ < <(put "$(policy 1000)"); [[ "$code" == 200 ]] || { log "PUT: $code $(cat "$WORK/put.json")"; exit 1; }
log "bringing every agent current"
timeout 900 python3 "$SCRIPT_DIR/enroll.py" beat "$BASE" "$WORK/nodes.txt" --versions-out "$WORK/v1.txt" --max-passes 8 >"$WORK/sync.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("synced:", "settled" if j.get("settled") else "NOT settled", "after", len(j.get("passes", [])), "passes")' "$WORK/sync.json"
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
TICK="$(getconf CLK_TCK)"
sleep 3
C0="$(cpu)"
read -r code secs < <(put "$(policy 2000)")
C1="$(cpu)"
[[ "$code" == 200 ]] || { log "PUT: $code $(cat "$WORK/put.json")"; exit 1; }
T0="$(date +%s.%N)"
timeout 900 python3 "$SCRIPT_DIR/enroll.py" beat "$BASE" "$WORK/v1.txt" --threads 8 >"$WORK/after.json"
T1="$(date +%s.%N)"
python3 - "$WORK/after.json" "$NODES" "$secs" "$C0" "$C1" "$TICK" "$T0" "$T1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); n = int(sys.argv[2]); put_s = float(sys.argv[3])
cpu_ms = (float(sys.argv[5]) - float(sys.argv[4])) * 1000 / float(sys.argv[6])
p = j["passes"][0] if j.get("passes") else j
print("policy change over %d nodes (50 grants, new ports: the destination half's rules change, nobody's peers)" % n)
print("  PUT answered in %.0f ms (after this replica's model applied it); service CPU during the PUT: %.0f ms" % (put_s * 1000, cpu_ms))
print("  next heartbeat of every node, one pass at full speed: %d heartbeats in %.1f s; answers with new rules: %d, rules unchanged: %d;"
      " peers full %d, delta %d, unchanged %d" % (p["heartbeats"], p["seconds"], p.get("acl_rules", -1), p.get("acl_unchanged", -1),
      p.get("peers_full", -1), p.get("peers_delta", -1), p.get("peers_unchanged", -1)))
print("  so every node has the new version %.1f s after the PUT's answer when all beat at once; a fleet at interval_s 30 has it within one interval" % (float(sys.argv[8]) - float(sys.argv[7])))
PY
echo "service log ERROR lines: $(grep -c ERROR "$WORK/service.log" || true)"
