#!/usr/bin/env bash
# A route change reaching every ingress node (issue 29's figure): one replica, a simulated fleet of NODES nodes of which
# every SPREAD-th carries tag:edge0 and acts as an ingress node (simulate --ingress-tag: it applies the routes version its
# answers carry and reports it, as the agent's edge does), one route served on tag:edge0. The route is replaced CHANGES
# times; each time the script polls the coordinator until every ingress node's ingress_sync is current on the new version
# and prints how long that took: the change delivered, applied and acknowledged by every ingress node. With WATCH=1 the
# nodes hold watch streams (the change comes on the stream and the node beats at once to acknowledge it); with WATCH=0 they
# learn it at their next heartbeat (every INTERVAL_S seconds).
#   bash load-tests/ingress-propagation.sh [JAR]   (NODES=500 SPREAD=10 CHANGES=5 INTERVAL_S=30 WATCH=1)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
JAR_ARG="$(realpath "${1:-$HERE/../target/meshplane.jar}" 2>/dev/null || echo "${1:-$HERE/../target/meshplane.jar}")"
NODES="${NODES:-500}"; SPREAD="${SPREAD:-10}"; CHANGES="${CHANGES:-5}"; INTERVAL_S="${INTERVAL_S:-30}"; WATCH="${WATCH:-1}"
EDGES=$(( (NODES + SPREAD - 1) / SPREAD ))
source "$HERE/bench-lib.sh"
source "$HERE/meshca-lib.sh"
source "$HERE/propagation-lib.sh"
propagation_setup ingress-propagation
ROUTE="$(api -X POST -d '{"team":"shop","environment":"prod","hostname":"shop.example.com","path_prefix":"/v0","target":{"node":"'"$WEB"'","service":"web"},"exposure":"public","tls":"acme","ingress_tag":"tag:edge0"}' \
  "$BASE/v1/ingress/routes" | field id)"
for i in $(seq 1 $(( (INTERVAL_S + 30) * 5 ))); do
  read -r n c v <<<"$(states)"
  [[ "$c" == "$EDGES" ]] && break
  sleep 0.2
done
[[ "$c" == "$EDGES" ]] || { log "the ingress nodes did not all take route $ROUTE ($c of $EDGES current)"; exit 2; }
log "$NODES simulated nodes, $EDGES ingress nodes current on routes version $v; $CHANGES changes (watch $WATCH, heartbeat every ${INTERVAL_S}s)"
TIMES=()
for k in $(seq 1 "$CHANGES"); do
  before="$v"
  T0="$(date +%s.%N)"
  code="$(api -o /dev/null -w '%{http_code}' -X PUT -d '{"team":"shop","environment":"prod","hostname":"shop.example.com","path_prefix":"/v'"$k"'","target":{"node":"'"$WEB"'","service":"web"},"exposure":"public","tls":"acme","ingress_tag":"tag:edge0"}' \
    "$BASE/v1/ingress/routes/$ROUTE")"
  [[ "$code" == 200 ]] || { log "change $k: PUT answered $code"; exit 2; }
  while true; do
    read -r n c v <<<"$(states)"
    [[ "$v" != "$before" && "$c" == "$EDGES" ]] && break
    (( $(date +%s) - ${T0%.*} > INTERVAL_S * 3 )) && { log "change $k: only $c of $EDGES current after $((INTERVAL_S * 3)) s"; exit 1; }
    sleep 0.1
  done
  T1="$(date +%s.%N)"
  TIMES+=("$(python3 -c "print(f'{$T1 - $T0:.2f}')")")
  log "change $k: routes version $v current on all $EDGES ingress nodes ${TIMES[-1]} s after the PUT"
  sleep "${PAUSE_S:-3}" # spacing between changes (the run's schedule, not synchronisation)
done
echo "== a route change reaching every ingress node ($NODES simulated nodes, $EDGES ingress, watch $WATCH, heartbeat every ${INTERVAL_S}s)"
echo "per change (PUT -> every ingress node current, as the coordinator shows it, polled every 0.1 s + the poll's own time): ${TIMES[*]} s"
python3 -c "import statistics,sys; t=[float(x) for x in sys.argv[1:]]; print(f'min {min(t):.2f} s, median {statistics.median(t):.2f} s, max {max(t):.2f} s')" "${TIMES[@]}"
kill -TERM "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true
echo "simulator: $(grep '^\[sim\] done' "$WORK/sim.out" | grep -o 'errors: [^,]*'); $(grep -o 'ingress routes [^)]*)' "$WORK/sim.out" | tail -1)"
meshca_footer
