#!/usr/bin/env bash
# The fleet soak (issue 17): one replica on external PostgreSQL, NODES simulated agents (`meshplane
# simulate`, the reference agent's protocol code) at INTERVAL, enrolled, then DURATION of steady state, a 50-grant policy over
# tag:t0..t99 (as fleet-sim.sh), a policy change every PERIOD, OPS_PCT % of the agents re-keyed at
# REKEY_AT and OPS_PCT % moved to the other relay at MOVE_AT. It records and prints heartbeats/s,
# latency, errors, heap after a full GC at the start and the end of the steady window, RSS,
# PostgreSQL row writes/s and WAL bytes/s, the write-behind backlog maximum, false stale events,
# operations not succeeded and the time each policy change took to reach every agent; it exits 1 when
# a target is missed (errors > 0, false stale > 0, operations not succeeded > 0, a policy change not
# acknowledged by every agent within 3 intervals, the heap after a full GC growing by more than 10 %),
# 2 when setup failed. The schedule (PERIOD, REKEY_AT, MOVE_AT) counts from the start of the steady window.
# Usage: bash load-tests/fleet-soak.sh [JAR]       (see load-tests/README.md, "fleet-soak.sh")
# Env:   NODES (100000) INTERVAL (30s) DURATION (20m of steady state) PERIOD (5m) OPS_PCT (1) TAGS (NODES / 100, at least 100)
#        ENROLL_MAX (NODES / 100 + 60 s: the most enrollment may take)
#        REKEY_AT / MOVE_AT (35 % / 60 % of DURATION: 7m / 12m of 20m) SAMPLE (5s: backlog sampling)
#        SERVICE_XMX (4g) SIM_XMX (2g) CONCURRENCY (64) HTTP_PORT (18490) KEEP_DIR (copy the logs there)
#        SERVICE_OPTS: more JVM options for the replica, split on spaces (e.g. "-Xlog:gc*:file=/tmp/gc.log:uptime
#          -XX:StartFlightRecording=filename=/tmp/soak.jfr": files outside the run's own directory, which is removed)
#        WATCH (0; 1: every agent also holds a watch stream, and every policy change alters every node's rules
#          through one more grant, 10.20.0.0/16 -> * on a port that moves; the report adds the delays from commit
#          to applied per kind of change, measured by the simulator, and the replica's mesh_watch_* figures)
#        WATCH_HTTP2 (1: streams multiplexed over HTTP/2; 0: one HTTP/1.1 connection each) SOURCES (127.0.0.2..127.0.0.5)
#        MESHPLANE_CP: run meshplane from this class path (`java -cp MESHPLANE_CP io.meshplane.Main`) instead
#          of the jar (the CI test passes its own class path), JCMD (jcmd)
# Needs PostgreSQL at 127.0.0.1:5432 (user postgres, trust), python3, curl, psql, jcmd. Loopback only;
# every wait is bounded (the whole run lasts DURATION + at most a few minutes of setup).
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
source "$SCRIPT_DIR/bench-lib.sh"
NODES="${NODES:-100000}"
INTERVAL="${INTERVAL:-30s}"
DURATION="${DURATION:-20m}"            # the steady window, after every agent has enrolled
PERIOD="${PERIOD:-5m}"
OPS_PCT="${OPS_PCT:-1}"
# nodes spread over TAGS tags, ~100 per tag: the nodes of tag:t0..t99 (the grants' tags) get ~100 peers each, as
# in the capacity model; with 100 tags at 100,000 nodes every node would have 1,000 peers and 100 million pairs
TAGS="${TAGS:-$((NODES / 100 > 100 ? NODES / 100 : 100))}"
INTERVAL_S="$(to_seconds "$INTERVAL")"
DURATION_S="$(to_seconds "$DURATION")"
# the most enrollment may take (every agent enrolled, else exit 2): 100,000 agents enrolled in 573 s here
ENROLL_MAX_S="$(to_seconds "${ENROLL_MAX:-$((NODES / 100 + 60))}")"
# the simulator runs until the driver stops it at the end of the steady window; --duration only bounds it
SIM_DURATION_S="$((ENROLL_MAX_S + INTERVAL_S * 2 + DURATION_S + 120))"
PERIOD_S="$(to_seconds "$PERIOD")"
REKEY_AT_S="$(to_seconds "${REKEY_AT:-$((DURATION_S * 35 / 100))}")"
MOVE_AT_S="$(to_seconds "${MOVE_AT:-$((DURATION_S * 60 / 100))}")"
SAMPLE_S="$(to_seconds "${SAMPLE:-5s}")"
# an operation needs up to two intervals (delivered in one answer, confirmed by the next heartbeat) plus
# the time to ask OPS_PCT % of the agents: one asked later than 3 intervals before the end would count
# as not succeeded although nothing failed
for at in "$REKEY_AT_S" "$MOVE_AT_S"; do
  if [[ "$OPS_PCT" != 0 ]] && (( at + 3 * INTERVAL_S > DURATION_S )); then
    echo "REKEY_AT/MOVE_AT (${at}s) must leave 3 intervals ($((3 * INTERVAL_S))s) before the end of DURATION (${DURATION_S}s)" >&2; exit 2
  fi
done
JCMD="${JCMD:-jcmd}"
if [[ -n "${MESHPLANE_CP:-}" ]]; then MP=(java -cp "$MESHPLANE_CP" io.meshplane.Main); else
  [[ -f "$JAR" ]] || { echo "no jar at $JAR: run mvn -B -q package -DskipTests first" >&2; exit 2; }
  MP=(java -jar "$JAR"); fi
WORK="$(mktemp -d)"
DB="fleetsoak_$$"
PORT="$(free_port "${HTTP_PORT:-18490}")"
PANEL="$(free_port $((PORT + 1)) "$PORT")"
CPORT="$(free_port 16190)"
log() { echo "[fleet-soak $(date +%T)] $*" >&2; }
cleanup() {
  if [[ -n "${KEEP_DIR:-}" ]]; then mkdir -p "$KEEP_DIR" && cp "$WORK"/*.out "$WORK"/*.err "$WORK"/*.log "$KEEP_DIR"/ 2>/dev/null || true; fi
  if [[ -n "${DRV:-}" ]]; then kill "$DRV" 2>/dev/null || true; wait "$DRV" 2>/dev/null || true; fi
  if [[ -n "${SIM:-}" ]]; then kill "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true; fi
  if [[ -n "${PID:-}" ]]; then kill "$PID" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$PID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB" >/dev/null
export MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" MESH_HTTP_HOST=127.0.0.1 MESH_HTTP_PORT="$PORT" MESH_PANEL_PORT="$PANEL" \
  MESH_CLUSTER_PORT="$CPORT" MESH_CLUSTER_MEMBERS="127.0.0.1:$CPORT" MESH_CLUSTER_HOST=127.0.0.1 MESH_CLUSTER_NAME="soak-$$" \
  MESH_KEYS_DIR="$WORK/keys" MESH_HEARTBEAT_INTERVAL="$INTERVAL" MESH_STALE_AFTER="$((INTERVAL_S * 3))s" MESH_OPERATIONS_DEADLINE=10m \
  MESH_RELAYS='[{"name":"r1","region":"eu","url":"https://r1.example"},{"name":"r2","region":"eu","url":"https://r2.example"}]'
SERVICE_XMX="${SERVICE_XMX:-4g}"
OPENS=(--add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED)
read -r -a SERVICE_OPTS <<<"${SERVICE_OPTS:-}"
java -Xms256m -Xmx"$SERVICE_XMX" "${OPENS[@]}" "${SERVICE_OPTS[@]}" "${MP[@]:1}" run >"$WORK/service.log" 2>&1 &
PID=$!
for _ in $(seq 1 180); do curl -sf "localhost:$PORT/readyz" >/dev/null && break; kill -0 "$PID" 2>/dev/null || break; sleep 0.5; done
curl -sf "localhost:$PORT/readyz" >/dev/null || { log "the service did not get ready"; tail -20 "$WORK/service.log"; exit 2; }
mint() { "${MP[@]}" token create --name "$1" --team "$2" --environment "$3" --surface "$4" --expires 1d 2>/dev/null | tail -1; }
ADMIN="$(mint soak '*' '*' admin)"
ENROLL="$(mint fleet soak prod enrollment)"
BASE="http://127.0.0.1:$PORT"
WATCH="${WATCH:-0}"
policy() { python3 -c 'import json, sys; g = [{"src":["tag:t%d"%(2*i)],"dst":["tag:t%d"%(2*i+1)],"ports":["tcp/%d"%(1000+i)]} for i in range(50)]
if sys.argv[1] == "1": g.append({"src":["10.20.0.0/16"],"dst":["*"],"ports":["tcp/3000"]})
print(json.dumps({"grants": g}))' "$WATCH"; }
WATCH_ARGS=()
if [[ "$WATCH" == 1 ]]; then
  WATCH_ARGS=(--watch --source-addresses "${SOURCES:-127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5}")
  [[ "${WATCH_HTTP2:-1}" == 1 ]] || WATCH_ARGS+=(--no-watch-http2)
fi
code="$(curl -s -o "$WORK/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  --data-binary "$(policy)" "$BASE/v1/acl?team=soak&environment=prod")"
[[ "$code" == 200 ]] || { log "policy PUT: $code $(cat "$WORK/put.json")"; exit 2; }

log "simulating $NODES agents over $TAGS tags at $INTERVAL: enrollment (at most ${ENROLL_MAX_S}s), then $DURATION steady (policy change every $PERIOD, re-keys at ${REKEY_AT_S}s, relay moves at ${MOVE_AT_S}s into it)"
java -Xmx"${SIM_XMX:-2g}" "${MP[@]:1}" simulate \
  --coordinator "$BASE" --enroll-token "$ENROLL" --nodes "$NODES" \
  --interval "$INTERVAL" --duration "${SIM_DURATION_S}s" --tags "tag:t0" --spread-tags "$TAGS" --concurrency "${CONCURRENCY:-64}" \
  "${WATCH_ARGS[@]}" >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM=$!
T0="$(date +%s.%N)"
# the driver: schedule, sampling and figures; it prints the report and exits non-zero on a missed target
set +e
python3 - "$BASE" "$ADMIN" "$DB" "$PID" "$SIM" "$T0" "$NODES" "$INTERVAL_S" "$DURATION_S" "$PERIOD_S" "$REKEY_AT_S" "$MOVE_AT_S" "$OPS_PCT" \
  "$SAMPLE_S" "$JCMD" "$WORK" "$TAGS" "$ENROLL_MAX_S" "$WATCH" <<'PY' &
import json, os, random, re, signal, subprocess, sys, threading, time, urllib.request, urllib.error
(base, admin, db, pid, sim, t0, nodes, interval, duration, period, rekey_at, move_at, ops_pct, sample, jcmd, work, tags, enroll_max, watch) = sys.argv[1:20]
watch = watch == "1"
pid, sim, nodes = int(pid), int(sim), int(nodes)
t0 = float(t0); interval, duration, period, rekey_at, move_at, sample, enroll_max = map(float, (interval, duration, period, rekey_at, move_at, sample, enroll_max))
ops_pct = float(ops_pct)
def log(m): print("[fleet-soak %s] %s" % (time.strftime("%H:%M:%S"), m), file=sys.stderr, flush=True)
def el(): return time.time() - t0
def req(method, path, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    r = urllib.request.Request(base + path, data=data, method=method, headers={"Authorization": "Bearer " + admin, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=timeout) as resp: return resp.status, resp.read()
    except urllib.error.HTTPError as e: return e.code, e.read()
def sql(q):
    return subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", db, "-tA", "-F", " ", "-c", q], capture_output=True, text=True, timeout=60).stdout.strip()
def metrics():
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r: text = r.read().decode()
    m = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try: m[k] = float(v)
            except ValueError: pass
    return m
def metric(m, name): return sum(v for k, v in m.items() if k == name or k.startswith(name + "{"))
def alive(p):
    try: os.kill(p, 0); return True
    except OSError: return False
def sim_enrolled():
    try:
        lines = open(os.path.join(work, "sim.out")).read().splitlines()
        for l in reversed(lines):
            mm = re.search(r"enrolled (\d+)/", l)
            if mm: return int(mm.group(1))
    except OSError: pass
    return 0
def heap_after_gc(p):
    subprocess.run([jcmd, str(p), "GC.run"], capture_output=True, timeout=120)
    out = subprocess.run([jcmd, str(p), "GC.heap_info"], capture_output=True, text=True, timeout=60).stdout
    mm = re.search(r"used (\d+)K", out)
    return int(mm.group(1)) / 1024 if mm else -1
def rss(p):
    for l in open("/proc/%d/status" % p):
        if l.startswith("VmRSS:"): return int(l.split()[1]) / 1024
    return -1
def pg_point():
    w = sql("SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables WHERE relname = 'nodes'")
    l = sql("SELECT pg_current_wal_lsn()")
    return int(w or 0), l
def sweep():
    """every node's policy_sync: {id: (acknowledged acl, current acl, relay)}"""
    out, cursor = {}, None
    while True:
        st, body = req("GET", "/v1/nodes?limit=1000" + ("&cursor=" + cursor if cursor else ""))
        if st != 200: raise RuntimeError("GET /v1/nodes: %d %s" % (st, body[:200]))
        j = json.loads(body)
        for i in j["items"]:
            ps = i.get("policy_sync") or {}
            out[i["id"]] = ((ps.get("acknowledged") or {}).get("acl"), (ps.get("current") or {}).get("acl"), i.get("relay"))
        cursor = j.get("next_cursor")
        if not cursor: return out

fail, figures = [], []
stop = threading.Event()
backlog = {"max": 0, "samples": 0}
def sampler():
    while not stop.wait(sample):
        try:
            b = metric(metrics(), "mesh_writebehind_backlog")
            backlog["max"] = max(backlog["max"], b); backlog["samples"] += 1
        except Exception as e:
            log("metrics sample failed: %s" % e)
threading.Thread(target=sampler, daemon=True).start()
def non2xx(m):
    return {k: v for k, v in m.items() if k.startswith("vertx_http_server_requests_total{") and re.search(r'code="[^2]', k)}
bad0 = non2xx(metrics())  # the answers before the run (/readyz while starting) are not the fleet's

# 1. ramp: every agent enrolled, then one interval so that every agent has beaten
limit = t0 + enroll_max
while sim_enrolled() < nodes and time.time() < limit and alive(sim): time.sleep(1)
enrolled_at = el()
if sim_enrolled() < nodes:
    print("FAIL: only %d of %d agents enrolled within ENROLL_MAX (%.0f s)" % (sim_enrolled(), nodes, enroll_max)); sys.exit(2)
log("all %d agents enrolled after %.0f s" % (nodes, enrolled_at))
time.sleep(interval * 1.2)
steady0 = el()
heap0 = heap_after_gc(pid); rss0 = rss(pid)
m0 = metrics(); hb0 = metric(m0, "mesh_node_heartbeats_total"); w0, lsn0 = pg_point(); s0 = time.time()
log("steady window from +%.0f s: heap after full GC %.0f MiB, RSS %.0f MiB" % (steady0, heap0, rss0))
end_at = steady0 + duration  # the steady window lasts DURATION; the driver then stops the simulator

# 2. the schedule, from the start of the steady window: policy changes every PERIOD, re-keys at REKEY_AT, relay moves at MOVE_AT
events = []
k = 1
while k * period + 3 * interval <= duration:
    events.append((k * period, "policy", k)); k += 1
if ops_pct > 0:
    events.append((rekey_at, "rekey", 0)); events.append((move_at, "move", 0))
events.sort()
policy_times, op_ids, op_answers = [], [], {}
change_windows = []  # (from, to) in seconds since t0: the sweep before the PUT until every agent acknowledged it
put_windows = []  # (sent, answered) in seconds since t0: each policy PUT
def reach(k):
    w0 = time.time() - t0
    before = sweep()
    # every grant changes its port and its direction: the rules of every node change
    pol = {"grants": [{"src": ["tag:t%d" % (2 * i + k % 2)], "dst": ["tag:t%d" % (2 * i + 1 - k % 2)], "ports": ["tcp/%d" % (1000 + i + 100 * k)]}
                      for i in range(50)]}
    # with the streams: one more grant whose port moves, so that every node's rules change
    if watch: pol["grants"].append({"src": ["10.20.0.0/16"], "dst": ["*"], "ports": ["tcp/%d" % (3001 + k)]})
    t = time.time(); st, body = req("PUT", "/v1/acl?team=soak&environment=prod", pol)
    if st != 200: fail.append("policy change %d: PUT answered %d" % (k, st)); return
    put_windows.append((t - t0, time.time() - t0))
    version = json.loads(body).get("version")
    deadline = t + 3 * interval
    pending, applied, moved = set(before), False, 0
    while pending and time.time() < deadline:
        now = sweep()
        # the replica's model has applied the change once any node's current ACL version moved; a node
        # whose version did not move is not concerned by the change and has reached it when it holds its current one
        moved = sum(1 for n, (a, c, _) in now.items() if n in before and c is not None and c > (before[n][1] or 0))
        applied = applied or moved > 0
        for n in list(pending):
            a, c, _ = now.get(n, (None, None, None))
            if applied and a is not None and c is not None and a >= c: pending.discard(n)
        if pending: time.sleep(1)
    took = time.time() - t
    change_windows.append((w0, time.time() - t0))
    if pending:
        fail.append("policy change %d (version %s): %d of %d agents had not acknowledged it after %.0f s (3 intervals)" % (k, version, len(pending), len(before), took))
        policy_times.append("v%s: NOT reached by %d agents" % (version, len(pending)))
    else:
        policy_times.append("v%s: %.1f s (%d agents' rules changed)" % (version, took, moved))
    log("policy change %d (version %s) at +%.0f s: %s" % (k, version, t - t0, policy_times[-1]))
def ops(kind):
    nodes_now = sweep()
    ids = sorted(nodes_now); random.Random(kind).shuffle(ids)
    chosen = ids[:max(1, int(len(ids) * ops_pct / 100))]
    t = time.time(); answers = {}
    for n in chosen:
        if kind == "rekey": st, body = req("POST", "/v1/nodes/%s/rekey" % n, {})
        else: st, body = req("PUT", "/v1/nodes/%s/relay" % n, {"relay": "r2" if nodes_now[n][2] == "r1" else "r1"})
        answers[st] = answers.get(st, 0) + 1
        if st == 202: op_ids.append(json.loads(body)["id"])
    op_answers[kind] = answers
    log("%s: %d asked in %.1f s at +%.0f s, answers %s" % (kind, len(chosen), time.time() - t, t - t0, answers))
for at, kind, k in events:
    wait = t0 + steady0 + at - time.time()
    if wait > 0: time.sleep(wait)
    if not alive(sim): fail.append("the simulator stopped early"); break
    if kind == "policy": reach(k)
    else: ops(kind)

# 3. the operations: every one succeeded (poll until none is open or the simulator ends)
def ops_state():
    return sql("SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE status IN ('pending', 'delivered')), "
               "count(*) FILTER (WHERE status NOT IN ('succeeded', 'pending', 'delivered')) FROM operations").split()
while time.time() < t0 + end_at:
    s, o, f = map(int, ops_state() or [0, 0, 0])
    if o == 0: break
    time.sleep(1)
wait = t0 + end_at - time.time()
if wait > 0: time.sleep(wait)

# 4. the end of the steady window
m1 = metrics(); hb1 = metric(m1, "mesh_node_heartbeats_total"); w1, lsn1 = pg_point(); s1 = time.time()
heap1 = heap_after_gc(pid); rss1 = rss(pid)
secs = s1 - s0
wal = int(sql("SELECT pg_wal_lsn_diff('%s', '%s')" % (lsn1, lsn0)) or 0)
stale = int(sql("SELECT count(*) FROM node_events WHERE type = 'node.stale'") or 0)
succeeded, open_, failed = map(int, ops_state() or [0, 0, 0])
asked = sum(sum(a.values()) for a in op_answers.values())
not_succeeded = asked - succeeded
stop.set()
# the end of the steady window ends the simulator: SIGTERM, and it prints its final summary
try: os.kill(sim, signal.SIGTERM)
except OSError: pass
deadline = time.time() + 60
while alive(sim) and time.time() < deadline: time.sleep(0.5)
summary = ""
try: summary = [l for l in open(os.path.join(work, "sim.out")).read().splitlines() if l.startswith("[sim] done")][-1]
except (OSError, IndexError): fail.append("no final summary from the simulator")
mm = re.search(r"latency p50 (\S+ ms) p99 (\S+ ms) p99\.9 (\S+ ms) max (\S+ ms), (.*?), errors: (.*?), peers received", summary)
sim_errors = mm.group(6) if mm else "unknown"
mh = re.search(r"(\d+) heartbeats sent, (\d+) accepted", summary)
sent, accepted = (int(mh.group(1)), int(mh.group(2))) if mh else (0, 0)
bad = {k: int(v - bad0.get(k, 0)) for k, v in non2xx(m1).items() if v > bad0.get(k, 0)}
non2xx = sum(bad.values())
if sim_errors != "none": fail.append("simulator errors: %s" % sim_errors)
if sent != accepted: fail.append("%d heartbeats sent but %d accepted" % (sent, accepted))
if non2xx: fail.append("%d non-2xx answers at the replica: %s" % (non2xx, bad))
if stale: fail.append("%d false stale events" % stale)
# no growth trend: the live heap after a full GC may not end more than 32 MiB or 10 % (the larger) above where
# it started (the change feed's bounded history and caches fill during the first minutes: +12 MiB at 10,000 agents)
if heap1 > heap0 + max(32, heap0 * 0.10): fail.append("heap after full GC grew from %.0f MiB to %.0f MiB" % (heap0, heap1))
if not_succeeded: fail.append("%d of %d operations not succeeded (%d still open, %d failed/expired; answers %s)" % (not_succeeded, asked, open_, failed, op_answers))

def row(k, v): print("  %-52s %s" % (k, v))
print("fleet soak: %d agents at %.0f s, one replica (external PostgreSQL), 50-grant policy over tag:t0..t99, agents over %s tags" % (nodes, interval, tags))
row("run", "%.0f s in all; all enrolled after %.0f s; steady window +%.0f..+%.0f s (%.0f s)" % (s1 - t0, enrolled_at, steady0, s1 - t0, secs))
row("heartbeats/s (mesh_node_heartbeats_total, steady)", "%.1f (expected %.1f)" % ((hb1 - hb0) / secs, nodes / interval))
row("latency (simulator, whole run incl. enrollment)", "p50 %s, p99 %s, p99.9 %s, max %s" % mm.group(1, 2, 3, 4) if mm else "unknown")
row("latency (simulator, from all enrolled to the end)", mm.group(5) if mm else "unknown")
steady_lat = []
try:
    for l in open(os.path.join(work, "sim.out")).read().splitlines():
        ms = re.match(r"\[sim\s+(\d+)s\].*\| p50 (\S+) ms p99 (\S+) ms p99\.9 (\S+) ms \|", l)
        if ms and steady0 + 10 <= int(ms.group(1)) <= s1 - t0: steady_lat.append((float(ms.group(2)), float(ms.group(3)), float(ms.group(4))))
except OSError: pass
changing = []
try:
    for l in open(os.path.join(work, "sim.out")).read().splitlines():
        ms = re.match(r"\[sim\s+(\d+)s\].*\| p50 (\S+) ms p99 (\S+) ms p99\.9 (\S+) ms \|", l)
        # a period (the 10 s before its line) that overlaps a change's window
        if ms and any(lo < int(ms.group(1)) and int(ms.group(1)) - 10 < hi for lo, hi in change_windows):
            changing.append(float(ms.group(3)))
except OSError: pass
if changing:
    row("p99 per 10 s while policy changes spread (simulator)", "%.0f-%.0f ms, %d of %d periods above 50 ms" % (
        min(changing), max(changing), sum(1 for x in changing if x > 50), len(changing)))
if steady_lat:
    row("latency per 10 s in the steady window (simulator)", "p50 %.2f-%.2f ms, p99 %.2f-%.2f ms, p99.9 %.2f-%.2f ms (%d periods)" % (
        min(a for a, _, _ in steady_lat), max(a for a, _, _ in steady_lat), min(b for _, b, _ in steady_lat), max(b for _, b, _ in steady_lat),
        min(c for _, _, c in steady_lat), max(c for _, _, c in steady_lat), len(steady_lat)))
row("heartbeats sent / accepted (simulator)", "%d / %d" % (sent, accepted))
row("errors (simulator; target none)", sim_errors)
row("non-2xx answers at the replica (target 0)", non2xx)
row("replica heap after full GC: start -> end", "%.0f MiB -> %.0f MiB (%+.0f MiB)" % (heap0, heap1, heap1 - heap0))
row("replica RSS: start -> end", "%.0f MiB -> %.0f MiB" % (rss0, rss1))
row("PostgreSQL row writes/s (nodes ins+upd)", "%.1f" % ((w1 - w0) / secs))
row("PostgreSQL WAL bytes/s", "%.0f (%.1f MiB over the window)" % (wal / secs, wal / 1048576))
row("write-behind backlog max (every %.0f s)" % sample, "%.0f (%d samples)" % (backlog["max"], backlog["samples"]))
row("false stale events (target 0)", stale)
row("operations asked / succeeded / not (target 0)", "%d / %d / %d %s" % (asked, succeeded, not_succeeded, op_answers))
row("policy change -> every agent acknowledged", "; ".join(policy_times) or "none scheduled (PERIOD too long for DURATION)")
if watch:
    # the simulator's delays from a change's commit (committed_at) to the agent applying it, per kind, in the
    # periods that saw a policy PUT and over the whole run; and what the replica spent on the streams
    delay_re = r"delay acl p50 (\S+) ms p90 (\S+) ms p99 (\S+) ms max (\S+) ms \(n (\d+)\) peers p50 (\S+) ms p90 (\S+) ms p99 (\S+) ms max (\S+) ms \(n (\d+)\)"
    try:
        for l in open(os.path.join(work, "sim.out")).read().splitlines():
            ms = re.match(r"\[sim\s+(\d+)s\]", l); md = re.search(delay_re, l)
            if ms and md and any(lo - 10 < int(ms.group(1)) and int(ms.group(1)) - 10 < hi + 10 for lo, hi in put_windows):
                row("stream delay in the period ending +%ss (acl; peers)" % ms.group(1), "acl p50 %s p90 %s p99 %s max %s ms (n %s); peers p50 %s p99 %s max %s ms (n %s)" % (
                    md.group(1), md.group(2), md.group(3), md.group(4), md.group(5), md.group(6), md.group(8), md.group(9), md.group(10)))
    except OSError: pass
    md = re.search(delay_re, summary)
    if md: row("stream delay, whole run (simulator)", "acl p50 %s p90 %s p99 %s max %s ms (n %s); peers p50 %s p90 %s p99 %s max %s ms (n %s)" % md.groups())
    mo = re.search(r"streams open (\d+), connects (\d+) \(opened (\d+)\), refused (.*?), ended (.*?), messages (\d+)", summary)
    if mo: row("streams (simulator, at the end)", "open %s, connects %s (opened %s), refused %s, ended %s, messages %s" % mo.groups())
    w = {k: metric(m1, k) for k in ("mesh_watch_streams", "mesh_watch_bytes_total", "mesh_watch_passes_total", "mesh_watch_checked_total",
                                    "mesh_watch_shared_parts_total", "mesh_watch_messages_total")}
    row("replica mesh_watch_* at the end", ", ".join("%s %.0f" % (k[len("mesh_watch_"):], v) for k, v in w.items()))
    row("policy PUT answered (s after sent)", ", ".join("%.2f" % (b - a) for a, b in put_windows))
print("simulator summary:\n  " + summary)
if fail:
    print("TARGETS MISSED:"); [print("  - " + f) for f in fail]; sys.exit(1)
print("all targets met")
PY
DRV=$!
wait "$DRV"; rc=$?
DRV=""
set -e
echo "service log ERROR lines: $(grep -c ERROR "$WORK/service.log" || true); simulator stderr lines: $(wc -l <"$WORK/sim.err")"
exit "$rc"
