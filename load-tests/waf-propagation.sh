#!/usr/bin/env bash
# A traffic policy version reaching every ingress node (issue 30's figure): one replica, a simulated fleet of NODES nodes of
# which every SPREAD-th (by default every one) carries tag:edge0 and acts as an ingress node (simulate --ingress-tag: it
# applies the routes block its answers carry, compiles the block's traffic policy with the edge's own Waf.compile, once
# per simulator, and reports the policy version), one route served on tag:edge0. A new policy version is PUT CHANGES times;
# each time the script polls the coordinator until every ingress node's waf_sync is current on the new version and prints
# how long that took. With WATCH=1 the nodes hold watch streams; with WATCH=0 they learn it at their next heartbeat.
#   bash load-tests/waf-propagation.sh [JAR]   (NODES=500 SPREAD=1 CHANGES=5 INTERVAL_S=30 WATCH=1)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
JAR_ARG="$(realpath "${1:-$HERE/../target/meshplane.jar}" 2>/dev/null || echo "${1:-$HERE/../target/meshplane.jar}")"
NODES="${NODES:-500}"; SPREAD="${SPREAD:-1}"; CHANGES="${CHANGES:-5}"; INTERVAL_S="${INTERVAL_S:-30}"; WATCH="${WATCH:-1}"
EDGES=$(( (NODES + SPREAD - 1) / SPREAD ))
source "$HERE/bench-lib.sh"
source "$HERE/meshca-lib.sh"
source "$HERE/propagation-lib.sh"
propagation_setup waf-propagation
ROUTE="$(api -X POST -d '{"team":"shop","environment":"prod","hostname":"shop.example.com","path_prefix":"/","target":{"node":"'"$WEB"'","service":"web"},"exposure":"public","tls":"acme","ingress_tag":"tag:edge0"}' \
  "$BASE/v1/ingress/routes" | field id)"
for i in $(seq 1 $(( (INTERVAL_S + 30) * 5 ))); do
  read -r n c v <<<"$(states)"
  [[ "$c" == "$EDGES" ]] && break
  sleep 0.2
done
[[ "$c" == "$EDGES" ]] || { log "the ingress nodes did not all take route $ROUTE ($c of $EDGES current)"; exit 2; }
# a policy of the managed set and one custom rule whose path names the version (each version a different document)
doc() { echo '{"mode":"enforce","managed":{"paranoia":1},"rules":[{"id":"no-v'"$1"'","expression":"request.path_normalized.startsWith(\u0027/v'"$1"'\u0027)","action":{"type":"deny","status":403}}],"tests":[{"name":"v'"$1"'","expect":"deny","rule":"no-v'"$1"'","request":{"target":"/v'"$1"'/x"}}]}'; }
log "$NODES simulated nodes, $EDGES ingress nodes current on routes version $v; $CHANGES traffic policy versions (watch $WATCH, heartbeat every ${INTERVAL_S}s)"
TIMES=()
for k in $(seq 1 "$CHANGES"); do
  T0="$(date +%s.%N)"
  code="$(api -o "$WORK/put.json" -w '%{http_code}' -X PUT -H "If-Match: \"$((k - 1))\"" -d "$(doc "$k")" "$BASE/v1/waf?team=shop&environment=prod")"
  [[ "$code" == 200 ]] || { log "version $k: PUT answered $code: $(cat "$WORK/put.json")"; exit 2; }
  while true; do
    read -r n c v <<<"$(states "$k" waf_sync)"
    [[ "$c" == "$EDGES" ]] && break
    (( $(date +%s) - ${T0%.*} > INTERVAL_S * 3 )) && { log "version $k: only $c of $EDGES enforcing after $((INTERVAL_S * 3)) s"; exit 1; }
    sleep 0.1
  done
  T1="$(date +%s.%N)"
  TIMES+=("$(python3 -c "print(f'{$T1 - $T0:.2f}')")")
  log "version $k: enforced (as reported) by all $EDGES ingress nodes ${TIMES[-1]} s after the PUT"
  sleep "${PAUSE_S:-3}" # spacing between changes (the run's schedule, not synchronisation)
done
echo "== a traffic policy version reaching every ingress node ($NODES simulated nodes, $EDGES ingress, watch $WATCH, heartbeat every ${INTERVAL_S}s)"
echo "per version (PUT -> every ingress node's waf_sync current, as the coordinator shows it, polled every 0.1 s + the poll's own time): ${TIMES[*]} s"
python3 -c "import statistics,sys; t=[float(x) for x in sys.argv[1:]]; print(f'min {min(t):.2f} s, median {statistics.median(t):.2f} s, max {max(t):.2f} s')" "${TIMES[@]}"
kill -TERM "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true
echo "simulator: $(grep '^\[sim\] done' "$WORK/sim.out" | grep -o 'errors: [^,]*')"
meshca_footer
