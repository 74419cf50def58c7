#!/usr/bin/env bash
# Reloading the traffic policy under load (issue 30's figure): one replica, a target HTTP server, a web node and one ingress
# agent (edge-a) serving one route; IngressLoad.java sends RATE requests/s of GET / through it on keep-alive connections,
# and a new traffic policy version (the managed set at paranoia 1 and a custom rule naming the version) is PUT every
# RELOAD_S seconds from FIRST_S on. Prints what the client counted, the versions the edge applied, and the edge's own WAF
# figures from its /metrics (requests evaluated, the evaluation time histogram's p50/p99, CPU per request of the agent
# process); exits 1 when a request failed or a connection was reset, or the edge did not end on the last version.
#   bash load-tests/waf-reload.sh [JAR]    (RATE=1000 DURATION=60 FIRST_S=5 RELOAD_S=5)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
JAR_ARG="$(realpath "${1:-$HERE/../target/meshplane.jar}" 2>/dev/null || echo "${1:-$HERE/../target/meshplane.jar}")"
RATE="${RATE:-1000}"; SECONDS_RUN="${DURATION:-60}"; FIRST_S="${FIRST_S:-5}"; RELOAD_S="${RELOAD_S:-5}"
source "$HERE/bench-lib.sh"
source "$HERE/meshca-lib.sh"
source "$HERE/edge-lib.sh"
edge_setup waf-reload reload-enroll

WEB_LISTEN="$(free_port 19300)"; A_LISTEN="$(free_port 19310)"
A_PORT="$(free_port 18900 "$TARGET_PORT")"
agent web-1 tag:web "$WEB_LISTEN"
wait_log web-1 "first heartbeat accepted"
WEB="$(node_id web-1)"
WEB_IP="$(api "$BASE/v1/nodes/$WEB" | field address | cut -d/ -f1)"
agent edge-a tag:edge "$A_LISTEN" --ingress-listen "127.0.0.1:$A_PORT" --ingress-target-override "$WEB_IP=127.0.0.1"
wait_log edge-a "first heartbeat accepted"
EDGE_A="$(node_id edge-a)"
api -X PUT -d "{\"services\":[\"web:$TARGET_PORT\"]}" "$BASE/v1/nodes/$WEB/services" >/dev/null
api -X PUT -H 'If-Match: 0' -d "{\"grants\":[{\"src\":[\"tag:edge\"],\"dst\":[\"tag:web\"],\"ports\":[\"tcp/$TARGET_PORT\"]}]}" \
  "$BASE/v1/acl?team=shop&environment=prod" >/dev/null
ROUTE="$(api -X POST -d "{\"team\":\"shop\",\"environment\":\"prod\",\"hostname\":\"shop.example.com\",\"target\":{\"node\":\"$WEB\",\"service\":\"web\"},\"exposure\":\"public\",\"tls\":\"acme\",\"ingress_tag\":\"tag:edge\"}" \
  "$BASE/v1/ingress/routes" | field id)"
for i in $(seq 1 120); do
  a="$(api "$BASE/v1/nodes/$EDGE_A" | field ingress_sync.state)"
  [[ "$a" == current ]] && break
  sleep 0.5
done
[[ "$a" == current ]] || { log "the edge did not get route $ROUTE ($a)"; exit 2; }
[[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: shop.example.com' "http://127.0.0.1:$A_PORT/")" == 200 ]] || { log "the edge does not serve the route"; exit 2; }
log "route $ROUTE served by edge-a (:$A_PORT); $RATE requests/s for ${SECONDS_RUN}s, a new traffic policy version every ${RELOAD_S}s from ${FIRST_S}s"
doc() { echo '{"mode":"enforce","managed":{"paranoia":1},"rules":[{"id":"no-v'"$1"'","expression":"request.path_normalized.startsWith(\u0027/v'"$1"'\u0027)","action":{"type":"deny","status":403}}],"tests":[{"name":"v'"$1"'","expect":"deny","rule":"no-v'"$1"'","request":{"target":"/v'"$1"'/x"}}]}'; }
EDGE_PID="$(pgrep -f -- "--name edge-a" | head -1)"
cpu() { awk '{print $14 + $15}' "/proc/$EDGE_PID/stat"; } # the agent process's user + system CPU, in clock ticks
javac -d "$WORK/cls" "$HERE/IngressLoad.java"
CPU0="$(cpu)"
java -cp "$WORK/cls" IngressLoad "127.0.0.1:$A_PORT" "127.0.0.1:$A_PORT" shop.example.com "$RATE" "$SECONDS_RUN" "$WORK/stop" \
  >"$WORK/load.out" 2>"$WORK/load.err" &
LOAD=$!
sleep "$FIRST_S" # the run's schedule, not synchronisation: the first version comes FIRST_S seconds into the load
V=0
END=$(( $(date +%s) + SECONDS_RUN - FIRST_S - RELOAD_S ))
while (( $(date +%s) < END )); do
  code="$(api -o "$WORK/put.json" -w '%{http_code}' -X PUT -H "If-Match: \"$V\"" -d "$(doc $((V + 1)))" "$BASE/v1/waf?team=shop&environment=prod")"
  [[ "$code" == 200 ]] || { log "version $((V + 1)): PUT answered $code: $(cat "$WORK/put.json")"; exit 2; }
  V=$((V + 1))
  sleep "$RELOAD_S" # the schedule of the reloads
done
wait "$LOAD" || true
CPU1="$(cpu)"
APPLIED="$(grep -c 'traffic policy version .* applied' "$WORK/edge-a.log" || true)"
LAST="$(api "$BASE/v1/nodes/$EDGE_A" | python3 -c 'import json,sys; w=json.load(sys.stdin)["waf_sync"]; print(w["state"], w["acknowledged"], w["probe"]["state"])')"
curl -s "http://127.0.0.1:$A_LISTEN/metrics" >"$WORK/edge.metrics"
echo "== traffic policy reloaded under load ($RATE requests/s for ${SECONDS_RUN}s through one edge, $V versions, one every ${RELOAD_S}s)"
echo "client: $(cat "$WORK/load.out")"
echo "edge: $APPLIED versions applied (log); waf_sync at the end: $LAST"
python3 - "$WORK/edge.metrics" "$CPU0" "$CPU1" "$(getconf CLK_TCK)" <<'PY'
import re,sys
text=open(sys.argv[1]).read()
ev=sum(float(v) for v in re.findall(r'^mesh_waf_decisions_total\{route="[^"]*",outcome="evaluated"\} (\S+)', text, re.M))
den=sum(float(v) for v in re.findall(r'^mesh_waf_decisions_total\{route="[^"]*",outcome="denied"\} (\S+)', text, re.M))
b=[(float('inf') if le=='+Inf' else float(le), float(c)) for le,c in re.findall(r'^mesh_waf_eval_seconds_bucket\{le="([^"]+)"\} (\S+)', text, re.M)]
n=b[-1][1] if b else 0
def q(p):
    for le,c in b:
        if c >= p*n: return le
s=float(re.search(r'^mesh_waf_eval_seconds_sum (\S+)', text, re.M).group(1)) if n else 0
c=float(re.search(r'^mesh_waf_eval_cpu_seconds_total (\S+)', text, re.M).group(1)) if n else 0
cpu=(float(sys.argv[3])-float(sys.argv[2]))/float(sys.argv[4])
print(f"edge WAF: {int(ev)} requests evaluated, {int(den)} denied; evaluation wall time p50 <= {q(0.5)*1e6:.0f} us, p99 <= {q(0.99)*1e6:.0f} us (histogram bounds), mean {s/max(n,1)*1e6:.0f} us; worker thread CPU {c/max(n,1)*1e6:.1f} us per evaluation")
print(f"edge agent process CPU over the run: {cpu:.1f} s, {cpu/max(ev,1)*1e6:.0f} us per request evaluated (proxying included)")
PY
echo "achieved rate (last progress lines): $(tail -3 "$WORK/load.err" | tr '\n' ' ')"
echo "replica log ERROR lines: $(grep -c ERROR "$WORK/replica.log" || true); agent log WARN/ERROR lines: $(grep -c "WARN\|ERROR" "$WORK/edge-a.log" || true)"
failed="$(head -1 "$WORK/load.out" | sed -n 's/.* failed=\([0-9]*\).*/\1/p')"; resets="$(head -1 "$WORK/load.out" | sed -n 's/.* resets=\([0-9]*\).*/\1/p')"
if [[ "$failed" == 0 && "$resets" == 0 && "$LAST" == "current $V passed" ]]; then echo "all targets met"; else echo "TARGET MISSED"; exit 1; fi
