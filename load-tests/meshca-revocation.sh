#!/usr/bin/env bash
# A revocation's delay (issue 28): one replica on its embedded PostgreSQL, NODES simulated agents with --certificates and,
# unless WATCH=0, the watch stream (HTTP/2). Once every node holds a certificate, has applied the revocation list and
# (WATCH=1) streams, one node's certificate is revoked through the API (POST /v1/meshca/certificates/{serial}/revoke);
# the simulator counts every revocation list a node applies and when the latest one was (epoch ms), so the delay is
# from the revocation's request to the moment the last node applied the new list. Target: every node within the
# stream's delay when streaming (a few seconds), within one heartbeat interval without the stream.
# It prints a result block for RESULTS.md and exits 1 when a target is missed, 2 when setup failed.
#
# Usage: bash load-tests/meshca-revocation.sh [JAR]
# Env:   NODES (2000) WATCH (1) INTERVAL (30s) BUDGET (200: meshca.max_signatures_per_s, only to issue the certificates
#        of the setup sooner) TARGET (5s with the stream, INTERVAL without) SERVICE_XMX (1500m) SIM_XMX (1g) KEEP_DIR
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR_ARG="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
source "$SCRIPT_DIR/bench-lib.sh"
NODES="${NODES:-2000}"
WATCH="${WATCH:-1}"
BUDGET="${BUDGET:-200}"
INTERVAL_S="$(to_seconds "${INTERVAL:-30s}")"
TARGET_S="$(to_seconds "${TARGET:-$([[ "$WATCH" == 1 ]] && echo 5 || echo "$INTERVAL_S")}")"
source "$SCRIPT_DIR/meshca-lib.sh"
meshca_setup revocation
MESHCA_ENV=(MESH_HEARTBEAT_INTERVAL="${INTERVAL_S}s" MESH_STALE_AFTER=30m MESH_MESHCA_MAX_SIGNATURES_PER_S="$BUDGET")
replica_ports
start_replica 120
ENROLL="$(mint fleet ca prod enrollment)"
ADMIN="$(mint drill '*' '*' admin)"
[[ -n "$ENROLL" && -n "$ADMIN" ]] || { log "token create failed"; cat "$WORK/token.log" >&2; exit 2; }
SETUP_S=$((NODES / 50 + NODES / BUDGET + 3 * INTERVAL_S + 60))
WATCH_ARGS=()
[[ "$WATCH" == 1 ]] && WATCH_ARGS=(--watch)
log "replica ready at $BASE; $NODES agents, heartbeats every ${INTERVAL_S}s, watch stream $([[ "$WATCH" == 1 ]] && echo on || echo off)"
start_sim "$((SETUP_S + 3 * INTERVAL_S + 60))" "${WATCH_ARGS[@]}"
set +e
meshca_py "$NODES" "$WATCH" "$SIM" "$SETUP_S" "$WORK" "$BASE" "$ADMIN" "$INTERVAL_S" "$TARGET_S" <<'PY'
nodes, watch, sim, setup, work, base, admin, interval, target = sys.argv[1:10]
nodes, watch, sim, setup, interval, target = int(nodes), watch == "1", int(sim), float(setup), int(interval), float(target)
t0 = time.time()
def req(method, path, body=None):
    r = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + admin, "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=30) as a: return json.loads(a.read().decode() or "null")
def metric(name):
    with urllib.request.urlopen(base + "/metrics", timeout=15) as r: text = r.read().decode()
    return {k: float(v) for k, _, v in (l.rpartition(" ") for l in text.splitlines() if l.startswith(name))}
def sim_state():
    """(adopted, revocation lists applied, latest at ms) from the simulator's latest line"""
    m = sim_match(work, r"certificates adopted (\d+) .*?revocation lists applied (\d+) \(latest at (\d+) ms\)")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)
fail = []
# 1. every node holds a certificate and its first list, and streams
streams = 0
while True:
    adopted, applied, _ = sim_state()
    if watch: streams = metric("mesh_watch_streams").get("mesh_watch_streams", 0)
    if adopted >= nodes and applied >= nodes and (not watch or streams >= nodes): break
    if not alive(sim) or time.time() - t0 > setup:
        print("FAIL: setup: %d adopted, %d lists applied, %d streams of %d after %.0f s" % (adopted, applied, streams, nodes, time.time() - t0)); sys.exit(2)
    time.sleep(2)
# the counts settle: one more period line with the same count
time.sleep(11)
_, before, _ = sim_state()
log("all %d nodes hold a certificate (lists applied %d%s) at +%.0f s: revoking one" % (nodes, before, ", %d streams" % streams if watch else "", time.time() - t0))
items = req("GET", "/v1/meshca/certificates?limit=1")["items"]
serial = items[0]["serial"]
delay_before = metric("mesh_watch_delay")
sent = time.time()
req("POST", "/v1/meshca/certificates/%s/revoke" % serial, {"reason": "keyCompromise"})
answered = time.time()
# 2. every node applied the new list: the count moves by NODES (the revoked node too)
limit = answered + max(3 * interval, target) + 30
while time.time() < limit:
    _, applied, last = sim_state()
    if applied >= before + nodes: break
    time.sleep(1)
_, applied, last = sim_state()
delay_after = metric("mesh_watch_delay")
done = stop_sim(sim, work)
got = applied - before
slowest = last / 1000.0 - sent
if got < nodes: fail.append("only %d of %d nodes applied the revocation within %.0f s" % (got, nodes, limit - answered))
elif slowest > target: fail.append("the last node applied the revocation %.1f s after the request (target %.0f s)" % (slowest, target))
def row(k, v): print("  %-52s %s" % (k, v))
print("MeshCA revocation delay: 1 replica (embedded PostgreSQL), %d simulated agents with --certificates, heartbeats every %d s, watch stream %s"
      % (nodes, interval, "on (HTTP/2)" if watch else "off"))
row("revoked", "serial %s (keyCompromise); the request took %.0f ms" % (serial, (answered - sent) * 1000))
row("nodes that applied the new list", "%d of %d" % (got, nodes))
row("request to the last node's application (target %.0f s)" % target, "%.2f s" % slowest)
if watch:
    c = lambda d, k: d.get("mesh_watch_delay_seconds_" + k, 0)
    n = c(delay_after, "count") - c(delay_before, "count")
    row("stream delay (mesh_watch_delay over the change)", "%d writes, mean %.1f ms, max %.1f ms" % (n, (c(delay_after, "sum") - c(delay_before, "sum")) / max(1, n) * 1000,
        c(delay_after, "max") * 1000) if n else "no samples (%s)" % sorted(delay_after)[:4])
print("simulator: " + done)
if fail:
    print("TARGETS MISSED:"); [print("  - " + f) for f in fail]; sys.exit(1)
print("all targets met")
PY
rc=$?
set -e
meshca_footer
exit "$rc"
