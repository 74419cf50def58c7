#!/usr/bin/env bash
# The watch stream's replica-kill drill (issue 27): 3 replicas as separate JVMs (`meshplane run`, one Hazelcast
# cluster, each its own HTTP and panel port, owner hints on: MESH_ADVERTISE_URL) on one external PostgreSQL
# database, NODES simulated agents (`meshplane simulate --watch`, HTTP/2) started spread over the three, the
# policy of their team changing every CHURN (`--policy-churn`: new inbound rules for the nodes of the grants'
# tags) before, during and after the kill. Once every agent streams (the sum of the replicas' mesh_watch_streams
# is NODES) and KILL_AFTER has passed, replica VICTIM gets SIGKILL. It records:
#   - the time from the kill until the sum of the survivors' mesh_watch_streams is NODES again (target: RECOVERY_TARGET),
#   - the survivors' stream admissions after the kill (mesh_watch_opened_total, sampled every SAMPLE) against
#     watch.admit_per_second (ADMIT; the token bucket's burst is ADMIT too), and their
#     refusals (mesh_watch_refused_total by reason),
#   - the simulator's re-opens after a loss (p50/p99/max from loss to re-open) and its --final-check: after the run,
#     every agent sends one heartbeat with the versions it holds (stream + heartbeat answers) and an answer that is
#     not `unchanged` with a newer version counts it behind (target: 0 behind, 0 unanswered).
# It prints a result block for RESULTS.md and exits 1 when a target is missed, 2 when setup failed.
# Heartbeat answers repair a missed change too (one INTERVAL later at most): the longer INTERVAL, the more the
# final check says about the streams themselves.
#
# Usage: bash load-tests/watch-drill.sh [JAR]             (see load-tests/README.md, "watch-drill.sh")
# Env:   NODES (30000) INTERVAL (60s: agents' heartbeats, and the replicas' heartbeat.interval) CHURN (15s)
#        KILL_AFTER (30s: from every agent streaming to the kill) AFTER (120s: from the kill to the simulator's end)
#        ENROLL_MAX (NODES / 100 + 60 s) VICTIM (2: which replica, 1-3, gets SIGKILL) ADMIT (500: MESH_WATCH_ADMIT_PER_SECOND)
#        RECOVERY_TARGET (30s) SAMPLE (0.5s) TAGS (NODES / 100, at least 100) STREAMS_PER_CONNECTION (1000)
#        SOURCES (none: local addresses for the streams, e.g. 127.0.0.2,127.0.0.3) ADVERTISE (1; 0: no owner hints)
#        SERVICE_XMX (1500m per replica) SIM_XMX (2g) PG_POOL (8 per replica) CONCURRENCY (64) HTTP_PORT (18690)
#        KEEP_DIR (copy the logs there) MESHPLANE_CP (run from this class path instead of the jar)
# Needs PostgreSQL at 127.0.0.1:5432 (user postgres, trust), python3, curl, psql. Loopback only; every wait is bounded.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
source "$SCRIPT_DIR/bench-lib.sh"
NODES="${NODES:-30000}"
INTERVAL_S="$(to_seconds "${INTERVAL:-60s}")"
CHURN_S="$(to_seconds "${CHURN:-15s}")"
KILL_AFTER_S="$(to_seconds "${KILL_AFTER:-30s}")"
AFTER_S="$(to_seconds "${AFTER:-120s}")"
ENROLL_MAX_S="$(to_seconds "${ENROLL_MAX:-$((NODES / 100 + 60))}")"
RECOVERY_TARGET_S="$(to_seconds "${RECOVERY_TARGET:-30s}")"
VICTIM="${VICTIM:-2}"
ADMIT="${ADMIT:-500}"
TAGS="${TAGS:-$((NODES / 100 > 100 ? NODES / 100 : 100))}"
[[ "$VICTIM" =~ ^[123]$ ]] || { echo "VICTIM must be 1, 2 or 3" >&2; exit 2; }
(( CHURN_S >= 10 )) || { echo "CHURN must be at least 10s (the simulator's --policy-churn)" >&2; exit 2; }
# the simulator's --duration: enrollment, every stream's first heartbeat (within one interval), the wait before the
# kill and the time after it; the driver kills at a moment it measures, and fails when less than AFTER is left
SIM_DURATION_S=$((ENROLL_MAX_S + INTERVAL_S + 30 + KILL_AFTER_S + AFTER_S))
if [[ -n "${MESHPLANE_CP:-}" ]]; then MP=(java -cp "$MESHPLANE_CP" io.meshplane.Main); else
  [[ -f "$JAR" ]] || { echo "no jar at $JAR: run mvn -B -q package -DskipTests first" >&2; exit 2; }
  MP=(java -jar "$JAR"); fi
WORK="$(mktemp -d)"
DB="watchdrill_$$"
log() { echo "[watch-drill $(date +%T)] $*" >&2; }
HTTP=() PANEL=() CPORT=() PIDS=()
taken=()
for i in 0 1 2; do
  HTTP[i]="$(free_port "${HTTP_PORT:-18690}" "${taken[@]}")"; taken+=("${HTTP[i]}")
  PANEL[i]="$(free_port $((HTTP[i] + 1)) "${taken[@]}")"; taken+=("${PANEL[i]}")
  CPORT[i]="$(free_port 16390 "${taken[@]}")"; taken+=("${CPORT[i]}")
done
MEMBERS="127.0.0.1:${CPORT[0]},127.0.0.1:${CPORT[1]},127.0.0.1:${CPORT[2]}"
cleanup() {
  if [[ -n "${KEEP_DIR:-}" ]]; then mkdir -p "$KEEP_DIR" && cp "$WORK"/*.out "$WORK"/*.err "$WORK"/*.log "$KEEP_DIR"/ 2>/dev/null || true; fi
  if [[ -n "${DRV:-}" ]]; then kill "$DRV" 2>/dev/null || true; wait "$DRV" 2>/dev/null || true; fi
  if [[ -n "${SIM:-}" ]]; then kill "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true; fi
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
  done
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB" >/dev/null
export MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" MESH_PG_POOL_SIZE="${PG_POOL:-8}" MESH_PG_READ_POOL_SIZE=2 \
  MESH_HTTP_HOST=127.0.0.1 MESH_CLUSTER_HOST=127.0.0.1 MESH_CLUSTER_MEMBERS="$MEMBERS" MESH_CLUSTER_NAME="wdrill-$$" \
  MESH_KEYS_DIR="$WORK/keys" MESH_HEARTBEAT_INTERVAL="${INTERVAL_S}s" MESH_STALE_AFTER=30m MESH_WATCH_ADMIT_PER_SECOND="$ADMIT"
OPENS=(--add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED)
replica_env() { # the per-replica part of the environment
  echo MESH_HTTP_PORT="${HTTP[$1]}" MESH_PANEL_PORT="${PANEL[$1]}" MESH_CLUSTER_PORT="${CPORT[$1]}" \
    MESH_ADVERTISE_URL="$([[ "${ADVERTISE:-1}" != 0 ]] && echo "http://127.0.0.1:${HTTP[$1]}")"
}
# one replica first: it creates the schema and the signing keys the others read
start_replica() {
  env $(replica_env "$1") java -Xms256m -Xmx"${SERVICE_XMX:-1500m}" "${OPENS[@]}" "${MP[@]:1}" run >"$WORK/replica-$(($1 + 1)).log" 2>&1 &
  PIDS[$1]=$!
}
ready() { # ready INDEX SECONDS
  for _ in $(seq 1 $(($2 * 2))); do curl -sf "localhost:${HTTP[$1]}/readyz" >/dev/null && return 0; kill -0 "${PIDS[$1]}" 2>/dev/null || break; sleep 0.5; done
  log "replica $(($1 + 1)) did not get ready"; tail -20 "$WORK/replica-$(($1 + 1)).log" >&2; exit 2
}
start_replica 0; ready 0 90
start_replica 1; start_replica 2; ready 1 90; ready 2 90
for _ in $(seq 1 120); do grep -q "Members {size:3," "$WORK/replica-1.log" && break; sleep 0.5; done
grep -q "Members {size:3," "$WORK/replica-1.log" || { log "the three replicas did not form one cluster"; exit 2; }
mint() { env $(replica_env 0) "${MP[@]}" token create --name "$1" --team "$2" --environment "$3" --surface "$4" --expires 1d 2>/dev/null | tail -1; }
ADMIN="$(mint drill '*' '*' admin)"
ENROLL="$(mint fleet drill prod enrollment)"
BASES="http://127.0.0.1:${HTTP[0]},http://127.0.0.1:${HTTP[1]},http://127.0.0.1:${HTTP[2]}"
# the policy before the fleet enrolls (50 grants joining tag:t0..t99 in pairs, as fleet-soak.sh): the nodes of those tags get
# their peers at enrollment; the simulator's changes then turn the grants around and move their ports, so their rules change
policy='{"grants":['"$(python3 -c 'print(",".join("{\"src\":[\"tag:t%d\"],\"dst\":[\"tag:t%d\"],\"ports\":[\"tcp/%d\"]}" % (2*i, 2*i+1, 1000+i) for i in range(50)))')"']}'
code="$(curl -s -o "$WORK/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  --data-binary "$policy" "http://127.0.0.1:${HTTP[0]}/v1/acl?team=drill&environment=prod")"
[[ "$code" == 200 ]] || { log "policy PUT: $code $(cat "$WORK/put.json")"; exit 2; }
WATCH_ARGS=(--watch --watch-streams-per-connection "${STREAMS_PER_CONNECTION:-1000}")
[[ -z "${SOURCES:-}" ]] || WATCH_ARGS+=(--source-addresses "$SOURCES")
log "3 replicas ready (HTTP ${HTTP[*]}, admit $ADMIT/s, heap ${SERVICE_XMX:-1500m}); simulating $NODES agents over $TAGS tags at ${INTERVAL_S}s, policy change every ${CHURN_S}s, for at most ${SIM_DURATION_S}s"
java -Xmx"${SIM_XMX:-2g}" "${MP[@]:1}" simulate --coordinator "$BASES" --enroll-token "$ENROLL" --nodes "$NODES" \
  --interval "${INTERVAL_S}s" --duration "${SIM_DURATION_S}s" --tags "tag:t0" --spread-tags "$TAGS" --concurrency "${CONCURRENCY:-64}" \
  --policy-churn "${CHURN_S}s" --policy-token "$ADMIN" --final-check "${WATCH_ARGS[@]}" >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM=$!
T0="$(date +%s.%N)"
set +e
python3 - "$NODES" "$T0" "$SIM" "$SIM_DURATION_S" "$KILL_AFTER_S" "$AFTER_S" "$ENROLL_MAX_S" "$INTERVAL_S" "$VICTIM" "$ADMIT" \
  "$RECOVERY_TARGET_S" "$(to_seconds "${SAMPLE:-0.5}")" "$WORK" "${HTTP[*]}" "${PIDS[*]}" "${SERVICE_XMX:-1500m}" "$CHURN_S" <<'PY' &
import os, re, signal, sys, time, urllib.request
(nodes, t0, sim, sim_duration, kill_after, after, enroll_max, interval, victim, admit, target, sample, work, ports, pids, xmx, churn) = sys.argv[1:18]
nodes, sim, victim, admit = int(nodes), int(sim), int(victim) - 1, int(admit)
t0, sim_duration, kill_after, after, enroll_max, interval, target, sample = map(float, (t0, sim_duration, kill_after, after, enroll_max, interval, target, sample))
ports, pids = [int(p) for p in ports.split()], [int(p) for p in pids.split()]
survivors = [i for i in range(3) if i != victim]
def log(m): print("[watch-drill %s] %s" % (time.strftime("%H:%M:%S"), m), file=sys.stderr, flush=True)
def el(): return time.time() - t0
def alive(p):
    try: os.kill(p, 0); return True
    except OSError: return False
def metrics(i):
    """(streams, closed total, {refusal reason: count}, opened total, scrape start, scrape end) of replica i, or None when
    it does not answer (a scrape under load can take seconds: its start and end bound when the counters were read)"""
    start = time.time()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % ports[i], timeout=15) as r: text = r.read().decode()
    except Exception: return None
    streams, closed, refused, opened = 0.0, 0.0, {}, 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line: continue
        k, _, v = line.rpartition(" ")
        try: v = float(v)
        except ValueError: continue
        if k == "mesh_watch_streams": streams = v
        elif k == "mesh_watch_opened_total": opened = v
        elif k.startswith("mesh_watch_closed_total{"): closed += v
        elif k.startswith("mesh_watch_refused_total{"):
            m = re.search(r'reason="([^"]+)"', k)
            if m: refused[m.group(1)] = refused.get(m.group(1), 0) + v
    return streams, closed, refused, opened, start, time.time()
fail = []
seen = {}  # policy change k -> (seconds since t0 when its line was first seen, refused)
def scan():
    try:
        for l in open(os.path.join(work, "sim.out")).read().splitlines():
            m = re.match(r"\[sim\] policy change (\d+)(: version| refused)", l)
            if m and m.group(1) not in seen: seen[m.group(1)] = (el(), m.group(2) == " refused")
    except OSError: pass
def pause(secs):
    end = time.time() + secs
    while time.time() < end: scan(); time.sleep(min(0.5, max(0, end - time.time())))
def sim_enrolled():
    try:
        for l in reversed(open(os.path.join(work, "sim.out")).read().splitlines()):
            mm = re.search(r"enrolled (\d+)/", l)
            if mm: return int(mm.group(1))
    except OSError: pass
    return 0
# 1. every agent streams: the sum of the three replicas' open streams is NODES, or, when some enrollments failed for
# good (a timeout under load, then 409 for the name the first attempt had taken), every enrolled agent's once the
# simulator's count has not moved for 20 s
limit = t0 + enroll_max + interval + 30
enrolled, since = -1, time.time()
while True:
    m = [metrics(i) for i in range(3)]
    total = sum(x[0] for x in m if x)
    e = sim_enrolled()
    if e != enrolled: enrolled, since = e, time.time()
    if total >= nodes or (0 < enrolled <= total and time.time() - since >= 20): break
    if not alive(sim): print("FAIL: the simulator ended before every agent streamed (%d of %d)" % (total, nodes)); sys.exit(2)
    if time.time() > limit: print("FAIL: only %d of %d agents streaming after %.0f s (%d enrolled)" % (total, nodes, el(), enrolled)); sys.exit(2)
    pause(2)
streaming_at = el()
expected = int(total)
# (not a target of this drill: the drill is about the streams of the agents that enrolled; the table says how many)
log("all %d agents streaming after %.0f s (per replica %s); SIGKILL of replica %d in %.0f s" % (expected, streaming_at, [int(x[0]) for x in m], victim + 1, kill_after))
pause(kill_after)
before = [metrics(i) for i in range(3)]
if not before[victim]: print("FAIL: replica %d does not answer before the kill" % (victim + 1)); sys.exit(2)
if el() > sim_duration - after:
    print("FAIL: the kill would come %.0f s before the simulator's end, less than AFTER (%.0f s): raise ENROLL_MAX" % (sim_duration - el(), after)); sys.exit(2)
# 2. the kill, then the survivors' streams and admissions every SAMPLE seconds until the sum is NODES again
os.kill(pids[victim], signal.SIGKILL)
t_kill = time.time(); kill_at = t_kill - t0
log("replica %d killed at +%.0f s (it held %d streams)" % (victim + 1, kill_at, before[victim][0]))
samples = []  # (t since kill, {i: (streams, closed, refused)})
recovered = None
while time.time() < t_kill + after - 5:
    s = {i: metrics(i) for i in survivors}
    if any(v is None for v in s.values()):
        fail.append("a survivor did not answer /metrics at +%.1f s after the kill" % (time.time() - t_kill))
        time.sleep(sample); continue
    now = time.time() - t_kill
    samples.append((now, s))
    if recovered is None and sum(v[0] for v in s.values()) >= expected:
        recovered = now
        log("every agent streaming again %.1f s after the kill" % recovered)
    # after the recovery, a few more seconds of samples show the admissions ending
    if recovered is not None and now > recovered + 10: break
    scan(); time.sleep(sample)
lowest = min((sum(v[0] for v in s.values()) for _, s in samples), default=0)
# the admissions of each survivor after the kill, from its mesh_watch_opened_total: between two scrapes a and b the counter
# moved by what was admitted between a's start and b's end at most, so the window counted is that long (a slow scrape
# widens the window, never makes an excess that was not there)
adm = {}
for i in survivors:
    pts = [(s[i][4] - t_kill, s[i][5] - t_kill, s[i][3]) for t, s in samples]  # (scrape start, scrape end, opened)
    base = before[i][3]
    opened = pts[-1][2] - base if pts else 0
    # the most admitted in any window between two samples, beyond admit per second times its length: the token bucket
    # allows a burst of ADMIT on top (it is full before the kill)
    excess, peak = 0.0, 0.0
    for a in range(len(pts)):
        for b in range(a + 1, len(pts)):
            dt = pts[b][1] - pts[a][0]
            excess = max(excess, pts[b][2] - pts[a][2] - admit * dt)
            if 0.9 <= dt < 1.6: peak = max(peak, (pts[b][2] - pts[a][2]) / dt)
    first = pts[0][2] - base if pts else 0  # admitted between the kill and the end of the first scrape
    excess = max(excess, first - admit * (pts[0][1] if pts else 0))
    refused = {k: int(v - before[i][2].get(k, 0)) for k, v in samples[-1][1][i][2].items() if v > before[i][2].get(k, 0)} if samples else {}
    adm[i] = (int(opened), peak, excess, refused)
    if excess > admit * 1.05 + 10:
        fail.append("replica %d admitted %.0f streams more than %d/s allows (burst %d)" % (i + 1, excess, admit, admit))
if recovered is None: fail.append("the survivors did not hold all %d streams within %.0f s after the kill" % (expected, after - 5))
elif recovered > target: fail.append("every agent streamed again only %.1f s after the kill (target %.0f s)" % (recovered, target))
# 3. the simulator's end: its final check
deadline = t0 + sim_duration + 60 + 90 + nodes / 100
while alive(sim) and time.time() < deadline: pause(1)
if alive(sim): fail.append("the simulator did not end in time"); os.kill(sim, signal.SIGTERM); time.sleep(10)
out = open(os.path.join(work, "sim.out")).read().splitlines()
check = next((l for l in out if l.startswith("[sim] final check:") and "checked" in l), "")
done = next((l for l in out if l.startswith("[sim] done")), "")
scan()
# policy changes stored before the kill, while the agents came back, after (by when the driver saw their line)
end_recovery = kill_at + (recovered if recovered is not None else after)
phases = [sum(1 for t, r in seen.values() if not r and lo <= t < hi) for lo, hi in ((0, kill_at), (kill_at, end_recovery), (end_recovery, 1e12))]
refused_changes = sum(1 for _, r in seen.values() if r)
mc = re.search(r"(\d+) of (\d+) enrolled nodes checked .*?, (\d+) current, (\d+) behind \(peers (\d+), acl (\d+)\), (\d+) unanswered; streaming (\d+), not streaming (\d+)", check)
if not mc: fail.append("no final check line from the simulator")
else:
    if int(mc.group(4)) or int(mc.group(7)): fail.append("final check: %s behind, %s unanswered" % (mc.group(4), mc.group(7)))
    if mc.group(1) != mc.group(2): fail.append("final check: %s of %s enrolled agents checked" % (mc.group(1), mc.group(2)))
mr = re.search(r"re-opened after a loss (\d+) p50 (\S+ ms|-) p99 (\S+ ms|-) max (\S+ ms|-)", done)
me = re.search(r", errors: (.*?), peers received", done)
def row(k, v): print("  %-50s %s" % (k, v))
print("watch drill: 3 replicas (separate JVMs, -Xmx%s, admit %d/s), %d agents streaming over HTTP/2, replica %d SIGKILLed" % (xmx, admit, expected, victim + 1))
row("every agent streaming (sum of mesh_watch_streams)", "%d of %d agents, +%.0f s after the simulator's start" % (expected, nodes, streaming_at))
row("streams per replica before the kill", ", ".join("r%d %d" % (i + 1, before[i][0]) for i in range(3)))
row("killed (SIGKILL)", "replica %d at +%.0f s, %.0f s after all streamed" % (victim + 1, kill_at, kill_at - streaming_at))
row("lowest sum of the survivors' streams", "%d" % lowest)
row("every agent streaming again (target %.0f s)" % target, "%.1f s after the kill" % recovered if recovered is not None else "NOT within %.0f s" % (after - 5))
for i in survivors:
    opened, peak, excess, refused = adm[i]
    row("replica %d admissions after the kill" % (i + 1), "%d opened, peak %.0f/s (1 s windows), most above %d/s x time: %.0f (burst %d)" % (opened, peak, admit, excess, admit))
    row("replica %d refusals after the kill" % (i + 1), " ".join("%s=%d" % kv for kv in sorted(refused.items())) or "none")
row("simulator: streams re-opened after a loss", "%s, loss to re-open p50 %s p99 %s max %s" % mr.groups() if mr else "unknown")
row("policy changes stored (every %s s)" % churn, "%d before the kill, %d while the agents came back, %d after; %d refused" % (phases[0], phases[1], phases[2], refused_changes))
if phases[0] == 0 or phases[2] == 0: fail.append("policy changes: %d before the kill, %d after the recovery (both must be some)" % (phases[0], phases[2]))
row("heartbeat errors (simulator, whole run)", me.group(1) if me else "unknown")
row("final check (target 0 behind, 0 unanswered)", "%s checked, %s current, %s behind (peers %s, acl %s), %s unanswered; not streaming %s" % (
    mc.group(1), mc.group(3), mc.group(4), mc.group(5), mc.group(6), mc.group(7), mc.group(9)) if mc else "none")
print("simulator final check:\n  " + check)
if fail:
    print("TARGETS MISSED:"); [print("  - " + f) for f in fail]; sys.exit(1)
print("all targets met")
PY
DRV=$!
wait "$DRV"; rc=$?
DRV=""
set -e
echo "replica log ERROR lines: $(cat "$WORK"/replica-*.log | grep -c ERROR || true); simulator stderr lines: $(wc -l <"$WORK/sim.err")"
exit "$rc"
