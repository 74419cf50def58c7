# What the propagation load tests share (ingress-propagation.sh, waf-propagation.sh): source it after bench-lib.sh and
# meshca-lib.sh with NODES, SPREAD, CHANGES, INTERVAL_S, WATCH and EDGES set, then call propagation_setup NAME. It starts
# a replica with a heartbeat interval of INTERVAL_S (admin token: api, field), enrolls a web node binding web:8080 (WEB),
# grants tag:edge0 -> tag:web, starts `meshplane simulate` with NODES nodes spread over SPREAD tags, tag:edge0 the ingress
# tag (its PID in SIM), defines states [VERSION [SYNC_FIELD]] ("<ingress nodes> <current on VERSION> <first node's current>",
# by ingress_sync or another *_sync field of the node records) and waits until the EDGES ingress nodes are enrolled.
propagation_setup() { # propagation_setup NAME
meshca_setup "$1"
MESHCA_ENV=(MESH_HEARTBEAT_INTERVAL="${INTERVAL_S}s")
replica_ports
start_replica
TOKEN="$(mint root '*' '*' admin)"
api() { curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); exec("for k in sys.argv[1].split(\".\"): d = d[int(k)] if isinstance(d, list) else d[k]"); print(d)' "$1"; }
EXPIRES="$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)"
ENROLL="$(api -X POST -d "{\"name\":\"prop-enroll\",\"scope\":{\"team\":\"shop\",\"environment\":\"prod\",\"surface\":\"enrollment\"},\"expires\":\"$EXPIRES\"}" \
  "$BASE/v1/auth/tokens" | field token)"
WEB="$(api -X POST -d "{\"name\":\"prop-web\",\"public_key\":\"$(python3 -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())')\",\"team\":\"shop\",\"environment\":\"prod\",\"tags\":[\"tag:web\"]}" \
  "$BASE/v1/nodes" | field node.id)"
api -X PUT -d '{"services":["web:8080"]}' "$BASE/v1/nodes/$WEB/services" >/dev/null
api -X PUT -H 'If-Match: 0' -d '{"grants":[{"src":["tag:edge0"],"dst":["tag:web"],"ports":["tcp/8080"]}]}' "$BASE/v1/acl?team=shop&environment=prod" >/dev/null

WATCH_FLAGS=(); [[ "$WATCH" == 1 ]] && WATCH_FLAGS=(--watch)
RUN_S=$(( 120 + CHANGES * (2 * INTERVAL_S + 15) ))
java -Xmx1g -jar "$JAR" simulate --coordinator "$BASE" --enroll-token "$ENROLL" --nodes "$NODES" --interval "${INTERVAL_S}s" \
  --duration "${RUN_S}s" --name-prefix prop --tags tag:edge0 --spread-tags "$SPREAD" --ingress-tag tag:edge0 --concurrency 32 \
  "${WATCH_FLAGS[@]}" >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM=$!
# the ingress nodes' sync states, one line: "<current count> <distinct acknowledged versions>"
states() {
  api "$BASE/v1/nodes?tag=tag:edge0&limit=500" | python3 -c '
import json,sys
items = json.load(sys.stdin)["items"]
key = sys.argv[2]
cur = [n for n in items if (n.get(key) or {}).get("state") == "current"]
want = sys.argv[1]
print(len(items), sum(1 for n in cur if want in ("", str(n[key]["current"]))), (items[0][key] or {}).get("current") if items else "")' "${1:-}" "${2:-ingress_sync}"
}
for i in $(seq 1 240); do
  read -r n _ _ <<<"$(states)"
  [[ "$n" == "$EDGES" ]] && break
  sleep 0.5
done
[[ "$n" == "$EDGES" ]] || { log "only $n of $EDGES ingress nodes enrolled"; exit 2; }
}
