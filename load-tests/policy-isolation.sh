#!/usr/bin/env bash
# Hostile policy work beside a steady fleet: do another team's heartbeats keep their latency?
#   1. starts one replica (external PostgreSQL at 127.0.0.1:5432, a fresh database); the team `calm`
#      gets the 50-grant policy over tag:t0..t99 and NODES simulated agents (`meshplane simulate`,
#      heartbeats every INTERVAL); the team `loud` gets 45 nodes of 32 tags each (the outsider's probe);
#   2. phase A, PHASE long: the fleet alone (the baseline);
#   3. phase B, PHASE long: the fleet, plus HOSTILE clients that post previews back to back (each its
#      own monitoring token of `loud`; they cycle through the probe's 63 KB document, which the pair
#      count refuses, the largest document the pair count accepts over `loud`, and a node preview over
#      the whole `calm` team with a 500-grant candidate), plus a policy change of `calm` every
#      CHANGE_EVERY (every grant's direction and port change: every node's rules);
#   4. prints the simulator's per-10 s heartbeat latency in each phase (p50, p99 per period: range and
#      median), the hostile requests' answers by kind and status, and the replica's CPU per phase.
# Usage: bash load-tests/policy-isolation.sh [JAR]
# Env:   NODES (5000) INTERVAL (5s) PHASE (60s) HOSTILE (8) CHANGE_EVERY (10) HTTP_PORT (18490)
#        WARMUP (30s): the hostile traffic runs this long before phase A, so that the JIT has compiled its
#          paths (0s: measure the first exposure, JIT included)
#        SERVICE_OPTS: extra JVM options for the replica. KEEP_DIR: copy the outputs there.
# Needs PostgreSQL at 127.0.0.1:5432 (user postgres), python3, curl. Loopback only; bounded waits.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
NODES="${NODES:-5000}"
INTERVAL="${INTERVAL:-5s}"
PHASE="${PHASE:-60s}"
HOSTILE="${HOSTILE:-8}"
CHANGE_EVERY="${CHANGE_EVERY:-10}"
WARMUP="${WARMUP:-30s}"
source "$SCRIPT_DIR/bench-lib.sh"
WORK="$(mktemp -d)"
DB="isolation_$$"
PORT="$(free_port "${HTTP_PORT:-18490}")"
PANEL="$(free_port $((PORT + 1)) "$PORT")"
CPORT="$(free_port 16190)"
log() { echo "[policy-isolation $(date +%T)] $*" >&2; }
cleanup() {
  if [[ -n "${KEEP_DIR:-}" ]]; then mkdir -p "$KEEP_DIR" && cp "$WORK"/*.out "$WORK"/*.log "$KEEP_DIR"/ 2>/dev/null || true; fi
  [[ -n "${HOST:-}" ]] && kill "$HOST" 2>/dev/null || true
  [[ -n "${SIM:-}" ]] && kill "$SIM" 2>/dev/null && wait "$SIM" 2>/dev/null || true
  [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB" >/dev/null
export MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" MESH_HTTP_HOST=127.0.0.1 MESH_HTTP_PORT="$PORT" MESH_PANEL_PORT="$PANEL" \
  MESH_CLUSTER_PORT="$CPORT" MESH_CLUSTER_MEMBERS="127.0.0.1:$CPORT" MESH_CLUSTER_HOST=127.0.0.1 MESH_CLUSTER_NAME="pi-$$" \
  MESH_KEYS_DIR="$WORK/keys" MESH_HEARTBEAT_INTERVAL="$INTERVAL" MESH_STALE_AFTER=1h
# shellcheck disable=SC2086
java -Xms512m -Xmx2g ${SERVICE_OPTS:-} -jar "$JAR" run >"$WORK/service.log" 2>&1 &
PID=$!
for _ in $(seq 1 120); do curl -sf "localhost:$PORT/readyz" >/dev/null && break; sleep 0.5; done
curl -sf "localhost:$PORT/readyz" >/dev/null || { log "the service did not get ready"; tail -20 "$WORK/service.log"; exit 1; }
mint() { java -jar "$JAR" token create --name "$1" --team "$2" --environment "$3" --surface "$4" --expires 1d 2>/dev/null | tail -1; }
ADMIN="$(mint bench '*' '*' admin)"
ENROLL="$(mint fleet calm prod enrollment)"
CALM_MON="$(mint calm-mon calm prod monitoring)"
: >"$WORK/loud-tokens.txt"
for i in $(seq 1 "$HOSTILE"); do mint "loud-$i" loud prod monitoring >>"$WORK/loud-tokens.txt"; done
BASE="http://127.0.0.1:$PORT"

python3 - "$BASE" "$ADMIN" <<'PY'
import base64, json, os, sys, urllib.request
base, admin = sys.argv[1], sys.argv[2]
def call(method, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method=method,
                                 headers={"Authorization": "Bearer " + admin, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status
policy = {"grants": [{"src": ["tag:t%d" % (2 * i)], "dst": ["tag:t%d" % (2 * i + 1)], "ports": ["tcp/%d" % (1000 + i)]} for i in range(50)]}
assert call("PUT", "/v1/acl?team=calm&environment=prod", policy) == 200
tags = ["tag:a", "tag:b"] + ["tag:t%d" % i for i in range(30)]
for i in range(45):
    assert call("POST", "/v1/nodes", {"name": "loud-%d" % i, "public_key": base64.b64encode(os.urandom(32)).decode(), "team": "loud",
                                      "environment": "prod", "tags": tags}) == 201
PY

start_s="$(date +%s)"
ramp=$(( NODES / 40 + 30 ))   # the most enrollment may take (about 85 enrollments/s here, with heartbeats)
total=$(( ramp + 4 * $(to_seconds "$INTERVAL") + $(to_seconds "$WARMUP") + 2 * $(to_seconds "$PHASE") + 15 ))
log "simulating $NODES agents of calm at $INTERVAL for up to ${total}s (enrollment, two intervals, then two phases of $PHASE)"
java -Xmx1g -jar "$JAR" simulate --coordinator "$BASE" --enroll-token "$ENROLL" --nodes "$NODES" --interval "$INTERVAL" \
  --duration "${total}s" --tags "tag:t0" --spread-tags 100 --concurrency 64 >"$WORK/sim.out" 2>"$WORK/sim.err" &
SIM=$!
for _ in $(seq 1 "$ramp"); do grep -q "enrolled $NODES/$NODES" "$WORK/sim.out" && break; sleep 1; done
grep -q "enrolled $NODES/$NODES" "$WORK/sim.out" || { log "not every agent enrolled in ${ramp}s"; tail -3 "$WORK/sim.out"; exit 1; }
sleep $(( 2 * $(to_seconds "$INTERVAL") ))   # every agent current before the baseline starts
cat >"$WORK/hostile.py" <<'PY'
import collections, json, sys, threading, time, urllib.error, urllib.request
base, admin, calm_mon, tokens_file, phase, every = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6])
tokens = [l.strip() for l in open(tokens_file) if l.strip()]
one = list("abcdefghijklmnopqrstuvwxyz0123456789")
names = one + ["x" + c for c in one]
probe = {"grants": [{"src": names[:63], "dst": ["*"], "ports": ["tcp/1"]} for _ in range(90)],
         "tests": [{"src": "tag:a", "deny": ["tag:b:icmp"] * 64} for _ in range(35)]}
# the most the pair count accepts over loud's 45 nodes: 98 probes x 45 x 45 = 198,450 pairs
accepted = {"grants": [{"src": names[:40], "dst": ["tag:t%d" % (g % 30)], "ports": ["tcp/%d" % (1 + g)]} for g in range(90)],
            "tests": [{"src": "tag:a", "deny": ["tag:b:icmp"] * 49} for _ in range(2)]}
big = {"grants": [{"src": ["tag:t%d" % (i % 100)], "dst": ["tag:t%d" % ((i * 7 + 3) % 100)], "ports": ["tcp/%d" % (1 + i % 60000)]} for i in range(500)]}
kinds = [("probe", "loud", {"policy": probe, "node": "loud-0"}), ("accepted", "loud", {"policy": accepted, "node": "loud-0"}),
         ("calm-node", "calm", {"policy": big, "src": "tag:t0", "dst": "tag:t1", "port": "tcp/1000"})]
counts = collections.Counter()
lat = collections.defaultdict(list)
lock = threading.Lock()
stop = time.time() + phase
def post(path, body, token, method="POST"):
    req = urllib.request.Request(base + path, data=json.dumps(body, separators=(",", ":")).encode(), method=method,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read(); code = r.status
    except urllib.error.HTTPError as e:
        e.read(); code = e.code
    except Exception as e:
        code = type(e).__name__
    return code, time.time() - t0
def client(i):
    k = i
    while time.time() < stop:
        kind, team, body = kinds[k % len(kinds)]
        k += 1
        token = tokens[i] if team == "loud" else calm_mon
        code, secs = post("/v1/acl/preview?team=%s&environment=prod" % team, body, token)
        with lock:
            counts[(kind, code)] += 1
            lat[(kind, code)].append(secs)
def changes():
    k = 1
    while time.time() < stop:
        pol = {"grants": [{"src": ["tag:t%d" % (2 * i + k % 2)], "dst": ["tag:t%d" % (2 * i + 1 - k % 2)], "ports": ["tcp/%d" % (1000 + i + 100 * k)]}
                          for i in range(50)]}
        code, secs = post("/v1/acl?team=calm&environment=prod", pol, admin, "PUT")
        with lock:
            counts[("policy-change", code)] += 1
            lat[("policy-change", code)].append(secs)
        k += 1
        time.sleep(max(0, every - secs))
threads = [threading.Thread(target=client, args=(i,)) for i in range(len(tokens))] + [threading.Thread(target=changes)]
for t in threads: t.start()
for t in threads: t.join()
for (kind, code), n in sorted(counts.items(), key=lambda x: (x[0][0], str(x[0][1]))):
    xs = sorted(lat[(kind, code)])
    print("| %s | %s | %d | %.0f ms | %.0f ms |" % (kind, code, n, xs[len(xs) // 2] * 1000, xs[-1] * 1000))
PY
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# CPU seconds per thread group of the replica (event loops, policy workers, Vert.x workers, Hazelcast, GC, the rest)
threads_cpu() {
  for t in /proc/"$PID"/task/*; do
    printf '%s\t%s\n' "$(cat "$t/comm")" "$(awk '{print $14 + $15}' "$t/stat")"
  done | python3 -c '
import re, sys
groups = {}
for line in sys.stdin:
    name, ticks = line.rstrip("\n").rsplit("\t", 1)
    g = ("event_loops" if name.startswith("vert.x-eventloo") else "policy_workers" if name.startswith("meshplane-polic")
         else "vertx_workers" if name.startswith("vert.x-worker") else "hazelcast" if name.startswith("hz.") else
         "GC" if re.match(r"(GC|G1|VM Thread)", name) else "JIT" if name.startswith("C1 ") or name.startswith("C2 ") else "other")
    groups[g] = groups.get(g, 0) + int(ticks)
print(" ".join("%s=%d" % (k, v) for k, v in sorted(groups.items())))'
}
if [[ "$(to_seconds "$WARMUP")" -gt 0 ]]; then
  # the same hostile traffic once before measuring: the JIT compiles its paths (about a third of a core for
  # the first half minute on first exposure), so the phases compare steady states
  log "warm-up: hostile traffic for $WARMUP, then two intervals of rest"
  python3 "$WORK/hostile.py" "$BASE" "$ADMIN" "$CALM_MON" "$WORK/loud-tokens.txt" "$(to_seconds "$WARMUP")" "$CHANGE_EVERY" >"$WORK/warmup.out"
  sleep $(( 2 * $(to_seconds "$INTERVAL") ))
fi
A0=$(( $(date +%s) - start_s )); CA0="$(cpu_of "$PID")"; TA0="$(threads_cpu)"
log "phase A (the fleet alone) from +${A0}s"
sleep "$(to_seconds "$PHASE")"
B0=$(( $(date +%s) - start_s )); CB0="$(cpu_of "$PID")"; TB0="$(threads_cpu)"
log "phase B (the fleet, $HOSTILE hostile preview clients, a policy change every ${CHANGE_EVERY}s) from +${B0}s"
python3 "$WORK/hostile.py" "$BASE" "$ADMIN" "$CALM_MON" "$WORK/loud-tokens.txt" "$(to_seconds "$PHASE")" "$CHANGE_EVERY" >"$WORK/hostile.out" &
HOST=$!
wait "$HOST" || true
HOST=""
B1=$(( $(date +%s) - start_s )); CB1="$(cpu_of "$PID")"; TB1="$(threads_cpu)"
log "phase B ended at +${B1}s; waiting for the simulator"
wait "$SIM" || log "the simulator exited with $?"
SIM=""
TICK="$(getconf CLK_TCK)"
echo "policy isolation: $NODES agents of calm at $INTERVAL beside hostile policy work; one replica (external PostgreSQL)"
python3 - "$WORK/sim.out" "$A0" "$B0" "$B1" "$CA0" "$CB0" "$CB1" "$TICK" <<'PY'
import re, statistics, sys
path, a0, b0, b1, ca0, cb0, cb1, tick = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
def ms(s):
    v, u = s.split()
    return float(v)
rows = []
for line in open(path):
    m = re.match(r"\[sim\s+(\d+)s\].*\| ([\d.]+) hb/s .*\| p50 ([\d.]+ ms) p99 ([\d.]+ ms) p99\.9 ([\d.]+ ms) \| errors: ([^|]*)\|", line)
    if m: rows.append((int(m.group(1)), float(m.group(2)), ms(m.group(3)), ms(m.group(4)), ms(m.group(5)), m.group(6).strip()))
def phase(name, lo, hi, cpu):
    # a period counts when it lies inside the phase (the simulator prints at the end of each 10 s)
    ps = [r for r in rows if lo + 10 <= r[0] <= hi]
    if not ps:
        print("| %s | no period |" % name); return
    p99 = [r[3] for r in ps]; p50 = [r[2] for r in ps]
    print("| %s | %d | %.0f | %.2f-%.2f ms | %.1f-%.1f ms (median %.1f) | %.1f ms | %s | %.2f cores |" % (
        name, len(ps), statistics.mean(r[1] for r in ps), min(p50), max(p50), min(p99), max(p99), statistics.median(p99),
        max(r[4] for r in ps), ", ".join(sorted(set(r[5] for r in ps))), cpu))
print("| phase | 10 s periods | heartbeats/s | p50 per period | p99 per period | worst p99.9 | errors | replica CPU |")
print("|---|---:|---:|---|---|---:|---|---:|")
phase("A: the fleet alone", a0, b0, (cb0 - ca0) / tick / max(1, b0 - a0))
phase("B: + hostile previews and policy changes", b0, b1, (cb1 - cb0) / tick / max(1, b1 - b0))
PY
python3 - "$TA0" "$TB0" "$TB1" "$A0" "$B0" "$B1" "$(getconf CLK_TCK)" <<'PY'
import sys
def parse(s): return {k: int(v) for k, v in (kv.split("=") for kv in s.split())}
a0, b0, b1 = parse(sys.argv[1]), parse(sys.argv[2]), parse(sys.argv[3])
ta, tb, tick = int(sys.argv[5]) - int(sys.argv[4]), int(sys.argv[6]) - int(sys.argv[5]), float(sys.argv[7])
print()
print("| replica threads | phase A (cores) | phase B (cores) |")
print("|---|---:|---:|")
for k in sorted(set(b1) | set(a0)):
    print("| %s | %.2f | %.2f |" % (k, (b0.get(k, 0) - a0.get(k, 0)) / tick / max(1, ta), (b1.get(k, 0) - b0.get(k, 0)) / tick / max(1, tb)))
PY
echo
echo "| hostile request | status | answered | median | max |"
echo "|---|---|---:|---:|---:|"
cat "$WORK/hostile.out"
echo "service log: $(grep -c ERROR "$WORK/service.log" || true) ERROR lines, $(grep -c -i 'blocked' "$WORK/service.log" || true) blocked-thread warnings"
