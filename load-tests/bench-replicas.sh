#!/usr/bin/env bash
# Heartbeats/s and latency for one replica and for a cluster of several, on this machine (issue 17):
#   1. a fresh database on the machine's PostgreSQL (127.0.0.1:5432, user postgres; dropped at the end)
#      and REPLICAS replica JVMs from the jar (`run`, -Xmx$XMX each), one Hazelcast cluster, one keys folder;
#   2. enrolls NODES nodes through replica 1; warm-up: every node beats once through every replica
#      (each replica checks each agent token's signature once, then caches it) until all hold their
#      current versions, then a short JIT warm-up;
#   3. ROUNDS measured runs: one wrk per replica at the same time (CONNECTIONS split evenly, one wrk
#      thread each; heartbeat.lua, every request a different node with its own token, an idle agent's
#      body: answered "unchanged"), like a load balancer spreading agents over the replicas;
#   4. per round: heartbeats/s (sum), p50/p99 (the worst replica's), errors, and the deterministic
#      figure: the replicas' CPU time (utime+stime of every replica JVM, /proc) per heartbeat.
# AFFINITY=1 (owner affinity, API.md §11 "coordinator"): every replica advertises its own URL
# (MESH_ADVERTISE_URL); the warm-up's last pass records each node's owner hint, and each node's
# heartbeats then go only to the replica its hint names (one wrk per replica, that replica's nodes),
# like agents that follow the hint: the live-map write is local, only its backup crosses to a member.
# AFFINITY=ab: the same cluster, rounds alternating without (odd) and with (even) affinity, 2 x ROUNDS
# rounds: both figures under the same conditions (the JVMs, the data, whatever else the machine runs).
# On one machine the replicas share the same cores, so the cluster cannot carry more than one replica:
# what the comparison shows is what clustering costs per heartbeat (the map write goes to the entry's
# owner and its backup, often on other members), which is what a capacity plan on separate machines needs.
#
# Usage: mvn -B -q package -DskipTests && bash load-tests/bench-replicas.sh [JAR]
# Env:   AFFINITY (0; 1 or ab) REPLICAS (1) NODES (5000) CONNECTIONS (48) DURATION (20s) ROUNDS (3) XMX (512m) ENROLL_THREADS (8)
# Exit:  0 done, 1 setup failed or a heartbeat answered non-2xx / a socket error (the run is invalid).
# Loopback only; every wait and every wrk run is bounded in time.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
JAR="${1:-$REPO_ROOT/target/meshplane.jar}"
REPLICAS="${REPLICAS:-1}"
NODES="${NODES:-5000}"
CONNECTIONS="${CONNECTIONS:-48}"
DURATION="${DURATION:-20s}"
ROUNDS="${ROUNDS:-3}"
XMX="${XMX:-512m}"
ENROLL_THREADS="${ENROLL_THREADS:-8}"
AFFINITY="${AFFINITY:-0}"
HOST=127.0.0.1

log() { printf '[replicas-bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=load-tests/bench-lib.sh
source "$SCRIPT_DIR/bench-lib.sh"

[[ -f "$JAR" ]] || die "jar not found: $JAR (build it with: mvn -B -q package -DskipTests)"
[[ "$REPLICAS" =~ ^[1-9]$ ]] || die "REPLICAS must be 1..9"
[[ "$AFFINITY" =~ ^(0|1|ab)$ ]] || die "AFFINITY must be 0, 1 or ab"
for c in java curl python3 psql; do command -v "$c" >/dev/null || die "$c not found on PATH"; done
if ! command -v wrk >/dev/null 2>&1; then
  log "wrk not found: installing it (apt-get)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
OPENS="$(sed -n 's:.*<jvm.opens>\(.*\)</jvm.opens>.*:\1:p' "$REPO_ROOT/pom.xml" | head -n 1)"
# shellcheck disable=SC2206  # deliberate word splitting of the flag list
JVM_FLAGS=(-Xmx"$XMX" $OPENS)

WORK="$(mktemp -d /tmp/meshplane-replicas-bench.XXXXXX)"
DB="mp_bench_$(date +%s)_$RANDOM"
PIDS=()
psql_admin() { psql -X -q -A -t -h "$HOST" -U postgres -d postgres -c "$1"; }
cleanup() {
  local rc=$? p i
  set +e
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for ((i = 0; i < 300; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
  done
  psql_admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
  for ((i = 1; i <= REPLICAS; i++)); do
    [[ -f "$WORK/replica-$i.log" ]] || continue
    log "replica $i log: $(grep -cE ' (WARN|ERROR) ' "$WORK/replica-$i.log" || true) WARN/ERROR lines"
  done
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

psql_admin "CREATE DATABASE $DB" >/dev/null || die "cannot create a database on $HOST:5432 (user postgres)"
declare -a HTTP CLUSTER
used=()
for ((i = 1; i <= REPLICAS; i++)); do
  HTTP[i]="$(free_port $((18600 + i * 10)) "${used[@]}")"; used+=("${HTTP[i]}")
  PANEL="$(free_port $((18601 + i * 10)) "${used[@]}")"; used+=("$PANEL")
  CLUSTER[i]="$(free_port $((15900 + i * 10)) "${used[@]}")"; used+=("${CLUSTER[i]}")
  eval "PANEL_$i=$PANEL"
done
MEMBERS="$(for ((i = 1; i <= REPLICAS; i++)); do printf '%s%s:%s' "$([[ $i -gt 1 ]] && echo ,)" "$HOST" "${CLUSTER[i]}"; done)"
common_env() { # common_env I
  local panel_var="PANEL_$1"
  echo MESH_PG_URL="postgresql://postgres@$HOST:5432/$DB" MESH_KEYS_DIR="$WORK/keys" MESH_HTTP_HOST="$HOST" \
    MESH_HTTP_PORT="${HTTP[$1]}" MESH_PANEL_PORT="${!panel_var}" MESH_CLUSTER_NAME="replicas-bench-$$" MESH_CLUSTER_HOST="$HOST" \
    MESH_CLUSTER_PORT="${CLUSTER[$1]}" MESH_CLUSTER_MEMBERS="$MEMBERS" MESH_ADVERTISE_URL="$([[ $AFFINITY != 0 ]] && echo "http://$HOST:${HTTP[$1]}")"
}
log "starting $REPLICAS replica(s), -Xmx$XMX each, database $DB, members $MEMBERS"
for ((i = 1; i <= REPLICAS; i++)); do
  # shellcheck disable=SC2046
  (cd "$WORK" && exec env $(common_env "$i") java "${JVM_FLAGS[@]}" -jar "$JAR" run) >"$WORK/replica-$i.log" 2>&1 &
  PIDS+=("$!")
  [[ $i -eq 1 ]] && sleep 8 # the first creates the schema and the keys; the others then join
done
for ((i = 1; i <= REPLICAS; i++)); do
  deadline=$((SECONDS + 120))
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$HOST:${HTTP[i]}/readyz" || true)" == 200 ]]; do
    kill -0 "${PIDS[i - 1]}" 2>/dev/null || { tail -n 20 "$WORK/replica-$i.log" >&2; die "replica $i exited"; }
    ((SECONDS < deadline)) || die "replica $i not ready within 120 s"
    sleep 0.5
  done
done
log "all $REPLICAS ready"
BASE1="http://$HOST:${HTTP[1]}"
# shellcheck disable=SC2046
TOKEN="$(cd "$WORK" && timeout 120 env $(common_env 1) MESH_HTTP_PORT=0 java "${JVM_FLAGS[@]}" -jar "$JAR" \
  token create --name replicas-bench --team '*' --environment '*' --surface admin --expires 1d 2>"$WORK/token.log" | tr -d '[:space:]')"
[[ -n "$TOKEN" ]] || { cat "$WORK/token.log" >&2; die "token create failed"; }

log "enrolling $NODES nodes through replica 1"
timeout 1000 python3 "$SCRIPT_DIR/enroll.py" enroll "$BASE1" "$TOKEN" "$NODES" "$WORK/nodes.txt" --threads "$ENROLL_THREADS" \
  --timeout-s 900 >"$WORK/enroll.json" || { cat "$WORK/enroll.json" >&2; die "enrollment failed"; }
log "enrolled: $(cat "$WORK/enroll.json")"
for ((i = REPLICAS; i >= 1; i--)); do
  # replica 1 last: its pass writes the versions file heartbeat.lua sends (every replica answers the same versions)
  timeout 700 python3 "$SCRIPT_DIR/enroll.py" beat "http://$HOST:${HTTP[i]}" "$WORK/nodes.txt" --threads "$ENROLL_THREADS" \
    --timeout-s 600 --versions-out "$WORK/hb-$i.txt" --owners-out "$WORK/owners-$i.txt" >"$WORK/warm-$i.json" || { cat "$WORK/warm-$i.json" >&2; die "warm-up through replica $i failed"; }
  log "warm-up through replica $i: $(cat "$WORK/warm-$i.json")"
done

# the request lists of each replica's wrk: off = every node (a load balancer's spread); on = the nodes
# whose owner hint (replica 1's last warm-up answers) names that replica
for ((i = 1; i <= REPLICAS; i++)); do
  cp "$WORK/hb-1.txt" "$WORK/hb-off-$i.txt"
  if [[ $AFFINITY != 0 ]]; then
    awk -v url="http://$HOST:${HTTP[i]}" 'NR == FNR { if ($2 == url) own[$1] = 1; next } ($1 in own)' \
      "$WORK/owners-1.txt" "$WORK/hb-1.txt" >"$WORK/hb-on-$i.txt"
    log "affinity: replica $i owns $(wc -l <"$WORK/hb-on-$i.txt") of $NODES nodes"
  fi
done
if [[ $AFFINITY != 0 ]]; then
  hinted="$(awk '$2 != "-"' "$WORK/owners-1.txt" | wc -l)"
  [[ $REPLICAS -eq 1 || $hinted -eq $NODES ]] || die "affinity: only $hinted of $NODES answers carried an owner hint"
  for ((i = 1; i <= REPLICAS; i++)); do [[ -s "$WORK/hb-on-$i.txt" ]] || die "affinity: replica $i owns no node"; done
fi
mode_of() { # mode_of ROUND: off or on
  case "$AFFINITY" in 0) echo off ;; 1) echo on ;; ab) (($1 % 2)) && echo off || echo on ;; esac
}

run_all() { # run_all NAME DURATION [MODE]: one wrk per replica at once; outputs in $WORK/NAME-<i>.txt
  local name="$1" dur="$2" mode="${3:-$(mode_of 1)}" per=$((CONNECTIONS / REPLICAS)) limit i
  limit=$(($(to_seconds "$dur") + 30))
  local wrk_pids=()
  for ((i = 1; i <= REPLICAS; i++)); do
    (cd "$WORK" && exec env HB_NODES_FILE="$WORK/hb-$mode-$i.txt" HB_THREADS=1 HB_SEED="$RANDOM" timeout "$limit" \
      wrk -t1 -c"$per" -d"$dur" --latency -s "$SCRIPT_DIR/heartbeat.lua" "http://$HOST:${HTTP[i]}/") >"$WORK/$name-$i.txt" 2>&1 &
    wrk_pids+=("$!")
  done
  for i in "${wrk_pids[@]}"; do wait "$i" || die "wrk failed ($name)"; done
  for ((i = 1; i <= REPLICAS; i++)); do
    local f="$WORK/$name-$i.txt" n
    n="$(awk -F': *' '/Non-2xx or 3xx responses/ {print $2+0; f=1} END {if (!f) print 0}' "$f")"
    [[ "$n" == 0 && -z "$(sock_err "$f")" ]] || { cat "$f" >&2; die "$name: replica $i had errors: the run is invalid"; }
  done
}
ticks() { local p t=0; for p in "${PIDS[@]}"; do t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}'))); done; echo "$t"; }
to_ms() { awk -v v="$1" 'BEGIN { if (v ~ /us$/) { sub("us", "", v); printf "%.2f", v / 1000 } else if (v ~ /ms$/) { sub("ms", "", v); printf "%.2f", v }
  else if (v ~ /s$/) { sub("s", "", v); printf "%.2f", v * 1000 } else print "" }'; }

log "JIT warm-up (10 s)"
run_all warm 10s
CLK_TCK="$(getconf CLK_TCK)"
# the replicas' own background with no request at all (Hazelcast, timers, the write-behind's and the
# staleness monitor's sweeps, GC): what every round pays whatever its rate
log "idle (10 s)"
t0="$(ticks)"; sleep 10; t1="$(ticks)"
IDLE_MS="$(awk -v t="$((t1 - t0))" -v hz="$CLK_TCK" 'BEGIN {printf "%.0f", t / hz * 1000 / 10}')"
printf '\n%s replica(s), %s nodes, %s connections in all, %s per round, %s cores, owner affinity %s\n' "$REPLICAS" "$NODES" "$CONNECTIONS" \
  "$DURATION" "$(nproc)" "$(case $AFFINITY in 0) echo off ;; 1) echo on ;; ab) echo 'off (odd rounds) / on (even rounds)' ;; esac)"
printf 'idle, no requests: the replicas spend %s ms of CPU per second (all of them)\n' "$IDLE_MS"
printf '| round | affinity | heartbeats/s | p50 ms (worst replica) | p99 ms (worst replica) | errors | replica CPU µs per heartbeat | machine busy |\n|---|---|---:|---:|---:|---:|---:|---:|\n'
TOTAL_ROUNDS="$ROUNDS"; [[ $AFFINITY == ab ]] && TOTAL_ROUNDS=$((2 * ROUNDS))
for ((r = 1; r <= TOTAL_ROUNDS; r++)); do
  mode="$(mode_of "$r")"
  t0="$(ticks)"; read -r m0 c0 < <(cpu_machine)
  run_all "round$r" "$DURATION" "$mode"
  t1="$(ticks)"; read -r m1 c1 < <(cpu_machine)
  total=0; rate=0; p50=0; p99=0
  for ((i = 1; i <= REPLICAS; i++)); do
    f="$WORK/round$r-$i.txt"
    total=$((total + $(awk '/requests in/ {print $1}' "$f")))
    rate="$(awk -v a="$rate" -v b="$(req_s "$f")" 'BEGIN {printf "%.1f", a + b}')"
    p50="$(awk -v a="$p50" -v b="$(to_ms "$(pct "$f" 50%)")" 'BEGIN {print (b > a ? b : a)}')"
    p99="$(awk -v a="$p99" -v b="$(to_ms "$(pct "$f" 99%)")" 'BEGIN {print (b > a ? b : a)}')"
  done
  us="$(awk -v t="$((t1 - t0))" -v n="$total" -v hz="$CLK_TCK" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}')"
  busy="$(awk -v m="$((m1 - m0))" -v c="$((c1 - c0))" 'BEGIN {printf "%.0f %%", 100 * m / c}')"
  printf '| %s | %s | %s | %s | %s | 0 | %s | %s |\n' "$r" "$mode" "$rate" "$p50" "$p99" "$us" "$busy"
done
