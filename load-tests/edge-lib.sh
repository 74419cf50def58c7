# What the one-edge and two-edge load tests share (ingress-drain.sh, waf-reload.sh): source it after bench-lib.sh and
# meshca-lib.sh, then call edge_setup NAME ENROLL_NAME. It starts a replica, mints an admin token (api, field), an
# enrollment token for shop/prod (ENROLL), a target HTTP server on TARGET_PORT (the JDK's HTTP server, 2 KiB answers,
# keep-alive), and defines agent NAME TAGS LISTEN_PORT [flags] (started in the background, its PID in PIDS), node_id NAME
# and wait_log NAME TEXT; every process it started is stopped at exit.
edge_setup() { # edge_setup NAME ENROLL_NAME
PIDS=()
meshca_setup "$1"
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; meshca_cleanup' EXIT
replica_ports
start_replica
TOKEN="$(mint root '*' '*' admin)"
api() { curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); exec("for k in sys.argv[1].split(\".\"): d = d[int(k)] if isinstance(d, list) else d[k]"); print(d)' "$1"; }
EXPIRES="$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)"
ENROLL="$(api -X POST -d "{\"name\":\"$2\",\"scope\":{\"team\":\"shop\",\"environment\":\"prod\",\"surface\":\"enrollment\"},\"expires\":\"$EXPIRES\"}" \
  "$BASE/v1/auth/tokens" | field token)"

# the target: the JDK's HTTP server, 2 KiB answers, keep-alive
TARGET_PORT="$(free_port 18890 "$HTTP_PORT" "$PANEL_PORT" "$CLUSTER_PORT")"
cat >"$WORK/Target.java" <<'EOF'
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
public class Target {
  public static void main(String[] a) throws Exception {
    byte[] body = "x".repeat(2048).getBytes();
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(a[0])), 1024);
    s.setExecutor(Executors.newFixedThreadPool(8));
    s.createContext("/", x -> { x.getRequestBody().readAllBytes(); x.sendResponseHeaders(200, body.length); x.getResponseBody().write(body); x.close(); });
    s.start();
  }
}
EOF
java "$WORK/Target.java" "$TARGET_PORT" >"$WORK/target.log" 2>&1 &
PIDS+=($!)

agent() { # agent NAME TAGS LISTEN_PORT [more flags]
  local name="$1" tags="$2" port="$3"; shift 3
  (cd "$WORK" && exec java -Xmx256m -jar "$JAR" agent --coordinator "$BASE" --enroll-token "$ENROLL" --name "$name" --tags "$tags" \
    --state-dir "$WORK/$name-state" --listen "127.0.0.1:$port" "$@") >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
}
node_id() { api "$BASE/v1/nodes?name_prefix=$1" | field items.0.id; }
wait_log() { local i; for i in $(seq 1 120); do grep -q "$2" "$WORK/$1.log" && return 0; sleep 0.5; done; log "$1: no '$2'"; tail "$WORK/$1.log" >&2; exit 2; }
}
