#!/usr/bin/env bash
# Heartbeat path benchmark, on one replica, in one run:
#   1. enrolls NODES nodes (POST /v1/nodes, admin token) and keeps each node's agent credential;
#      with POLICY=grants50, tags them (node i: tag:t<i % 100>) and puts a 50-grant policy;
#   2. warm-up: heartbeats per node until each holds its current peers and ACL versions (the first
#      one with known {peers: 0, acl: 0}, answered with the full sets; each agent token's ES256
#      signature is checked once per replica, then cached), then a short JIT warm-up of /healthz and
#      of the heartbeat route. Every later heartbeat sends the node's versions as known, like an idle
#      agent: answered "unchanged" for peers and acl, O(1) (the policy counters of /metrics, printed
#      before and after the measured runs, show it: no full or delta answer, no peer entry);
#   3. measures /healthz (the ceiling), heartbeats at full speed (wrk + heartbeat.lua, every request
#      a different node with its own token), /healthz again, then heartbeats at a fixed rate (~5,000/s);
#   4. reads PostgreSQL's row-update counter of table nodes around both heartbeat runs (write
#      amplification) and the service's /metrics;
#   5. per run, the service's own CPU time and the bytes it allocated (between full GCs made with
#      jcmd right before and after the run), divided by the requests: figures that do not move with
#      the machine's noisy ceiling the way req/s does.
# Targets (the issue): heartbeat req/s >= 50 % of /healthz; p99 < 25 ms at 5,000 heartbeats/s;
# zero errors; row writes/s <= NODES / flush interval whatever the heartbeat rate.
#
# Usage: bash load-tests/bench-heartbeat.sh [JAR]      (default JAR: <repo>/target/meshplane.jar)
# Env:   NODES (10000) ENROLL_THREADS (8)
#        POLICY (none): none = no policy and no tags (every node's peers and rules are empty);
#          grants50 = nodes enrolled with one tag each, tag:t<i % 100>, and before the warm-up pass
#          PUT /v1/acl?team=bench&environment=prod with 50 grants, grant i (0..49):
#          tag:t<2i> -> tag:t<2i+1> tcp/<1000+i> (each node in exactly one grant: with 10,000 nodes,
#          100 peers each, and the destination nodes get one rule with 100 sources). In both modes the
#          measured heartbeats are an idle agent's (known = its current versions: answered unchanged)
#        THREADS (2) CONNECTIONS (64) DURATION (20s) WARMUP (10s)   wrk parameters of the measured runs
#        FIXED_CONNECTIONS (60) RATE_DELAY_MS (10) FIXED_DURATION (20s) fixed-rate run: each connection
#          waits RATE_DELAY_MS after each response, so ~ FIXED_CONNECTIONS / (delay + latency) req/s
#        FIXED_CALIBRATE (1): a 10 s run first measures that rate, and the connections are scaled so the
#          measured run aims at RATE_TARGET + 15 % whatever the machine's latency (0: FIXED_CONNECTIONS as given);
#          the latency target counts as checked when the achieved rate is within -5 % .. +30 % of RATE_TARGET
#        RATE_TARGET (5000) P99_TARGET_MS (25) TARGET_PCT (50) FLUSH_INTERVAL_S (1, the service default)
#        HTTP_PORT (18190) PANEL_PORT (18191) CLUSTER_PORT (15890): first free port from these up
#        QUIET_WAIT_S (60): before each measured run, wait at most this long for other work on the
#          machine to fall below 0.25 cores (then measure anyway, flagged NOISY)
#        PG_STATS_WAIT_S (12): after a heartbeat run, wait this long before reading PostgreSQL's
#          counters (backends report table statistics late: PostgreSQL 14's collector gets them at
#          most every 500 ms per backend, 15+ flushes an idle backend's pending ones up to 10 s later);
#          the rows the service says it sent (mesh_writebehind_batch_size_sum) are shown next to them
#        SERVICE_LOG_COPY=FILE  keep a copy of the service log (the temp dir is removed on exit)
#        EXTRA_ROUNDS (0): after the fixed-rate run, this many more /healthz -> heartbeats -> /healthz
#          triples (same wrk parameters, same service); every triple's ratios and their medians are
#          printed (the ceiling moves by up to +-15 % between runs, so one triple's ratio is noisy)
#        PROFILE=1  after the measured runs, one more full-speed heartbeat run (not in the figures) with
#          a JFR recording (PROFILE_SETTINGS: default, or profile); prints the hottest methods (self and
#          inclusive samples)
# Exit:  0 done (targets are reported, not enforced), 1 setup failed, or any heartbeat answered
#        non-2xx / any socket error in a heartbeat run (the run is invalid then)
#
# All load goes to 127.0.0.1 only. Every wait and every wrk run is bounded in time.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
JAR_ARG="${1:-$REPO_ROOT/target/meshplane.jar}"

NODES="${NODES:-10000}"
ENROLL_THREADS="${ENROLL_THREADS:-8}"
THREADS="${THREADS:-2}"
CONNECTIONS="${CONNECTIONS:-64}"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-10s}"
FIXED_CONNECTIONS="${FIXED_CONNECTIONS:-60}"
FIXED_CALIBRATE="${FIXED_CALIBRATE:-1}"
RATE_DELAY_MS="${RATE_DELAY_MS:-10}"
FIXED_DURATION="${FIXED_DURATION:-20s}"
RATE_TARGET="${RATE_TARGET:-5000}"
P99_TARGET_MS="${P99_TARGET_MS:-25}"
TARGET_PCT="${TARGET_PCT:-50}"
FLUSH_INTERVAL_S="${FLUSH_INTERVAL_S:-1}"
PG_STATS_WAIT_S="${PG_STATS_WAIT_S:-12}"
HOST=127.0.0.1
READY_TIMEOUT_S=90
STOP_TIMEOUT_S=30

log() { printf '[hb-bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=load-tests/bench-lib.sh
source "$SCRIPT_DIR/bench-lib.sh"

[[ -f "$JAR_ARG" ]] || die "jar not found: $JAR_ARG (build it with: mvn -B -q package -DskipTests)"
[[ "$NODES" =~ ^[0-9]+$ && "$NODES" -ge 1 ]] || die "NODES must be a positive number"
POLICY="${POLICY:-none}"
case "$POLICY" in
  none) ENROLL_TAGS=0 ;;
  grants50) ENROLL_TAGS=100 ;;
  *) die "POLICY must be none or grants50 (got: $POLICY)" ;;
esac
for c in java curl python3 psql jcmd; do command -v "$c" >/dev/null || die "$c not found on PATH"; done

# --- wrk: install only when missing -------------------------------------------------------------
if ! command -v wrk >/dev/null 2>&1; then
  log "wrk not found: installing it (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
WRK_VERSION="$(wrk -v 2>&1 | head -n 1 || true)"

# --- JVM flags: the pom's jvm.opens (same as surefire's argLine) + -Xmx1g -----------------------
OPENS=""
if [[ -f "$REPO_ROOT/pom.xml" ]]; then
  OPENS="$(sed -n 's:.*<jvm.opens>\(.*\)</jvm.opens>.*:\1:p' "$REPO_ROOT/pom.xml" | head -n 1)"
fi
if [[ -z "$OPENS" ]]; then
  OPENS="--add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED"
  log "jvm.opens not found in pom.xml: using the built-in copy"
fi
# shellcheck disable=SC2206  # deliberate word splitting of the flag list
JVM_FLAGS=(-Xmx1g $OPENS)

# --- free ports (loopback only) ------------------------------------------------------------------
HTTP_PORT="$(free_port "${HTTP_PORT:-18190}")" || die "no free HTTP port"
PANEL_PORT="$(free_port "${PANEL_PORT:-18191}" "$HTTP_PORT")" || die "no free panel port"
CLUSTER_PORT="$(free_port "${CLUSTER_PORT:-15890}" "$HTTP_PORT" "$PANEL_PORT")" || die "no free cluster port"

# --- temp dir, jar copy, cleanup trap ------------------------------------------------------------
WORK="$(mktemp -d /tmp/meshplane-hb-bench.XXXXXX)"
SERVICE_PID=""
TOP_PID=""
cleanup() {
  local rc=$?
  set +e
  if [[ -n "$TOP_PID" ]] && kill -0 "$TOP_PID" 2>/dev/null; then kill "$TOP_PID" 2>/dev/null; fi
  if [[ -n "$SERVICE_PID" ]] && kill -0 "$SERVICE_PID" 2>/dev/null; then
    log "stopping the service (SIGTERM to pid $SERVICE_PID, up to ${STOP_TIMEOUT_S}s)"
    kill -TERM "$SERVICE_PID" 2>/dev/null
    local i
    for ((i = 0; i < STOP_TIMEOUT_S * 10; i++)); do
      kill -0 "$SERVICE_PID" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$SERVICE_PID" 2>/dev/null; then
      log "service still running after ${STOP_TIMEOUT_S}s: SIGKILL"
      kill -KILL "$SERVICE_PID" 2>/dev/null
    fi
    wait "$SERVICE_PID" 2>/dev/null
  fi
  # The embedded PostgreSQL is a child process of the JVM; if the JVM did not stop it, stop it by its pid.
  local pidfile="$WORK/data/postgres/postmaster.pid"
  if [[ -f "$pidfile" ]]; then
    local pgpid
    pgpid="$(head -n 1 "$pidfile" 2>/dev/null)"
    if [[ "$pgpid" =~ ^[0-9]+$ ]] && kill -0 "$pgpid" 2>/dev/null; then
      log "embedded PostgreSQL (pid $pgpid) still running: fast shutdown"
      kill -INT "$pgpid" 2>/dev/null
      for ((i = 0; i < 100; i++)); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pgpid" 2>/dev/null && kill -KILL "$pgpid" 2>/dev/null
    fi
  fi
  if [[ -f "$WORK/service.log" ]]; then
    local warns
    warns="$(grep -cE ' (WARN|ERROR) ' "$WORK/service.log" || true)"
    log "service log: $(wc -l <"$WORK/service.log") lines, ${warns:-0} WARN/ERROR"
    grep -E ' (WARN|ERROR) ' "$WORK/service.log" | head -n 10 | sed 's/^/    /' >&2
    if [[ -n "${SERVICE_LOG_COPY:-}" ]]; then cp "$WORK/service.log" "$SERVICE_LOG_COPY" && log "service log copied to $SERVICE_LOG_COPY"; fi
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cp "$JAR_ARG" "$WORK/meshplane.jar"
JAR="$WORK/meshplane.jar"
log "jar: $JAR_ARG -> $JAR (sha256 $(sha256sum "$JAR" | cut -c1-12))"

MESH_ENV=(
  MESH_HTTP_HOST="$HOST" MESH_HTTP_PORT="$HTTP_PORT" MESH_PANEL_PORT="$PANEL_PORT"
  MESH_CLUSTER_HOST="$HOST" MESH_CLUSTER_PORT="$CLUSTER_PORT" MESH_CLUSTER_MEMBERS="$HOST:$CLUSTER_PORT"
  MESH_CLUSTER_NAME=hb-bench
)

# --- start the service (embedded PostgreSQL: the default postgres.url) ----------------------------
log "starting the service: http $HOST:$HTTP_PORT, panel $PANEL_PORT, cluster $CLUSTER_PORT (workdir $WORK)"
(cd "$WORK" && exec env "${MESH_ENV[@]}" java "${JVM_FLAGS[@]}" -jar "$JAR" run) >"$WORK/service.log" 2>&1 &
SERVICE_PID=$!

BASE="http://$HOST:$HTTP_PORT"
deadline=$((SECONDS + READY_TIMEOUT_S))
until [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$BASE/readyz" || true)" == "200" ]]; do
  kill -0 "$SERVICE_PID" 2>/dev/null || { tail -n 30 "$WORK/service.log" >&2; die "the service exited during start"; }
  ((SECONDS < deadline)) || { tail -n 30 "$WORK/service.log" >&2; die "/readyz not 200 within ${READY_TIMEOUT_S}s"; }
  sleep 0.5
done
log "ready after ~$((SECONDS - deadline + READY_TIMEOUT_S))s"

# --- admin token (same temp dir, same env: attaches to the running embedded PostgreSQL) ----------
TOKEN="$(cd "$WORK" && timeout 120 env "${MESH_ENV[@]}" java "${JVM_FLAGS[@]}" -jar "$JAR" \
  token create --name hb-bench --team '*' --environment '*' --surface admin --expires 1d 2>"$WORK/token.log")" \
  || { tail -n 20 "$WORK/token.log" >&2; die "token create failed"; }
TOKEN="$(printf '%s' "$TOKEN" | tr -d '[:space:]')"
[[ -n "$TOKEN" ]] || die "token create printed nothing"

code_h="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE/healthz")"
[[ "$code_h" == 200 ]] || die "/healthz answered $code_h"

# --- PostgreSQL (embedded): port from postmaster.pid, line 4 --------------------------------------
PG_PIDFILE="$WORK/data/postgres/postmaster.pid"
[[ -f "$PG_PIDFILE" ]] || die "no $PG_PIDFILE: is the embedded PostgreSQL in use?"
PG_PORT="$(sed -n 4p "$PG_PIDFILE" | tr -d '[:space:]')"
[[ "$PG_PORT" =~ ^[0-9]+$ ]] || die "cannot read the PostgreSQL port from $PG_PIDFILE"
# the embedded PostgreSQL takes the generated secret beside its data folder (password authentication)
PG_SECRET="$(cat "$WORK/data/postgres.secret" 2>/dev/null || true)"
pg() { PGPASSWORD="$PG_SECRET" PGCONNECT_TIMEOUT=5 timeout 15 psql -X -q -A -t -h "$HOST" -p "$PG_PORT" -U postgres -d postgres -c "$1"; }
PG_VERSION="$(pg 'SHOW server_version' 2>&1)" || die "psql to the embedded PostgreSQL failed: $PG_VERSION"
# row updates of table nodes (the write-behind's UPDATEs; HOT or not, each is one row write)
nodes_upd() { pg "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'nodes'"; }
[[ "$(nodes_upd)" =~ ^[0-9]+$ ]] || die "pg_stat_user_tables has no row for table nodes"
log "embedded PostgreSQL $PG_VERSION on port $PG_PORT"

# --- 1. enroll NODES nodes -----------------------------------------------------------------------
NODES_FILE="$WORK/nodes.txt"
# written by the warm-up pass: "<id> <token> <peers version> <acl version>"; heartbeat.lua sends those versions
HB_FILE="$WORK/nodes-versions.txt"
log "enrolling $NODES nodes (team bench, environment prod, $ENROLL_THREADS client threads, tags: $([[ $ENROLL_TAGS -gt 0 ]] && echo "tag:t<i % $ENROLL_TAGS>" || echo none))"
ENROLL_JSON="$(timeout 1000 python3 "$SCRIPT_DIR/enroll.py" enroll "$BASE" "$TOKEN" "$NODES" "$NODES_FILE" \
  --threads "$ENROLL_THREADS" --tags "$ENROLL_TAGS" --timeout-s 900)" || { echo "$ENROLL_JSON" >&2; die "enrollment failed"; }
log "enrolled: $ENROLL_JSON"
[[ "$(wc -l <"$NODES_FILE")" -eq "$NODES" ]] || die "expected $NODES lines in $NODES_FILE"
ENROLLED_DB="$(pg "SELECT count(*) FROM nodes")"

# --- the policy (POLICY=grants50): 50 grants, grant i: tag:t<2i> -> tag:t<2i+1> tcp/<1000+i> ---------
POLICY_NOTE="none (no policy, no tags)"
if [[ "$POLICY" == grants50 ]]; then
  python3 -c 'import json; print(json.dumps({"grants": [{"src": ["tag:t%d" % (2 * i)], "dst": ["tag:t%d" % (2 * i + 1)],
    "ports": ["tcp/%d" % (1000 + i)]} for i in range(50)]}, separators=(",", ":")))' >"$WORK/policy.json"
  code_p="$(curl -s -o "$WORK/policy-answer.json" -w '%{http_code}' --max-time 30 -X PUT \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' --data-binary @"$WORK/policy.json" \
    "$BASE/v1/acl?team=bench&environment=prod")" || code_p="curl failed"
  [[ "$code_p" == 200 ]] || { head -c 600 "$WORK/policy-answer.json" >&2 2>/dev/null; echo >&2; die "PUT /v1/acl answered $code_p"; }
  POLICY_VERSION="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("version", "?"))' "$WORK/policy-answer.json" 2>/dev/null || echo '?')"
  POLICY_NOTE="grants50 (50 grants tag:t<2i> -> tag:t<2i+1> tcp/<1000+i>, $(wc -c <"$WORK/policy.json") bytes; policy version $POLICY_VERSION; nodes tagged tag:t<i % 100>)"
  log "policy: PUT /v1/acl?team=bench&environment=prod -> 200, version $POLICY_VERSION"
fi

# --- wrk helpers ---------------------------------------------------------------------------------
run_wrk() { # run_wrk OUTFILE DURATION CONNECTIONS PATH [wrk args...]
  local out="$1" dur="$2" conns="$3" path="$4"; shift 4
  local limit=$(($(to_seconds "$dur") + 30))
  # RATE_DELAY_MS reaches heartbeat.lua only in the fixed-rate run (HB_DELAY set), never by inheritance
  (cd "$WORK" && exec env -u RATE_DELAY_MS ${HB_DELAY:+RATE_DELAY_MS="$HB_DELAY"} HB_NODES_FILE="$HB_FILE" HB_THREADS="$THREADS" \
    HB_SEED="$RANDOM" timeout "$limit" wrk -t"$THREADS" -c"$conns" -d"$dur" --latency "$@" "$BASE$path") \
    >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed on $path"; }
}
HB_SCRIPT=(-s "$SCRIPT_DIR/heartbeat.lua")
HB_DELAY=""

CLK_TCK="$(getconf CLK_TCK)"
NPROC="$(nproc)"
# busy = user+nice+system+steal ticks (irq/softirq left out: on loopback that is mostly the benchmark's own
# packets, charged to no process); total = all ticks
service_gone() {
  kill -0 "$SERVICE_PID" 2>/dev/null && return 0
  tail -n 15 "$WORK/service.log" >&2
  die "the service (pid $SERVICE_PID) stopped during the benchmark, not by this script: the run is invalid"
}
cpu_service() { # utime+stime of the service JVM (ticks); the embedded PostgreSQL is counted separately
  local stat
  stat="$(cat "/proc/$SERVICE_PID/stat" 2>/dev/null)" || { service_gone; return 1; }
  sed 's/.*) //' <<<"$stat" | awk '{print $12 + $13}'
}
pg_ticks() { # "pid ticks" of every embedded PostgreSQL process (postmaster + children)
  local pgpid p stat
  pgpid="$(head -n 1 "$PG_PIDFILE" 2>/dev/null)"
  for p in $pgpid $(pgrep -P "$pgpid" 2>/dev/null); do
    stat="$(cat "/proc/$p/stat" 2>/dev/null)" || continue
    echo "$p $(sed 's/.*) //' <<<"$stat" | awk '{print $12 + $13}')"
  done
}
cpu_postgres_since() { # cpu_postgres_since FILE: PostgreSQL ticks since the pg_ticks snapshot in FILE
  # per process: processes that exited in between are lost (short-lived ones: autovacuum, psql's backend)
  { sed 's/^/A /' "$1"; pg_ticks | sed 's/^/B /'; } |
    awk '$1 == "A" {t0[$2] = $3; next} {d += $3 - ($2 in t0 ? t0[$2] : 0)} END {print d + 0}'
}
wait_quiet() { # waits (bounded) until the machine is quiet apart from the idle service and its PostgreSQL
  local limit="${QUIET_WAIT_S:-60}" start=$SECONDS
  while :; do
    local m0 s0 m1 s1 p other
    service_gone
    read -r m0 _ < <(cpu_machine); s0="$(cpu_service)"; pg_ticks >"$WORK/pg-ticks-q.txt"
    sleep 3
    service_gone
    read -r m1 _ < <(cpu_machine); s1="$(cpu_service)"; p="$(cpu_postgres_since "$WORK/pg-ticks-q.txt")"
    other="$(awk -v m="$((m1 - m0))" -v s="$((s1 - s0 + p))" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", (m - s) / hz / 3}')"
    if awk -v o="$other" 'BEGIN {exit !(o < 0.25)}'; then log "machine quiet (other work: $other cores)"; return 0; fi
    if ((SECONDS - start >= limit)); then
      log "WARNING: machine still busy after ${limit}s (other work: $other cores); measuring anyway, expect noise"
      return 0
    fi
    log "machine busy (other work: $other cores of $NPROC); waiting (at most ${limit}s)"
  done
}
declare -A CPU_NOTE
declare -A PER_REQUEST # name -> "service CPU ticks, bytes allocated" of the run
allocated() { # bytes the service JVM has allocated so far, exact as of a full GC made now (jcmd GC.run):
  # Micrometer's jvm_gc_memory_allocated_bytes_total counts young-generation growth at each GC, so
  # with a GC right before and right after a run its difference is what the run allocated
  jcmd "$SERVICE_PID" GC.run >/dev/null 2>&1 || true
  curl -s --max-time 10 "$BASE/metrics" | awk '$1 == "jvm_gc_memory_allocated_bytes_total" {printf "%.0f", $2; f = 1} END {if (!f) print 0}'
}
run_measured() { # run_measured NAME DURATION CONNECTIONS PATH [wrk args...]: a measured run with CPU accounting
  local name="$1"; shift
  local m0 t0 s0 c0 m1 t1 s1 p c1 a0 a1
  a0="$(allocated)"
  snap_children; c0="$(children_secs)"; read -r m0 t0 < <(cpu_machine); s0="$(cpu_service)"; pg_ticks >"$WORK/pg-ticks.txt"
  run_wrk "$WORK/$name.txt" "$@"
  service_gone
  read -r m1 t1 < <(cpu_machine); s1="$(cpu_service)"; p="$(cpu_postgres_since "$WORK/pg-ticks.txt")"; snap_children; c1="$(children_secs)"
  a1="$(allocated)"
  PER_REQUEST[$name]="$((s1 - s0)) $((a1 - a0))"
  # cores used on average during the run: machine busy, service JVM, PostgreSQL, wrk, everything else
  CPU_NOTE[$name]="$(awk -v m="$((m1 - m0))" -v t="$((t1 - t0))" -v s="$((s1 - s0))" -v p="$p" \
    -v c0="$c0" -v c1="$c1" -v hz="$CLK_TCK" -v n="$NPROC" 'BEGIN {
      secs = t / n / hz; busy = m / hz / secs; svc = s / hz / secs; pg = p / hz / secs; wrk = (c1 - c0) / secs
      oth = busy - svc - pg - wrk; if (oth < 0) oth = 0
      printf "%.2f %.2f %.2f %.2f %.2f %s", busy, svc, pg, wrk, oth, (oth >= 0.25 ? "NOISY" : "clean") }')"
}
non2xx() { awk -F': *' '/Non-2xx or 3xx responses/ {print $2+0; f=1} END {if (!f) print 0}' "$1"; }
total_req() { awk '/requests in/ {print $1}' "$1"; }
to_ms() { # wrk latency (850.00us / 1.23ms / 1.02s / 2.00m) -> milliseconds
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub("us", "", v); printf "%.3f", v / 1000 }
    else if (v ~ /ms$/) { sub("ms", "", v); printf "%.3f", v }
    else if (v ~ /m$/) { sub("m", "", v); printf "%.3f", v * 60000 }
    else if (v ~ /s$/) { sub("s", "", v); printf "%.3f", v * 1000 }
    else print "" }'
}
metric() { # metric FILE NAME: the value of an unlabelled Prometheus sample (0 when absent)
  awk -v n="$2" '$1 == n {print $2; f = 1} END {if (!f) print 0}' "$1"
}
scrape() { curl -s --max-time 10 "$BASE/metrics" >"$1" || die "/metrics did not answer"; }
check_clean() { # check_clean NAME: a heartbeat run must have no non-2xx and no socket errors
  local f="$WORK/$1.txt" n se
  n="$(non2xx "$f")"; se="$(sock_err "$f")"
  if [[ "$n" != 0 || -n "$se" ]]; then
    cat "$f" >&2
    die "$1: $n non-2xx responses, socket errors: ${se:-none}: the run is invalid"
  fi
}

log "NOTE: wrk (the client), the service and its embedded PostgreSQL share this machine's $NPROC cores."

# --- 2. warm-up: heartbeats per node (token cache; until each holds its current versions), then JIT warm-up
log "warm-up pass: heartbeats for each of the $NODES nodes until all hold their current versions ($ENROLL_THREADS client threads)"
WARM_JSON="$(timeout 700 python3 "$SCRIPT_DIR/enroll.py" beat "$BASE" "$NODES_FILE" \
  --threads "$ENROLL_THREADS" --timeout-s 600 --versions-out "$HB_FILE")" || { echo "$WARM_JSON" >&2; die "warm-up heartbeat pass failed"; }
log "warm-up pass: $WARM_JSON"
[[ "$(wc -l <"$HB_FILE")" -eq "$NODES" ]] || die "expected $NODES lines in $HB_FILE"
WARM_SETTLED=yes
if ! grep -q '"settled":true' <<<"$WARM_JSON"; then
  WARM_SETTLED=no
  log "WARNING: the warm-up's last pass was not answered unchanged for every node: measured heartbeats may get deltas"
fi
scrape "$WORK/metrics-warm.txt"
log "JIT warm-up: /healthz $WARMUP, heartbeat $WARMUP (-t$THREADS -c$CONNECTIONS)"
run_wrk "$WORK/warm-healthz.txt" "$WARMUP" "$CONNECTIONS" /healthz
run_wrk "$WORK/warm-heartbeat.txt" "$WARMUP" "$CONNECTIONS" / "${HB_SCRIPT[@]}"
check_clean warm-heartbeat

WRK_PARAMS="-t$THREADS -c$CONNECTIONS -d$DURATION --latency"

# --- 3. /healthz ceiling --------------------------------------------------------------------------
wait_quiet
log "measure: /healthz ($WRK_PARAMS)"
run_measured healthz-1 "$DURATION" "$CONNECTIONS" /healthz

# --- 4. heartbeats at full speed, with PostgreSQL's row counter and /metrics around it -------------
wait_quiet
# Let the write-behind finish the warm-up's rows and PostgreSQL's backends report them (statistics
# arrive late, see PG_STATS_WAIT_S): the baseline must not include them.
sleep "$PG_STATS_WAIT_S"
scrape "$WORK/metrics-before.txt"
UPD0="$(nodes_upd)"
log "measure: heartbeats at full speed ($WRK_PARAMS -s heartbeat.lua, $NODES nodes); nodes.n_tup_upd=$UPD0"
# thread view of the service in the middle of the run: two 5 s samples, the second is the one shown
( sleep 5; timeout 20 top -H -b -n 2 -d 5 -p "$SERVICE_PID" >"$WORK/top-heartbeat.txt" 2>&1 ) &
TOP_PID=$!
run_measured heartbeat "$DURATION" "$CONNECTIONS" / "${HB_SCRIPT[@]}"
wait "$TOP_PID" 2>/dev/null || true; TOP_PID=""
sleep 2
UPD_2S="$(nodes_upd)"
sleep "$((PG_STATS_WAIT_S > 2 ? PG_STATS_WAIT_S - 2 : 0))"
UPD1="$(nodes_upd)"
scrape "$WORK/metrics-after.txt"
check_clean heartbeat

# --- 5. /healthz again ---------------------------------------------------------------------------
wait_quiet
log "measure: /healthz again (ceiling drift check)"
run_measured healthz-2 "$DURATION" "$CONNECTIONS" /healthz

# --- 6. fixed rate: ~RATE_TARGET heartbeats/s -----------------------------------------------------
wait_quiet
if [[ "$FIXED_CALIBRATE" == 1 ]]; then
  # The rate is ~ connections / (delay + latency), and the latency depends on the machine (and drifts on
  # a shared VM): a short run measures it, and the connections are scaled so the measured run aims at
  # RATE_TARGET + 15 %, so that it lands at or above the target rather than below it.
  HB_DELAY="$RATE_DELAY_MS"
  run_wrk "$WORK/fixed-calibrate.txt" 10s "$FIXED_CONNECTIONS" / "${HB_SCRIPT[@]}"
  HB_DELAY=""
  check_clean fixed-calibrate
  CAL_RATE="$(req_s "$WORK/fixed-calibrate.txt")"
  CAL_CONNECTIONS="$(awk -v c="$FIXED_CONNECTIONS" -v r="$CAL_RATE" -v t="$RATE_TARGET" 'BEGIN {
    n = (r > 0) ? int(c * t * 1.15 / r + 0.999) : c; if (n < 8) n = 8; if (n > 512) n = 512; print n }')"
  log "fixed-rate calibration: $CAL_RATE req/s with $FIXED_CONNECTIONS connections -> $CAL_CONNECTIONS connections"
  FIXED_CONNECTIONS="$CAL_CONNECTIONS"
fi
sleep "$PG_STATS_WAIT_S"
FUPD0="$(nodes_upd)"
FIXED_PARAMS="-t$THREADS -c$FIXED_CONNECTIONS -d$FIXED_DURATION --latency, delay() $RATE_DELAY_MS ms per connection"
log "measure: heartbeats at a fixed rate ($FIXED_PARAMS)"
HB_DELAY="$RATE_DELAY_MS"
run_measured fixed "$FIXED_DURATION" "$FIXED_CONNECTIONS" / "${HB_SCRIPT[@]}"
HB_DELAY=""
sleep "$PG_STATS_WAIT_S"
FUPD1="$(nodes_upd)"
scrape "$WORK/metrics-end.txt"
check_clean fixed

# --- optional: more healthz/heartbeat/healthz triples, for a median ratio ---------------------------
EXTRA_ROUNDS="${EXTRA_ROUNDS:-0}"
[[ "$EXTRA_ROUNDS" =~ ^[0-9]+$ ]] || die "EXTRA_ROUNDS must be a whole number"
for ((round = 1; round <= EXTRA_ROUNDS; round++)); do
  for step in healthz-1 heartbeat healthz-2; do
    wait_quiet
    log "extra round $round of $EXTRA_ROUNDS: $step ($WRK_PARAMS)"
    if [[ "$step" == heartbeat ]]; then
      run_measured "r$round-$step" "$DURATION" "$CONNECTIONS" / "${HB_SCRIPT[@]}"
      check_clean "r$round-$step"
    else
      run_measured "r$round-$step" "$DURATION" "$CONNECTIONS" /healthz
    fi
  done
done

scrape "$WORK/metrics-final.txt"

# --- optional: a profiled full-speed heartbeat run (not part of the figures) ----------------------
if [[ "${PROFILE:-0}" == 1 ]]; then
  wait_quiet
  log "profile: JFR (settings=${PROFILE_SETTINGS:-default}) during one more full-speed heartbeat run ($WRK_PARAMS)"
  # Starting the first recording retransforms JDK classes and throws away compiled code: a first
  # recording plus a heartbeat warm-up lets the JIT recompile, and only the second one is reported.
  if timeout 30 jcmd "$SERVICE_PID" JFR.start name=hb-warm settings="${PROFILE_SETTINGS:-default}" >"$WORK/jfr-start.txt" 2>&1; then
    run_wrk "$WORK/profile-warm.txt" "$WARMUP" "$CONNECTIONS" / "${HB_SCRIPT[@]}"
    timeout 30 jcmd "$SERVICE_PID" JFR.start name=hb settings="${PROFILE_SETTINGS:-default}" >>"$WORK/jfr-start.txt" 2>&1 || true
    timeout 30 jcmd "$SERVICE_PID" JFR.stop name=hb-warm >/dev/null 2>&1 || true
    run_wrk "$WORK/profile.txt" "$DURATION" "$CONNECTIONS" / "${HB_SCRIPT[@]}"
    timeout 60 jcmd "$SERVICE_PID" JFR.stop name=hb filename="$WORK/hb.jfr" >"$WORK/jfr-stop.txt" 2>&1 || true
    if [[ -s "$WORK/hb.jfr" ]]; then
      # self = the sample's top frame; inclusive = the method is anywhere on the sampled stack (once per sample)
      timeout 300 jfr print --events jdk.ExecutionSample --stack-depth 128 "$WORK/hb.jfr" | awk '
        /stackTrace = \[/ {in_st = 1; depth = 0; delete seen; next}
        in_st && /^[ \t]*\]/ {in_st = 0; n++; next}
        in_st {
          f = $0; sub(/^[ \t]+/, "", f); sub(/[ \t]+line:.*$/, "", f); sub(/^"/, "", f); sub(/"$/, "", f)
          if (f == "...") next
          if (++depth == 1) self[f]++
          if (!(f in seen)) {seen[f] = 1; incl[f]++}
        }
        END {
          printf "execution samples: %d\n", n
          print "-- hottest methods, self (top frame) --"
          for (f in self) printf "%6.2f%%  %s\n", 100 * self[f] / n, f | "sort -rn | head -n 30"
          close("sort -rn | head -n 30")
          print "-- inclusive (on the stack), io.meshplane / hazelcast / vertx / jackson / caffeine / micrometer, under 95% --"
          for (f in incl) if (incl[f] < 0.95 * n && f ~ /^(io\.meshplane|com\.hazelcast|io\.vertx|com\.fasterxml|com\.github\.benmanes|io\.micrometer)/)
            printf "%6.2f%%  %s\n", 100 * incl[f] / n, f | "sort -rn | head -n 45"
          close("sort -rn | head -n 45")
        }' >"$WORK/profile-summary.txt" 2>&1 || true
    else
      echo "JFR recording missing: $(cat "$WORK/jfr-stop.txt")" >"$WORK/profile-summary.txt"
    fi
  else
    echo "JFR.start failed: $(cat "$WORK/jfr-start.txt")" >"$WORK/profile-summary.txt"
  fi
fi

# --- report --------------------------------------------------------------------------------------
for f in healthz-1 heartbeat healthz-2 fixed; do
  printf '\n----- wrk output: %s -----\n' "$f"
  cat "$WORK/$f.txt"
done
printf '\n----- top -H of the service during the full-speed heartbeat run (2nd 5 s sample, first 25 threads) -----\n'
echo "(the row whose PID is the JVM's pid ($SERVICE_PID) is the whole process in this top, not the main thread)"
awk '/^top - / {n++} n == 2' "$WORK/top-heartbeat.txt" | sed -n '1,32p'

H1="$(req_s "$WORK/healthz-1.txt")"; HB="$(req_s "$WORK/heartbeat.txt")"; H2="$(req_s "$WORK/healthz-2.txt")"
FX="$(req_s "$WORK/fixed.txt")"
[[ -n "$H1" && -n "$HB" && -n "$H2" && -n "$FX" ]] || die "could not read Requests/sec from wrk output"

echo
echo "== Heartbeat path: POST /v1/nodes/{id}/heartbeat ($NODES nodes, one agent token each) vs GET /healthz =="
echo "server: $BASE   wrk: $WRK_PARAMS   cores: $NPROC (shared by wrk, the service and PostgreSQL $PG_VERSION)"
echo "enrollment: $ENROLL_JSON   (rows in nodes: $ENROLLED_DB)"
echo "policy: $POLICY_NOTE"
echo "warm-up (first pass: 1 heartbeat per node, first use of each token, known 0/0; then passes with the versions until all unchanged): $WARM_JSON"
echo
printf '| %-22s | %9s | %8s | %8s | %8s | %7s | %-13s | %-40s |\n' run "req/s" requests p50 p99 non-2xx "socket errors" "CPU cores: busy/service/postgres/wrk/other"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' "------------------------" "-----------" "----------" "----------" "----------" "---------" "---------------" "------------------------------------------"
for f in healthz-1 heartbeat healthz-2 fixed; do
  case "$f" in
    healthz-1) label="/healthz (1st)" ;; heartbeat) label="heartbeat, full speed" ;;
    healthz-2) label="/healthz (2nd)" ;; fixed) label="heartbeat, fixed rate" ;;
  esac
  se="$(sock_err "$WORK/$f.txt")"
  read -r busy svc pgc wrkc oth flag <<<"${CPU_NOTE[$f]}"
  printf '| %-22s | %9s | %8s | %8s | %8s | %7s | %-13s | %-40s |\n' "$label" "$(req_s "$WORK/$f.txt")" \
    "$(total_req "$WORK/$f.txt")" "$(pct "$WORK/$f.txt" 50%)" "$(pct "$WORK/$f.txt" 99%)" \
    "$(non2xx "$WORK/$f.txt")" "${se:-none}" "$busy / $svc / $pgc / $wrkc / $oth ($flag)"
done
echo

echo "Per request, the service JVM's own work (deterministic figures: they do not move with the ceiling the way req/s"
echo "does). CPU: utime+stime of the service over the run / requests. Allocated: jvm_gc_memory_allocated_bytes_total"
echo "between full GCs made right before and after the run / requests (the background work of the run, such as"
echo "the write-behind and the staleness scan, is included in both):"
printf '| %-22s | %8s | %15s | %20s |\n' run requests "CPU us/request" "bytes alloc/request"
printf '|%s|%s|%s|%s|\n' "------------------------" "----------" "-----------------" "----------------------"
for f in healthz-1 heartbeat healthz-2 fixed; do
  case "$f" in
    healthz-1) label="/healthz (1st)" ;; heartbeat) label="heartbeat, full speed" ;;
    healthz-2) label="/healthz (2nd)" ;; fixed) label="heartbeat, fixed rate" ;;
  esac
  read -r ticks bytes <<<"${PER_REQUEST[$f]}"
  awk -v l="$label" -v n="$(total_req "$WORK/$f.txt")" -v t="$ticks" -v b="$bytes" -v hz="$CLK_TCK" 'BEGIN {
    printf "| %-22s | %8d | %15.1f | %20.0f |\n", l, n, (n > 0 ? t / hz * 1e6 / n : 0), (n > 0 ? b / n : 0) }'
done
echo

verdict() { awk -v ok="$1" 'BEGIN {print ok ? "MET" : "NOT MET"}'; }
read -r RATIO RATIO_MEAN DRIFT < <(awk -v h1="$H1" -v hb="$HB" -v h2="$H2" \
  'BEGIN {printf "%.1f %.1f %+.1f\n", 100*hb/h1, 100*hb/((h1+h2)/2), 100*(h2-h1)/h1}')
RELIABLE=yes
if grep -q NOISY <<<"${CPU_NOTE[*]}" || awk -v d="$DRIFT" 'BEGIN {exit !(d > 10 || d < -10)}'; then RELIABLE=no; fi
echo "heartbeat / healthz (1st):          $RATIO %   (target >= $TARGET_PCT %: $(verdict "$(awk -v r="$RATIO" -v t="$TARGET_PCT" 'BEGIN {print r >= t}')")$([[ $RELIABLE == yes ]] || echo ', UNRELIABLE RUN'))"
echo "heartbeat / mean(healthz 1st, 2nd): $RATIO_MEAN %"
echo "healthz drift (2nd vs 1st):         $DRIFT %"
if ((EXTRA_ROUNDS > 0)); then
  echo
  echo "All healthz -> heartbeat -> healthz triples (round 0 = the one above):"
  echo "| round | healthz 1st | heartbeat | healthz 2nd | hb / 1st | hb / mean | drift | clean |"
  echo "|------:|------------:|----------:|------------:|---------:|----------:|------:|-------|"
  : >"$WORK/rounds.txt"
  for ((round = 0; round <= EXTRA_ROUNDS; round++)); do
    if ((round == 0)); then pre=""; else pre="r$round-"; fi
    r1="$(req_s "$WORK/${pre}healthz-1.txt")"; rb="$(req_s "$WORK/${pre}heartbeat.txt")"; r2="$(req_s "$WORK/${pre}healthz-2.txt")"
    flags="${CPU_NOTE[${pre}healthz-1]##* } ${CPU_NOTE[${pre}heartbeat]##* } ${CPU_NOTE[${pre}healthz-2]##* }"
    awk -v n="$round" -v h1="$r1" -v hb="$rb" -v h2="$r2" -v f="$flags" 'BEGIN {
      printf "| %5d | %11.0f | %9.0f | %11.0f | %7.1f %% | %8.1f %% | %+4.1f %% | %s |\n", n, h1, hb, h2, 100*hb/h1, 100*hb/((h1+h2)/2), 100*(h2-h1)/h1, (f ~ /NOISY/ ? "NOISY" : "clean") }'
    awk -v h1="$r1" -v hb="$rb" -v h2="$r2" 'BEGIN {printf "%.1f %.1f\n", 100*hb/h1, 100*hb/((h1+h2)/2)}' >>"$WORK/rounds.txt"
  done
  median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
  M1="$(awk '{print $1}' "$WORK/rounds.txt" | median)"; MM="$(awk '{print $2}' "$WORK/rounds.txt" | median)"
  echo "median over $((EXTRA_ROUNDS + 1)) triples: heartbeat / healthz (1st) $M1 %, heartbeat / mean(healthz) $MM %   (target >= $TARGET_PCT %: $(verdict "$(awk -v r="$M1" -v t="$TARGET_PCT" 'BEGIN {print r >= t}')") on the first, $(verdict "$(awk -v r="$MM" -v t="$TARGET_PCT" 'BEGIN {print r >= t}')") on the mean)"
fi

FX_P99="$(pct "$WORK/fixed.txt" 99%)"; FX_P99_MS="$(to_ms "$FX_P99")"
RATE_OK="$(awk -v r="$FX" -v t="$RATE_TARGET" 'BEGIN {print (r >= 0.95 * t && r <= 1.3 * t)}')"
echo "fixed rate: $FX req/s achieved with $FIXED_CONNECTIONS connections (aim: at least ~$RATE_TARGET/s$([[ $RATE_OK == 1 ]] || echo ': OUTSIDE -5 % .. +30 %, adjust FIXED_CONNECTIONS / RATE_DELAY_MS')), p99 $FX_P99   (target p99 < $P99_TARGET_MS ms: $(verdict "$(awk -v p="$FX_P99_MS" -v t="$P99_TARGET_MS" 'BEGIN {print (p != "" && p < t)}')"))"

# write amplification: row writes/s in PostgreSQL vs heartbeats/s
HB_SECS="$(to_seconds "$DURATION")"; FX_SECS="$(to_seconds "$FIXED_DURATION")"
HB_TOTAL="$(total_req "$WORK/heartbeat.txt")"; FX_TOTAL="$(total_req "$WORK/fixed.txt")"
BOUND="$(awk -v n="$NODES" -v f="$FLUSH_INTERVAL_S" 'BEGIN {printf "%.0f", n / f}')"
wa_line() { # wa_line LABEL ROWS HEARTBEATS SECONDS
  # Target: at most one row per node per flush interval. The rows of a D-second run are written by the
  # flushes during the run plus the one right after it, so the allowance is NODES x (D / interval + 1).
  awk -v l="$1" -v rows="$2" -v hb="$3" -v s="$4" -v b="$BOUND" -v n="$NODES" -v f="$FLUSH_INTERVAL_S" 'BEGIN {
    allowed = n * (s / f + 1)
    printf "| %-22s | %10d | %9.0f | %10d | %9.0f | %6.3f | %9d | %12d | %-7s |\n", l, hb, hb / s, rows, rows / s,
      (hb > 0 ? rows / hb : 0), b, allowed, (rows <= allowed ? "MET" : "NOT MET") }'
}
echo
echo "Write amplification (PostgreSQL pg_stat_user_tables.n_tup_upd of table nodes; read ${PG_STATS_WAIT_S}s after each run,"
echo "so it includes the flush right after the run; writes/s is over the wrk duration; bound = nodes / flush interval = $NODES / ${FLUSH_INTERVAL_S}s;"
echo "target: row writes <= nodes x (duration / interval + 1), the +1 being the flush right after the run):"
printf '| %-22s | %10s | %9s | %10s | %9s | %6s | %9s | %12s | %-7s |\n' run heartbeats "hb/s" "row writes" "writes/s" "w / hb" "bound/s" "allowed rows" target
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' "------------------------" "------------" "-----------" "------------" "-----------" "--------" "-----------" "--------------" "---------"
wa_line "heartbeat, full speed" "$((UPD1 - UPD0))" "$HB_TOTAL" "$HB_SECS"
wa_line "heartbeat, fixed rate" "$((FUPD1 - FUPD0))" "$FX_TOTAL" "$FX_SECS"
echo "(full-speed run: n_tup_upd read 2 s after the run: +$((UPD_2S - UPD0)); ${PG_STATS_WAIT_S} s after: +$((UPD1 - UPD0)))"

echo
echo "Service metrics (/metrics), full-speed heartbeat run (before -> after) and at the end:"
mrow() { # mrow NAME
  printf '| %-40s | %12s | %12s | %12s |\n' "$1" "$(metric "$WORK/metrics-before.txt" "$1")" \
    "$(metric "$WORK/metrics-after.txt" "$1")" "$(metric "$WORK/metrics-end.txt" "$1")"
}
printf '| %-40s | %12s | %12s | %12s |\n' metric "before" "after" "end"
printf '|%s|%s|%s|%s|\n' "------------------------------------------" "--------------" "--------------" "--------------"
for m in mesh_node_heartbeats_total mesh_writebehind_batch_size_count mesh_writebehind_batch_size_sum \
  mesh_writebehind_batch_size_max mesh_writebehind_flush_seconds_count mesh_writebehind_flush_seconds_sum \
  mesh_writebehind_flush_seconds_max mesh_writebehind_failures_total mesh_writebehind_backlog; do
  mrow "$m"
done
HB_METRIC_DELTA="$(awk -v a="$(metric "$WORK/metrics-before.txt" mesh_node_heartbeats_total)" \
  -v b="$(metric "$WORK/metrics-after.txt" mesh_node_heartbeats_total)" 'BEGIN {printf "%.0f", b - a}')"
ROWS_METRIC_DELTA="$(awk -v a="$(metric "$WORK/metrics-before.txt" mesh_writebehind_batch_size_sum)" \
  -v b="$(metric "$WORK/metrics-after.txt" mesh_writebehind_batch_size_sum)" 'BEGIN {printf "%.0f", b - a}')"
FX_ROWS_METRIC_DELTA="$(awk -v a="$(metric "$WORK/metrics-after.txt" mesh_writebehind_batch_size_sum)" \
  -v b="$(metric "$WORK/metrics-end.txt" mesh_writebehind_batch_size_sum)" 'BEGIN {printf "%.0f", b - a}')"
echo "full-speed run: heartbeats counted by the service +$HB_METRIC_DELTA (wrk: $HB_TOTAL); rows sent by the write-behind +$ROWS_METRIC_DELTA (PostgreSQL: +$((UPD1 - UPD0)))"
echo "fixed-rate run: rows sent by the write-behind +$FX_ROWS_METRIC_DELTA (PostgreSQL: +$((FUPD1 - FUPD0)); wrk heartbeats: $FX_TOTAL)"

# policy work counters: after the warm-up (full sets, deltas), then nothing but "unchanged" answers
pmetric() { # pmetric FILE NAME [LABEL]: a sample's value, whole (0 when absent); LABEL e.g. kind="full"
  awk -v n="$2" -v l="${3:-}" '{ split($1, a, "{") } a[1] == n && (l == "" || index($1, l) > 0) { v = $2; f = 1; exit }
    END { printf "%.0f\n", (f ? v : 0) }' "$1"
}
PCOLS=(metrics-warm metrics-before metrics-after metrics-end)
PHEAD=("after warm-up" "before runs" "after full-speed" "after fixed-rate")
if ((EXTRA_ROUNDS > 0)); then PCOLS+=(metrics-final); PHEAD+=("after extra rounds"); fi
PLAST="${PCOLS[${#PCOLS[@]} - 1]}"
echo
echo "Policy work (/metrics; POLICY=$POLICY): answers and peer entries, after the warm-up pass, right before the full-speed"
echo "run (after the JIT warm-up), after each measured heartbeat run; 'during' = last column - 'before runs'"
echo "(the healthz runs and the fixed-rate calibration in between are counted too):"
line="$(printf '| %-52s |' counter)"; sep="|------------------------------------------------------|"
for h in "${PHEAD[@]}" "during runs"; do line+="$(printf ' %18s |' "$h")"; sep+="--------------------|"; done
echo "$line"; echo "$sep"
for spec in "mesh_policy_unchanged_answers_total" 'mesh_policy_peer_answers_total kind="full"' \
  'mesh_policy_peer_answers_total kind="delta"' mesh_policy_peer_entries_encoded_total mesh_policy_peer_entries_sent_total \
  mesh_node_heartbeats_total; do
  read -r pname plabel <<<"$spec"
  line="$(printf '| %-52s |' "$pname${plabel:+{$plabel\}}")"
  for c in "${PCOLS[@]}"; do line+="$(printf ' %18s |' "$(pmetric "$WORK/$c.txt" "$pname" "$plabel")")"; done
  line+="$(printf ' %18s |' "+$(($(pmetric "$WORK/$PLAST.txt" "$pname" "$plabel") - $(pmetric "$WORK/metrics-before.txt" "$pname" "$plabel")))")"
  echo "$line"
done
pdelta() { echo $(($(pmetric "$WORK/$PLAST.txt" "$@") - $(pmetric "$WORK/metrics-before.txt" "$@"))); }
D_UNCH="$(pdelta mesh_policy_unchanged_answers_total)"; D_HB="$(pdelta mesh_node_heartbeats_total)"
D_FULL="$(pdelta mesh_policy_peer_answers_total 'kind="full"')"; D_DELTA="$(pdelta mesh_policy_peer_answers_total 'kind="delta"')"
D_ENC="$(pdelta mesh_policy_peer_entries_encoded_total)"; D_SENT="$(pdelta mesh_policy_peer_entries_sent_total)"
if [[ "$D_FULL" == 0 && "$D_DELTA" == 0 && "$D_ENC" == 0 && "$D_SENT" == 0 && "$D_UNCH" == "$D_HB" ]]; then
  echo "idle agents: MET (during the runs every heartbeat was answered unchanged: $D_UNCH of $D_HB; no full or delta answer, no peer entry)"
else
  echo "idle agents: NOT MET (during the runs: $D_UNCH unchanged answers of $D_HB heartbeats, $D_FULL full, $D_DELTA delta, $D_ENC entries encoded, $D_SENT sent)"
  echo "WARNING: the measured heartbeats were not all an idle agent's (warm-up settled: $WARM_SETTLED; a node stale for stale_after, 90 s, changes its peers' versions)"
fi

FAILURES="$(metric "$WORK/metrics-end.txt" mesh_writebehind_failures_total)"
echo
echo "zero errors: MET (no non-2xx and no socket error in any heartbeat run; the script exits 1 otherwise)"
echo "write-behind failures: $FAILURES$(awk -v f="$FAILURES" 'BEGIN {if (f + 0 > 0) print "  WARNING: failed batches (retried on the next flush)"}')"
if grep -q NOISY <<<"${CPU_NOTE[*]}"; then
  echo "WARNING: other processes used >= 0.25 cores during a measured run (NOISY above): rerun on a quiet machine."
fi
if awk -v d="$DRIFT" 'BEGIN {exit !(d > 10 || d < -10)}'; then
  echo "WARNING: the two healthz runs differ by more than 10 %: the ratio is not reliable; rerun."
fi
echo "wrk: $WRK_VERSION; java: $(java -version 2>&1 | head -n 1)"
echo "NOTE: wrk, the service and PostgreSQL share the same $NPROC cores: wrk's own CPU use caps every figure."
if [[ "${PROFILE:-0}" == 1 ]]; then
  echo
  echo "== Profile: one more full-speed heartbeat run with JFR (settings=${PROFILE_SETTINGS:-default}), not part of the figures above =="
  echo "wrk, $WARMUP warm-up right after the first JFR.start: $(req_s "$WORK/profile-warm.txt") req/s; then recorded: $(req_s "$WORK/profile.txt") req/s, p99 $(pct "$WORK/profile.txt" 99%), non-2xx $(non2xx "$WORK/profile.txt")"
  cat "$WORK/profile-summary.txt"
fi
