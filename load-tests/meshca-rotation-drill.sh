#!/usr/bin/env bash
# MeshCA's root rotation drill (issue 28): one replica on its embedded PostgreSQL (meshca.auto_rotate off), NODES simulated
# agents with --certificates --skew-clocks: each node's clock skewed by a fixed amount within ±5 min (SimPairs.skewMs) in its
# own certificate handling (renewal due, expiry, verification: AgentPki) and in the pair checks. Once every node holds a
# certificate, a root rotation is started (POST /v1/meshca/rotations {kind: root}); right after, OFFLINE of the fleet is
# taken offline (the simulator's --control file: no heartbeats, each keeps its certificate and bundle; the replica marks
# them stale after STALE, and a rotation's preview does not wait for stale nodes). The rotation is advanced through every
# phase (staged -> distributing -> issuing -> retired) through the API as soon as its preview (GET /v1/meshca/rotation)
# says ready. Throughout, the simulator checks samples of pairs of online nodes (A's certificate and chain under B's
# bundle at B's skewed clock, AgentPki.verify). DWELL after the retirement the offline nodes come back: holding a
# certificate from the retired authority and the old bundle, each must recover on its own (the answer brings the new
# bundle and renew {reason: issuer_rotated}; its next heartbeat sends a CSR). The simulator reports how many returned
# nodes are current (the bundle and issuer their shard's online nodes hold, the certificate valid at their own clock)
# and the longest time from a return to current; the pairs involving them (once current) are counted apart.
# Targets: 0 failed pairs among online nodes at every phase; every returned node current within two heartbeat
# intervals + NODES x OFFLINE / BUDGET s of its return; 0 failed pairs involving returned nodes after they recovered.
# It prints a result block for RESULTS.md and exits 1 when a target is missed, 2 when setup failed.
#
# Usage: bash load-tests/meshca-rotation-drill.sh [JAR]
# Env:   NODES (2000) INTERVAL (15s) BUDGET (200) DWELL (30s: the least time spent in each phase, for the pair samples)
#        OFFLINE (0.05: the fraction taken offline; 0: none) STALE (4 x INTERVAL, at least 60s: heartbeat.stale_after)
#        PHASE_MAX (NODES / BUDGET + 4 x INTERVAL + STALE + 60 s: the longest wait for a preview to be ready)
#        SERVICE_XMX SIM_XMX KEEP_DIR
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR_ARG="${1:-$SCRIPT_DIR/../target/meshplane.jar}"
source "$SCRIPT_DIR/bench-lib.sh"
NODES="${NODES:-2000}"
INTERVAL_S="$(to_seconds "${INTERVAL:-15s}")"
BUDGET="${BUDGET:-200}"
DWELL_S="$(to_seconds "${DWELL:-30s}")"
OFFLINE="${OFFLINE:-0.05}"
STALE_S="$(to_seconds "${STALE:-$((4 * INTERVAL_S > 60 ? 4 * INTERVAL_S : 60))}")"
PHASE_MAX_S="$(to_seconds "${PHASE_MAX:-$((NODES / BUDGET + 4 * INTERVAL_S + STALE_S + 60))}")"
source "$SCRIPT_DIR/meshca-lib.sh"
meshca_setup rotation
MESHCA_ENV=(MESH_HEARTBEAT_INTERVAL="${INTERVAL_S}s" MESH_STALE_AFTER="${STALE_S}s" MESH_MESHCA_MAX_SIGNATURES_PER_S="$BUDGET" MESH_MESHCA_AUTO_ROTATE=false)
replica_ports
start_replica 120
ENROLL="$(mint fleet ca prod enrollment)"
ADMIN="$(mint drill '*' '*' admin)"
[[ -n "$ENROLL" && -n "$ADMIN" ]] || { log "token create failed"; cat "$WORK/token.log" >&2; exit 2; }
SETUP_S=$((NODES / 25 + NODES / BUDGET + 2 * INTERVAL_S + 120)) # not measured: a bound for a loaded machine
log "replica ready at $BASE; $NODES agents, heartbeats every ${INTERVAL_S}s, budget $BUDGET/s, $OFFLINE of them offline during the rotation"
: >"$WORK/control"
start_sim "$((SETUP_S + 5 * (PHASE_MAX_S + DWELL_S) + 4 * INTERVAL_S + 180))" --skew-clocks --control "$WORK/control"
set +e
meshca_py "$NODES" "$SIM" "$SETUP_S" "$WORK" "$BASE" "$ADMIN" "$INTERVAL_S" "$DWELL_S" "$PHASE_MAX_S" "$OFFLINE" "$BUDGET" "$STALE_S" <<'PY'
nodes, sim, setup, work, base, admin, interval, dwell, phase_max, offline, budget, stale = sys.argv[1:13]
nodes, sim, setup, interval, dwell, phase_max, offline, budget, stale = int(nodes), int(sim), float(setup), int(interval), float(dwell), float(phase_max), float(offline), int(budget), int(stale)
t0 = time.time()
def req(method, path, body=None):
    r = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + admin, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=60) as a: return a.status, json.loads(a.read().decode() or "null")
    except urllib.error.HTTPError as e: return e.code, json.loads(e.read().decode() or "null")
PRESENCE = r"offline (\d+), returned (\d+) current (\d+)(?: \(the last ([\d.]+) s after its return\))?, pairs with returned nodes (\d+) failed (\d+)"
def sim_state():
    """{adopted, checked, failed, why, offline, returned, current, last_s, rchecked, rfailed} from the simulator's latest line"""
    m = sim_match(work, r"certificates adopted (\d+) .*?pairs checked (\d+) failed (\d+)(?: \(latest: (.*)\))?")
    s = dict(adopted=0, checked=0, failed=0, why="", offline=0, returned=0, current=0, last_s=None, rchecked=0, rfailed=0)
    if m: s.update(adopted=int(m.group(1)), checked=int(m.group(2)), failed=int(m.group(3)), why=m.group(4) or "")
    p = re.search(PRESENCE, m.string) if m else None
    if p: s.update(offline=int(p.group(1)), returned=int(p.group(2)), current=int(p.group(3)), last_s=float(p.group(4)) if p.group(4) else None,
                   rchecked=int(p.group(5)), rfailed=int(p.group(6)))
    return s
def wait_line():
    """until the simulator prints its next line (every 10 s): the counts then cover the time before"""
    n = len(sim_lines(work))
    for _ in range(30):
        time.sleep(1)
        if len(sim_lines(work)) > n: return
def control(command):
    """appends a command to the simulator's control file; its answer line ([sim] control: ...) within 10 s"""
    n = len(sim_lines(work))
    with open(os.path.join(work, "control"), "a") as f: f.write(command + "\n")
    for _ in range(50):
        time.sleep(0.2)
        got = [l for l in sim_lines(work)[n:] if l.startswith("[sim] control:")]
        if got: log(got[-1]); return got[-1]
    return ""
while True:
    if sim_state()["adopted"] >= nodes: break
    if not alive(sim) or time.time() - t0 > setup: print("FAIL: setup: %d of %d hold a certificate" % (sim_state()["adopted"], nodes)); sys.exit(2)
    time.sleep(2)
log("all %d hold a certificate at +%.0f s; pairs before the rotation for %.0f s" % (nodes, time.time() - t0, dwell))
rows, fail = [], []
def phase_row(name, since, ready_s, note=""):
    wait_line()
    s = sim_state()
    c, f, rc, rf = s["checked"] - since["checked"], s["failed"] - since["failed"], s["rchecked"] - since["rchecked"], s["rfailed"] - since["rfailed"]
    rows.append((name, ready_s, c, f, rc, rf, note, s["why"] if f + rf else ""))
    if f: fail.append("%d failed pairs among online nodes during phase %s (%s)" % (f, name, s["why"]))
    if rf: fail.append("%d failed pairs with returned nodes during %s (%s)" % (rf, name, s["why"]))
    return s
since = sim_state()
time.sleep(dwell)
since = phase_row("before (no rotation)", since, None)
code, r = req("POST", "/v1/meshca/rotations", {"kind": "root"})
if code != 201: print("FAIL: starting the rotation: %d %s" % (code, r)); sys.exit(2)
rid, phase = r["id"], r["phase"]
log("rotation %s started: %s" % (rid, phase))
offline_line, taken = "", 0
if offline > 0:
    offline_line = control("offline %s" % offline)
    m = re.search(r": (\d+) nodes taken offline", offline_line)
    taken = int(m.group(1)) if m else 0
    if taken == 0: fail.append("no node went offline (%r)" % offline_line)
while True:
    entered = time.time()
    time.sleep(dwell)
    # the preview: ready when every online node holds what the next phase needs (stale ones counted apart)
    ready_at, p = None, {}
    while time.time() - entered < dwell + phase_max:
        code, st = req("GET", "/v1/meshca/rotation")
        p = (st or {}).get("preview") or {}
        if p.get("ready"): ready_at = time.time(); break
        time.sleep(2)
    ready_s = (ready_at - entered) if ready_at else None
    since = phase_row(phase, since, ready_s, "online %s, stale behind %s" % (p.get("online"), p.get("stale_behind")) if p.get("online") is not None else "")
    if ready_at is None:
        fail.append("phase %s: the preview was not ready within %.0f s (behind %s, holdouts %s)" % (phase, dwell + phase_max, p.get("behind"), p.get("holdouts")))
        break
    code, r = req("POST", "/v1/meshca/rotations/%s/advance" % rid, {"phase": phase})
    if code != 200: fail.append("advance from %s: %d %s" % (phase, code, r)); break
    log("advanced %s -> %s (ready %.0f s after entering %s; online %s, stale behind %s)" % (phase, r["phase"], ready_s, phase, p.get("online"), p.get("stale_behind")))
    phase = r["phase"]
    if phase == "retired":
        time.sleep(dwell)
        since = phase_row("retired (+%d s)" % dwell, since, None)
        break
recovered = None
if taken and phase == "retired":
    # the offline nodes come back: each must be current (new bundle, a certificate from the new authority) on its own
    target = 2 * interval + nodes * offline / budget
    back = control("online")
    returned_at = time.time()
    m = re.search(r": (\d+) nodes back", back)
    count = int(m.group(1)) if m else 0
    while time.time() - returned_at < target + 4 * interval + 60:
        s = sim_state()
        if s["returned"] >= count and s["current"] >= count: break
        time.sleep(2)
    wait_line()
    s = sim_state()
    recovered = (count, s["current"], s["last_s"], target)
    if count < taken: fail.append("only %d of %d offline nodes came back" % (count, taken))
    if s["current"] < count: fail.append("%d of %d returned nodes current (a bundle and a certificate from the new authority) within %.0f s" % (s["current"], count, time.time() - returned_at))
    elif s["last_s"] is None or s["last_s"] > target: fail.append("the last returned node was current %s s after its return (target %.1f s)" % (s["last_s"], target))
    since = phase_row("returned: recovering", since, None)
    time.sleep(dwell + 2 * interval)
    since = phase_row("returned: after recovery (+%d s)" % (dwell + 2 * interval), since, None)
done = stop_sim(sim, work)
print("MeshCA root rotation drill: 1 replica (embedded PostgreSQL, auto_rotate off, stale_after %d s), %d simulated agents with --certificates, "
      "heartbeats every %d s, budget %d/s; every node's clock skewed within ±5 min (its own certificate handling and the pair checks)" % (stale, nodes, interval, budget))
print("  offline during the rotation: %s" % (("%d nodes (%.1f %%) from right after the rotation started until %d s after the retirement" % (taken, offline * 100, dwell)) if taken else "none"))
for name, ready_s, c, f, rc, rf, note, why in rows:
    print("  %-36s %s pairs checked %6d, failed %d%s%s%s" % (name, ("ready after %5.0f s," % ready_s) if ready_s is not None else "%19s" % "", c, f,
        "; with returned nodes %d, failed %d" % (rc, rf) if rc or rf or name.startswith("returned") else "", (" [" + note + "]") if note and ready_s is not None else "",
        (" (" + why + ")") if why else ""))
if recovered:
    count, current, last_s, target = recovered
    print("  returned nodes: %d back, %d current (new bundle, certificate from the new authority), the last %s s after its return (target %.1f s: 2 x %d s + %d x %s / %d)"
          % (count, current, last_s, target, interval, nodes, offline, budget))
print("simulator: " + done)
if fail:
    print("TARGETS MISSED:"); [print("  - " + x) for x in fail]; sys.exit(1)
print("all targets met")
PY
rc=$?
set -e
meshca_footer
exit "$rc"
