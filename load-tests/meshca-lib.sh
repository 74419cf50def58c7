# Shared by the MeshCA drills (issue 28): one replica on its own embedded PostgreSQL in a temp dir, its admin and
# enrollment tokens, /metrics counters, and its stop. Source after bench-lib.sh; needs JAR, WORK and log().
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
