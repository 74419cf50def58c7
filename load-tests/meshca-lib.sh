# Shared by the MeshCA drills (issue 28): the work dir with its cleanup, one replica on its own embedded PostgreSQL in
# it, its admin and enrollment tokens, its stop, the simulator's start and the lines every drill ends with. Source after
# bench-lib.sh, then call meshca_setup NAME (it sets WORK, JAR and log()).
meshca_setup() { # meshca_setup NAME: checks JAR_ARG, makes WORK (/tmp/meshca-NAME.*), copies the jar there, removes it all at exit
  MESHCA_NAME="$1"
  [[ -f "$JAR_ARG" ]] || { echo "no jar at $JAR_ARG: run mvn -B -q package -DskipTests first" >&2; exit 2; }
  WORK="$(mktemp -d "/tmp/meshca-$MESHCA_NAME.XXXXXX")"
  trap meshca_cleanup EXIT
  trap 'exit 130' INT TERM
  cp "$JAR_ARG" "$WORK/meshplane.jar"
  JAR="$WORK/meshplane.jar"
}
log() { echo "[meshca-$MESHCA_NAME $(date +%T)] $*" >&2; }
meshca_cleanup() { # the outputs to KEEP_DIR when set; the simulator and the replica stopped; WORK removed
  if [[ -n "${KEEP_DIR:-}" ]]; then mkdir -p "$KEEP_DIR" && cp "$WORK"/*.out "$WORK"/*.err "$WORK"/*.log "$KEEP_DIR"/ 2>/dev/null || true; fi
  if [[ -n "${SIM:-}" ]]; then kill "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true; fi
  stop_replica
  rm -rf "$WORK"
}
start_sim() { # start_sim DURATION_S [more simulate flags]: NODES agents with --certificates against the replica; SIM its pid
  local duration="$1"; shift
  java -Xmx"${SIM_XMX:-1g}" -jar "$JAR" simulate --coordinator "$BASE" --enroll-token "$ENROLL" --nodes "$NODES" --interval "${INTERVAL_S}s" \
    --duration "${duration}s" --tags tag:ca --concurrency "${CONCURRENCY:-64}" --certificates "$@" >"$WORK/sim.out" 2>"$WORK/sim.err" &
  SIM=$!
}
meshca_footer() { # the line every drill ends its result block with
  echo "replica log ERROR lines: $(grep -c ERROR "$WORK/replica.log" || true); simulator stderr lines: $(wc -l <"$WORK/sim.err")"
}
OPENS=(--add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED)
REPLICA_PID=""
# the replica's environment: loopback ports picked once, the caller's MESH_* settings (MESHCA_ENV) on top
replica_ports() {
  HTTP_PORT="$(free_port "${HTTP_PORT:-18790}")"
  PANEL_PORT="$(free_port $((HTTP_PORT + 1)) "$HTTP_PORT")"
  CLUSTER_PORT="$(free_port 16490 "$HTTP_PORT" "$PANEL_PORT")"
  BASE="http://127.0.0.1:$HTTP_PORT"
  REPLICA_ENV=(MESH_HTTP_HOST=127.0.0.1 MESH_HTTP_PORT="$HTTP_PORT" MESH_PANEL_PORT="$PANEL_PORT" MESH_CLUSTER_HOST=127.0.0.1
    MESH_CLUSTER_PORT="$CLUSTER_PORT" MESH_CLUSTER_MEMBERS="127.0.0.1:$CLUSTER_PORT" MESH_CLUSTER_NAME="meshca-$$" "${MESHCA_ENV[@]}")
}
start_replica() { # start_replica [SECONDS to wait for /readyz]: the same data directory every time (a restart keeps the CA)
  (cd "$WORK" && exec env "${REPLICA_ENV[@]}" java -Xms256m -Xmx"${SERVICE_XMX:-1500m}" "${OPENS[@]}" -jar "$JAR" run) >>"$WORK/replica.log" 2>&1 &
  REPLICA_PID=$!
  local i
  for i in $(seq 1 $((${1:-120} * 2))); do
    curl -sf --max-time 2 "$BASE/readyz" >/dev/null && return 0
    kill -0 "$REPLICA_PID" 2>/dev/null || break
    sleep 0.5
  done
  log "the replica did not get ready"; tail -20 "$WORK/replica.log" >&2; exit 2
}
stop_replica() { # SIGTERM, then SIGKILL after 60 s; the embedded PostgreSQL stops with it (or by its pid)
  [[ -n "$REPLICA_PID" ]] || return 0
  kill "$REPLICA_PID" 2>/dev/null || true
  local i
  for i in $(seq 1 120); do kill -0 "$REPLICA_PID" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$REPLICA_PID" 2>/dev/null || true; wait "$REPLICA_PID" 2>/dev/null || true
  REPLICA_PID=""
  local pidfile="$WORK/data/postgres/postmaster.pid" pgpid
  if [[ -f "$pidfile" ]]; then
    pgpid="$(head -n 1 "$pidfile")"
    if [[ "$pgpid" =~ ^[0-9]+$ ]] && kill -0 "$pgpid" 2>/dev/null; then
      kill -INT "$pgpid" 2>/dev/null || true
      for i in $(seq 1 100); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
}
mint() { # mint NAME TEAM ENV SURFACE: a token, written by `token create` into the running replica's database
  (cd "$WORK" && env "${REPLICA_ENV[@]}" java -jar "$JAR" token create --name "$1" --team "$2" --environment "$3" --surface "$4" \
    --expires 1d 2>>"$WORK/token.log" | tail -1 | tr -d '[:space:]')
}
pg() { # pg SQL: one query against the replica's embedded PostgreSQL (port from postmaster.pid, the generated secret beside it)
  local port
  port="$(sed -n 4p "$WORK/data/postgres/postmaster.pid" | tr -d '[:space:]')"
  PGPASSWORD="$(cat "$WORK/data/postgres.secret" 2>/dev/null || true)" PGCONNECT_TIMEOUT=5 timeout 30 \
    psql -X -q -A -t -F, -h 127.0.0.1 -p "$port" -U postgres -d "${PG_DB:-postgres}" -c "$1"
}
# The Python helpers the drills' result scripts share: meshca_py ARGS... runs the script on its stdin after them (sys.argv
# as for python3 -: the script's own arguments from sys.argv[1]).
MESHCA_PY='
import json, os, re, signal, sys, time, urllib.request, urllib.error
MESHCA_NAME = os.environ.get("MESHCA_NAME", "drill")
def log(m): print("[meshca-%s %s] %s" % (MESHCA_NAME, time.strftime("%H:%M:%S"), m), file=sys.stderr, flush=True)
def alive(p):
    try: os.kill(p, 0); return True
    except OSError: return False
def sim_lines(work):
    try: return open(os.path.join(work, "sim.out")).read().splitlines()
    except OSError: return []
def sim_match(work, pattern):
    """the match of pattern in the simulator'"'"'s latest line that has one, or None"""
    for l in reversed(sim_lines(work)):
        m = re.search(pattern, l)
        if m: return m
    return None
def stop_sim(sim, work):
    """SIGTERM to the simulator, up to 60 s for its end; its final line"""
    os.kill(sim, signal.SIGTERM)
    for _ in range(120):
        if not alive(sim): break
        time.sleep(0.5)
    return next((l for l in sim_lines(work) if l.startswith("[sim] done")), "")
'
meshca_py() { MESHCA_NAME="$MESHCA_NAME" python3 -c "$MESHCA_PY"$'\n'"$(cat)" "$@"; }
