#!/usr/bin/env bash
# Draining one of two ingress nodes under load (issue 29's figure): one replica, a target HTTP server, a web node and two
# ingress agents (edge-a, edge-b) serving one route; IngressLoad.java sends RATE requests/s of GET / through both edges
# on keep-alive connections (a refused connection is retried on the other edge, nothing else is) and edge-a is drained
# DRAIN_AT seconds in. Prints what the client counted, the time from the drain request to the operation's succeeded and
# the agent's evidence; exits 1 when a request failed or a connection was reset, or the drain did not succeed.
#   bash load-tests/ingress-drain.sh [JAR]    (RATE=1000 DURATION=60 DRAIN_AT=20 GRACE_S=30; seconds; CHECK_READY=1: the client
#   also health-checks each edge's /readyz/ingress every 100 ms and opens new connections on a ready edge, as a balancer does)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
JAR_ARG="$(realpath "${1:-$HERE/../target/meshplane.jar}" 2>/dev/null || echo "${1:-$HERE/../target/meshplane.jar}")"
RATE="${RATE:-1000}"; SECONDS_RUN="${DURATION:-60}"; DRAIN_AT="${DRAIN_AT:-20}"; GRACE_S="${GRACE_S:-30}"
source "$HERE/bench-lib.sh"
source "$HERE/meshca-lib.sh"
source "$HERE/edge-lib.sh"
edge_setup ingress-drain drain-enroll

WEB_LISTEN="$(free_port 19300)"; A_LISTEN="$(free_port 19310)"; B_LISTEN="$(free_port 19320)"
A_PORT="$(free_port 18900 "$TARGET_PORT")"; B_PORT="$(free_port $((A_PORT + 1)) "$TARGET_PORT" "$A_PORT")"
agent web-1 tag:web "$WEB_LISTEN"
wait_log web-1 "first heartbeat accepted"
WEB="$(node_id web-1)"
WEB_IP="$(api "$BASE/v1/nodes/$WEB" | field address | cut -d/ -f1)"
agent edge-a tag:edge "$A_LISTEN" --ingress-listen "127.0.0.1:$A_PORT" --ingress-target-override "$WEB_IP=127.0.0.1"
agent edge-b tag:edge "$B_LISTEN" --ingress-listen "127.0.0.1:$B_PORT" --ingress-target-override "$WEB_IP=127.0.0.1"
wait_log edge-a "first heartbeat accepted"; wait_log edge-b "first heartbeat accepted"
EDGE_A="$(node_id edge-a)"; EDGE_B="$(node_id edge-b)"
api -X PUT -d "{\"services\":[\"web:$TARGET_PORT\"]}" "$BASE/v1/nodes/$WEB/services" >/dev/null
api -X PUT -H 'If-Match: 0' -d "{\"grants\":[{\"src\":[\"tag:edge\"],\"dst\":[\"tag:web\"],\"ports\":[\"tcp/$TARGET_PORT\"]}]}" \
  "$BASE/v1/acl?team=shop&environment=prod" >/dev/null
ROUTE="$(api -X POST -d "{\"team\":\"shop\",\"environment\":\"prod\",\"hostname\":\"shop.example.com\",\"target\":{\"node\":\"$WEB\",\"service\":\"web\"},\"exposure\":\"public\",\"tls\":\"acme\",\"ingress_tag\":\"tag:edge\"}" \
  "$BASE/v1/ingress/routes" | field id)"
api -X POST -d "{\"name\":\"web\",\"hostname\":\"edge-a.example.com\",\"port\":$A_PORT}" "$BASE/v1/nodes/$EDGE_A/ingress" >/dev/null
for i in $(seq 1 120); do
  a="$(api "$BASE/v1/nodes/$EDGE_A" | field ingress_sync.state)"; b="$(api "$BASE/v1/nodes/$EDGE_B" | field ingress_sync.state)"
  [[ "$a" == current && "$b" == current ]] && break
  sleep 0.5
done
[[ "$a" == current && "$b" == current ]] || { log "the edges did not get route $ROUTE (edge-a $a, edge-b $b)"; exit 2; }
for p in "$A_PORT" "$B_PORT"; do
  [[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: shop.example.com' "http://127.0.0.1:$p/")" == 200 ]] || { log "edge on $p does not serve the route"; exit 2; }
done
log "route $ROUTE served by edge-a (:$A_PORT) and edge-b (:$B_PORT); $RATE requests/s for ${SECONDS_RUN}s, edge-a drained at ${DRAIN_AT}s (grace ${GRACE_S}s)"

javac -d "$WORK/cls" "$HERE/IngressLoad.java"
READY_ARGS=() # CHECK_READY=1: the client health-checks each edge's /readyz/ingress as a balancer does
[[ "${CHECK_READY:-0}" == 1 ]] && READY_ARGS=("http://127.0.0.1:$A_LISTEN/readyz/ingress" "http://127.0.0.1:$B_LISTEN/readyz/ingress")
java -cp "$WORK/cls" IngressLoad "127.0.0.1:$A_PORT" "127.0.0.1:$B_PORT" shop.example.com "$RATE" "$SECONDS_RUN" "$WORK/stop" "${READY_ARGS[@]}" \
  >"$WORK/load.out" 2>"$WORK/load.err" &
LOAD=$!
sleep "$DRAIN_AT" # the run's schedule, not synchronisation: the drain comes DRAIN_AT seconds into the load
T0="$(date +%s.%N)"
OP="$(api -X POST -d "{\"grace_s\":$GRACE_S}" "$BASE/v1/nodes/$EDGE_A/ingress/web/drain" | field id)"
STATUS=pending
for i in $(seq 1 $(((GRACE_S + 60) * 5))); do
  STATUS="$(api "$BASE/v1/operations/$OP" | field status)"
  [[ "$STATUS" == succeeded || "$STATUS" == failed || "$STATUS" == expired ]] && break
  sleep 0.2
done
T1="$(date +%s.%N)"
READY_A="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$A_LISTEN/readyz/ingress")"
wait "$LOAD" || true
RESULT="$(api "$BASE/v1/operations/$OP" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("result")))')"
echo "== ingress drain under load ($RATE requests/s for ${SECONDS_RUN}s over two edges, edge-a drained at ${DRAIN_AT}s, grace ${GRACE_S}s)"
echo "client: $(cat "$WORK/load.out")"
echo "drain: operation $OP $STATUS $(python3 -c "print(f'{$T1 - $T0:.2f}')") s after the request; edge-a /readyz/ingress $READY_A afterwards"
echo "result: $RESULT"
echo "achieved rate (last progress lines): $(tail -3 "$WORK/load.err" | tr '\n' ' ')"
echo "replica log ERROR lines: $(grep -c ERROR "$WORK/replica.log" || true); agent log WARN/ERROR lines: $(cat "$WORK"/edge-*.log | grep -c "WARN\|ERROR" || true)"
failed="$(head -1 "$WORK/load.out" | sed -n 's/.* failed=\([0-9]*\).*/\1/p')"; resets="$(head -1 "$WORK/load.out" | sed -n 's/.* resets=\([0-9]*\).*/\1/p')"
if [[ "$failed" == 0 && "$resets" == 0 && "$STATUS" == succeeded ]]; then echo "all targets met"; else echo "TARGET MISSED"; exit 1; fi
