#!/usr/bin/env bash
# Auth overhead benchmark: throughput of an authenticated GET /v1/auth/whoami against the
# unauthenticated GET /healthz, in one run, on one server, with the same wrk parameters.
# Target: whoami keeps >= 80% of healthz's requests/s.
#
# Usage: bash load-tests/bench-auth.sh [JAR]        (default JAR: <repo>/target/meshplane.jar)
# Env:   THREADS (2) CONNECTIONS (32) DURATION (20s) WARMUP (10s) TARGET_PCT (80)
#        HTTP_PORT (18090) PANEL_PORT (18091) CLUSTER_PORT (15790): first free port from these up
#        QUIET_WAIT_S (60): before each measured run, wait at most this long for other work on the
#          machine to fall below 0.25 cores (then measure anyway, flagged NOISY if it stays busy)
#        SERVICE_LOG_COPY=FILE  keep a copy of the service log (the temp dir is removed on exit)
#        FAIL_BELOW_TARGET=1    exit 4 when a reliable run's ratio is below TARGET_PCT (default: report only)
# Exit:  0 done; 1 setup failed, whoami answered non-2xx, or the service stopped during the run;
#        4 below target (only with FAIL_BELOW_TARGET=1, and only for a reliable run: no NOISY run, drift <= 10 %)
#
# All load goes to 127.0.0.1 only. Every wait and every wrk run is bounded in time.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
JAR_ARG="${1:-$REPO_ROOT/target/meshplane.jar}"

THREADS="${THREADS:-2}"
CONNECTIONS="${CONNECTIONS:-32}"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-10s}"
TARGET_PCT="${TARGET_PCT:-80}"
HOST=127.0.0.1
READY_TIMEOUT_S=90
STOP_TIMEOUT_S=30

log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=load-tests/bench-lib.sh
source "$SCRIPT_DIR/bench-lib.sh"

[[ -f "$JAR_ARG" ]] || die "jar not found: $JAR_ARG (build it with: mvn -B -q package -DskipTests)"
command -v java >/dev/null || die "java not found on PATH"
command -v curl >/dev/null || die "curl not found on PATH"

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
HTTP_PORT="$(free_port "${HTTP_PORT:-18090}")" || die "no free HTTP port"
PANEL_PORT="$(free_port "${PANEL_PORT:-18091}" "$HTTP_PORT")" || die "no free panel port"
CLUSTER_PORT="$(free_port "${CLUSTER_PORT:-15790}" "$HTTP_PORT" "$PANEL_PORT")" || die "no free cluster port"

# --- temp dir, jar copy, cleanup trap ------------------------------------------------------------
WORK="$(mktemp -d /tmp/meshplane-bench.XXXXXX)"
SERVICE_PID=""
cleanup() {
  local rc=$?
  set +e
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
  MESH_CLUSTER_NAME=bench
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
# The port was free when chosen, but another process may have bound it first: then /readyz answered for
# someone else (and the token command would start a second PostgreSQL in our data dir). Check the owner.
owner="$(ss -Hltnp "sport = :$HTTP_PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 || true)"
[[ "$owner" == "$SERVICE_PID" ]] || die "port $HTTP_PORT is served by pid ${owner:-?}, not by our service (pid $SERVICE_PID)"

# --- admin token (same temp dir, same env: attaches to the running embedded PostgreSQL) ----------
TOKEN="$(cd "$WORK" && timeout 120 env "${MESH_ENV[@]}" java "${JVM_FLAGS[@]}" -jar "$JAR" \
  token create --name bench --team '*' --environment '*' --surface admin --expires 1d 2>"$WORK/token.log")" \
  || { tail -n 20 "$WORK/token.log" >&2; die "token create failed"; }
TOKEN="$(printf '%s' "$TOKEN" | tr -d '[:space:]')"
[[ -n "$TOKEN" ]] || die "token create printed nothing"
AUTH="Authorization: Bearer $TOKEN"

code_h="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE/healthz")"
code_w="$(curl -s -o "$WORK/whoami.json" -w '%{http_code}' --max-time 5 -H "$AUTH" "$BASE/v1/auth/whoami")"
[[ "$code_h" == 200 ]] || die "/healthz answered $code_h"
[[ "$code_w" == 200 ]] || { cat "$WORK/whoami.json" >&2; die "/v1/auth/whoami answered $code_w"; }
log "sanity: /healthz 200, /v1/auth/whoami 200 ($(head -c 120 "$WORK/whoami.json")...)"

# --- wrk runs ------------------------------------------------------------------------------------
run_wrk() { # run_wrk OUTFILE DURATION PATH [wrk args...]
  local out="$1" dur="$2" path="$3"; shift 3
  local limit=$(($(to_seconds "$dur") + 30))
  timeout "$limit" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$dur" --latency "$@" "$BASE$path" >"$out" 2>&1 \
    || { cat "$out" >&2; die "wrk failed on $path"; }
}
# CPU accounting per run, to tell a clean run from one disturbed by other work on the machine.
CLK_TCK="$(getconf CLK_TCK)"
NPROC="$(nproc)"
# busy = user+nice+system+steal ticks (irq/softirq left out: on loopback that is mostly the benchmark's own
# packets, charged to no process); total = all ticks
service_gone() { # dies with the log's tail when the service is no longer running (it was not stopped by us)
  kill -0 "$SERVICE_PID" 2>/dev/null && return 0
  tail -n 15 "$WORK/service.log" >&2
  die "the service (pid $SERVICE_PID) stopped during the benchmark, not by this script: the run is invalid"
}
cpu_service() { # utime+stime of the service JVM (ticks)
  local stat
  stat="$(cat "/proc/$SERVICE_PID/stat" 2>/dev/null)" || { service_gone; return 1; }
  sed 's/.*) //' <<<"$stat" | awk '{print $12 + $13}'
}
# CPU seconds of this shell's finished children (wrk): the `times` builtin must run in this shell, not
# in a $(...) subshell (a fresh fork counts nothing), so it writes a file that children_secs reads.
# Waits (bounded) until the machine is quiet apart from the idle service: other work skews the comparison.
wait_quiet() {
  local limit="${QUIET_WAIT_S:-60}" start=$SECONDS
  while :; do
    local m0 s0 m1 s1
    service_gone
    read -r m0 _ < <(cpu_machine); s0="$(cpu_service)"
    sleep 3
    service_gone
    read -r m1 _ < <(cpu_machine); s1="$(cpu_service)"
    local other
    other="$(awk -v m="$((m1 - m0))" -v s="$((s1 - s0))" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", (m - s) / hz / 3}')"
    if awk -v o="$other" 'BEGIN {exit !(o < 0.25)}'; then log "machine quiet (other work: $other cores)"; return 0; fi
    if ((SECONDS - start >= limit)); then
      log "WARNING: machine still busy after ${limit}s (other work: $other cores); measuring anyway, expect noise"
      return 0
    fi
    log "machine busy (other work: $other cores of $NPROC); waiting (at most ${limit}s)"
  done
}
declare -A CPU_NOTE
run_measured() { # run_measured NAME PATH [wrk args...]: a measured run with CPU accounting
  local name="$1"; shift
  local m0 t0 s0 c0 m1 t1 s1 c1
  snap_children; c0="$(children_secs)"; read -r m0 t0 < <(cpu_machine); s0="$(cpu_service)"
  run_wrk "$WORK/$name.txt" "$DURATION" "$@"
  service_gone
  read -r m1 t1 < <(cpu_machine); s1="$(cpu_service)"; snap_children; c1="$(children_secs)"
  # cores used on average during the run: machine busy, service, wrk, and everything else
  CPU_NOTE[$name]="$(awk -v m="$((m1 - m0))" -v t="$((t1 - t0))" -v s="$((s1 - s0))" -v c0="$c0" -v c1="$c1" \
    -v hz="$CLK_TCK" -v n="$NPROC" 'BEGIN {
      secs = t / n / hz; busy = m / hz / secs; svc = s / hz / secs; wrk = (c1 - c0) / secs; oth = busy - svc - wrk
      if (oth < 0) oth = 0
      printf "%.2f %.2f %.2f %.2f %s", busy, svc, wrk, oth, (oth >= 0.25 ? "NOISY" : "clean") }')"
}
non2xx() { awk -F': *' '/Non-2xx or 3xx responses/ {print $2+0; f=1} END {if (!f) print 0}' "$1"; }

log "NOTE: wrk (the client) and the service share this machine's $NPROC cores; the figures compare the two routes under the same conditions, they are not the service's capacity."

log "warm-up: /healthz $WARMUP"
run_wrk "$WORK/warm-healthz.txt" "$WARMUP" /healthz
log "warm-up: /v1/auth/whoami $WARMUP"
run_wrk "$WORK/warm-whoami.txt" "$WARMUP" /v1/auth/whoami -H "$AUTH"
[[ "$(non2xx "$WORK/warm-whoami.txt")" == 0 ]] || { cat "$WORK/warm-whoami.txt" >&2; die "whoami answered non-2xx during warm-up"; }

WRK_PARAMS="-t$THREADS -c$CONNECTIONS -d$DURATION --latency"
wait_quiet
log "measure: /healthz ($WRK_PARAMS)"
run_measured healthz-1 /healthz
wait_quiet
log "measure: /v1/auth/whoami ($WRK_PARAMS -H 'Authorization: Bearer ...')"
run_measured whoami /v1/auth/whoami -H "$AUTH"
wait_quiet
log "measure: /healthz again (ceiling drift check)"
run_measured healthz-2 /healthz

for f in healthz-1 whoami healthz-2; do
  printf '\n----- wrk output: %s -----\n' "$f"
  cat "$WORK/$f.txt"
done

H1="$(req_s "$WORK/healthz-1.txt")"; W="$(req_s "$WORK/whoami.txt")"; H2="$(req_s "$WORK/healthz-2.txt")"
[[ -n "$H1" && -n "$W" && -n "$H2" ]] || die "could not read Requests/sec from wrk output"
W_NON2XX="$(non2xx "$WORK/whoami.txt")"

echo
echo "== Auth overhead: GET /v1/auth/whoami (bearer token) vs GET /healthz =="
echo "server: $BASE   wrk: $WRK_PARAMS   warm-up: $WARMUP per route   cores: $NPROC (shared by wrk and the service)"
echo
printf '| %-16s | %9s | %8s | %8s | %7s | %-13s | %-34s |\n' run "req/s" p50 p99 non-2xx "socket errors" "CPU cores: busy/service/wrk/other"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "------------------" "-----------" "----------" "----------" "---------" "---------------" "------------------------------------"
for f in healthz-1 whoami healthz-2; do
  case "$f" in
    healthz-1) label="/healthz (1st)" ;; whoami) label="/v1/auth/whoami" ;; healthz-2) label="/healthz (2nd)" ;;
  esac
  se="$(sock_err "$WORK/$f.txt")"
  read -r busy svc wrkc oth flag <<<"${CPU_NOTE[$f]}"
  printf '| %-16s | %9s | %8s | %8s | %7s | %-13s | %-34s |\n' "$label" "$(req_s "$WORK/$f.txt")" \
    "$(pct "$WORK/$f.txt" 50%)" "$(pct "$WORK/$f.txt" 99%)" "$(non2xx "$WORK/$f.txt")" "${se:-none}" \
    "$busy / $svc / $wrkc / $oth ($flag)"
done
echo
read -r RATIO RATIO_MEAN DRIFT < <(awk -v h1="$H1" -v w="$W" -v h2="$H2" \
  'BEGIN {printf "%.1f %.1f %+.1f\n", 100*w/h1, 100*w/((h1+h2)/2), 100*(h2-h1)/h1}')
VERDICT="$(awk -v r="$RATIO" -v t="$TARGET_PCT" 'BEGIN {print (r >= t) ? "MEETS" : "BELOW"}')"
# A run is reliable when no measured run was NOISY and the two healthz runs agree within 10 %.
RELIABLE=yes
if grep -q NOISY <<<"${CPU_NOTE[*]}" || awk -v d="$DRIFT" 'BEGIN {exit !(d > 10 || d < -10)}'; then RELIABLE=no; fi
echo "whoami / healthz (1st):          $RATIO %   (target >= $TARGET_PCT %: $VERDICT$([[ $RELIABLE == yes ]] || echo ', UNRELIABLE RUN'))"
echo "whoami / mean(healthz 1st, 2nd): $RATIO_MEAN %"
echo "healthz drift (2nd vs 1st):      $DRIFT %"
echo "whoami non-2xx responses:        $W_NON2XX"
if grep -q NOISY <<<"${CPU_NOTE[*]}"; then
  echo "WARNING: other processes used >= 0.25 cores during a measured run (NOISY above): the ratio is not reliable; rerun on a quiet machine."
fi
if awk -v d="$DRIFT" 'BEGIN {exit !(d > 10 || d < -10)}'; then
  echo "WARNING: the two healthz runs differ by more than 10 %: the ratio is not reliable; rerun."
fi
echo "wrk: $WRK_VERSION"
echo "NOTE: wrk and the service share the same $NPROC cores: wrk's own CPU use caps both figures."

if [[ "$W_NON2XX" != 0 ]]; then
  die "whoami answered $W_NON2XX non-2xx responses during the measurement: the run is invalid"
fi
if [[ "$VERDICT" == BELOW && "$RELIABLE" == yes && "${FAIL_BELOW_TARGET:-0}" == 1 ]]; then
  log "ratio $RATIO % is below the $TARGET_PCT % target"
  exit 4
fi
