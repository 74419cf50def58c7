#!/usr/bin/env python3
"""Helper for bench-heartbeat.sh (standard library only).

  enroll.py enroll BASE_URL ADMIN_TOKEN COUNT OUT_FILE [--threads 8] [--prefix hb] [--tags N]
                  [--timeout-s 900]
      Enrolls COUNT nodes through POST /v1/nodes (team "bench", environment "prod", names
      PREFIX-<i>, public_key = base64 of 32 random bytes) with a pool of threads, each on its own
      keep-alive connection. Writes one "<node id> <agent token>" line per node to OUT_FILE.
      --tags N (default 0: no tags): node i is enrolled with the one tag "tag:t<i % N>".

  enroll.py beat BASE_URL NODES_FILE [--threads 8] [--timeout-s 600] [--versions-out FILE]
                 [--max-passes 6] [--settle-s 3] [--owners-out FILE]
      The warm-up pass: one heartbeat per node of NODES_FILE (the first request with each agent
      token pays for its signature check, later ones hit the token cache). NODES_FILE lines are
      "<id> <token>" (the node holds nothing: known {peers: 0, acl: 0}, so the answer carries the
      full peer set and rules) or "<id> <token> <peers version> <acl version>" (a --versions-out file:
      those versions are sent as known).
      With --versions-out, the node's versions are taken from each answer (peers.version,
      acl.version) and every later heartbeat of that node sends them as known, like an agent. One
      pass is not enough to leave every node current: a node's peers change when they send their own
      first heartbeat (endpoints, online), which for most nodes comes after theirs. So, after
      --settle-s seconds (the write-behind's flush and the change feed), more passes follow, each
      node sending its latest versions (answered with a delta, or unchanged), until a whole pass is
      answered unchanged for every node (peers and acl) or --max-passes passes were made. Then FILE
      gets one "<id> <token> <peers version> <acl version>" line per node: the versions of its last
      heartbeat, with which its next heartbeat is answered unchanged while nothing changes.

Both print a one-line JSON summary on stdout and exit 1 when any request did not answer 2xx
(201 for enroll, 200 for beat), or when the time limit ran out. beat's summary: "heartbeats",
"seconds", "per_second" of the first pass (the one that checks each token's signature),
"answer_bytes" (the answer bodies received, all passes), "settled" (with --versions-out: the last
pass was answered unchanged for every node), and per pass: heartbeats, seconds, answer bytes, and
how the answers' peers (full / delta / unchanged) and acl (rules / unchanged) came.
Every request has a 30 s socket timeout, and the whole run stops at --timeout-s. Only meant for
127.0.0.1.
"""
import argparse
import base64
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

def heartbeat_body(peers, acl):
    """The benchmark's heartbeat body (the same as heartbeat.lua's), with the node's known versions."""
    return json.dumps({
        "endpoints": ["198.51.100.7:41641"],
        "routes": ["10.1.0.0/24"],
        "telemetry": {"agent_version": "1.4.0", "uptime_s": 812},
        "known": {"peers": peers, "acl": acl},
    }, separators=(",", ":")).encode()


_local = threading.local()


def _conn(base):
    c = getattr(_local, "conn", None)
    if c is None:
        u = urllib.parse.urlsplit(base)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        _local.conn = c
    return c


def _post(base, path, token, body):
    """POST with one retry on a dropped keep-alive connection; returns (status, body bytes)."""
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    for attempt in (1, 2):
        c = _conn(base)
        try:
            c.request("POST", path, body=body, headers=headers)
            r = c.getresponse()
            return r.status, r.read()
        except (http.client.HTTPException, ConnectionError, OSError):
            c.close()
            _local.conn = None
            if attempt == 2:
                raise
    raise RuntimeError("unreachable")


def _run(items, fn, threads, deadline):
    ok = 0
    errors = []
    lock = threading.Lock()

    def one(item):
        nonlocal ok
        if time.monotonic() > deadline:
            raise TimeoutError("time limit reached")
        result = fn(item)
        with lock:
            if result is None:
                ok += 1
            else:
                errors.append(result)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(one, it) for it in items]
        for f in futures:
            try:
                f.result()
            except Exception as e:  # noqa: BLE001 - every failure is counted and reported
                with lock:
                    errors.append(repr(e))
    return ok, errors


def enroll(a):
    deadline = time.monotonic() + a.timeout_s
    results = [None] * a.count

    def one(i):
        doc = {
            "name": "%s-%d" % (a.prefix, i),
            "public_key": base64.b64encode(os.urandom(32)).decode(),
            "team": "bench",
            "environment": "prod",
        }
        if a.tags > 0:
            doc["tags"] = ["tag:t%d" % (i % a.tags)]
        body = json.dumps(doc).encode()
        status, raw = _post(a.base, "/v1/nodes", a.token, body)
        if status != 201:
            return "enroll %d: HTTP %d %s" % (i, status, raw[:200].decode(errors="replace"))
        doc = json.loads(raw)
        results[i] = (doc["node"]["id"], doc["credential"]["token"])
        return None

    t0 = time.monotonic()
    ok, errors = _run(range(a.count), one, a.threads, deadline)
    secs = time.monotonic() - t0
    with open(a.out, "w") as f:
        for r in results:
            if r is not None:
                f.write("%s %s\n" % r)
    print(json.dumps({"enrolled": ok, "errors": len(errors), "seconds": round(secs, 2),
                      "per_second": round(ok / secs, 1) if secs > 0 else None,
                      "first_errors": errors[:5]}))
    return 0 if not errors and ok == a.count else 1


def beat(a):
    deadline = time.monotonic() + a.timeout_s
    nodes = []  # [id, token, known peers, known acl]
    with open(a.nodes) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                nodes.append([parts[0], parts[1], 0, 0, None])
            elif len(parts) == 4:
                nodes.append([parts[0], parts[1], int(parts[2]), int(parts[3]), None])
    lock = threading.Lock()

    def one_pass():
        """One heartbeat per node with its known versions; returns the pass's figures."""
        st = {"heartbeats": 0, "answer_bytes": 0, "peers_full": 0, "peers_delta": 0, "peers_unchanged": 0,
              "acl_rules": 0, "acl_unchanged": 0, "other": 0}

        def one(node):
            status, raw = _post(a.base, "/v1/nodes/%s/heartbeat" % node[0], node[1], heartbeat_body(node[2], node[3]))
            if status != 200:
                return "beat %s: HTTP %d %s" % (node[0], status, raw[:200].decode(errors="replace"))
            doc = json.loads(raw)
            peers, acl = doc.get("peers"), doc.get("acl")
            if not isinstance(peers, dict) or not isinstance(acl, dict) or "version" not in peers or "version" not in acl:
                return "beat %s: answer without peers/acl versions: %s" % (node[0], raw[:200].decode(errors="replace"))
            kind_p = ("peers_unchanged" if peers.get("unchanged") is True else
                      "peers_full" if "items" in peers else "peers_delta" if "changed" in peers else "other")
            kind_a = "acl_unchanged" if acl.get("unchanged") is True else "acl_rules" if "rules" in acl else "other"
            # each node is handled by one thread per pass: its versions need no lock
            node[2], node[3] = int(peers["version"]), int(acl["version"])
            node[4] = doc.get("coordinator")
            with lock:
                st["heartbeats"] += 1
                st["answer_bytes"] += len(raw)
                st[kind_p] += 1
                st[kind_a] += 1
            return None

        t0 = time.monotonic()
        ok, errors = _run(nodes, one, a.threads, deadline)
        st["seconds"] = round(time.monotonic() - t0, 2)
        return ok, errors, st

    passes = []
    t0 = time.monotonic()
    ok, errors, st = one_pass()
    secs = time.monotonic() - t0
    passes.append(st)
    settled = None
    if a.versions_out and not errors:
        settled = st["peers_unchanged"] == len(nodes) and st["acl_unchanged"] == len(nodes)
        while not settled and len(passes) < a.max_passes and not errors:
            if time.monotonic() + a.settle_s > deadline:
                errors.append("time limit reached before the versions settled")
                break
            time.sleep(a.settle_s)
            _, errors, st = one_pass()
            passes.append(st)
            settled = st["peers_unchanged"] == len(nodes) and st["acl_unchanged"] == len(nodes)
    if a.versions_out:
        tmp = a.versions_out + ".tmp"
        with open(tmp, "w") as f:
            for n in nodes:
                f.write("%s %s %d %d\n" % (n[0], n[1], n[2], n[3]))
        os.replace(tmp, a.versions_out)
    if a.owners_out:
        tmp = a.owners_out + ".tmp"
        with open(tmp, "w") as f:
            for n in nodes:
                f.write("%s %s\n" % (n[0], n[4] or "-"))
        os.replace(tmp, a.owners_out)
    summary = {"heartbeats": ok, "errors": len(errors), "seconds": round(secs, 2),
               "per_second": round(ok / secs, 1) if secs > 0 else None,
               "answer_bytes": sum(p["answer_bytes"] for p in passes)}
    if a.versions_out:
        summary["settled"] = bool(settled)
    summary["passes"] = passes
    summary["first_errors"] = errors[:5]
    print(json.dumps(summary, separators=(",", ":")))
    return 0 if not errors and ok == len(nodes) and nodes else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("enroll")
    e.add_argument("base")
    e.add_argument("token")
    e.add_argument("count", type=int)
    e.add_argument("out")
    e.add_argument("--threads", type=int, default=8)
    e.add_argument("--prefix", default="hb")
    e.add_argument("--tags", type=int, default=0, help="node i gets the tag tag:t<i %% N> (0: no tags)")
    e.add_argument("--timeout-s", type=float, default=900)
    b = sub.add_parser("beat")
    b.add_argument("base")
    b.add_argument("nodes")
    b.add_argument("--threads", type=int, default=8)
    b.add_argument("--timeout-s", type=float, default=600)
    b.add_argument("--versions-out", default=None, help="write <id> <token> <peers version> <acl version> per node")
    b.add_argument("--owners-out", default=None, help="write <id> <coordinator hint or -> per node")
    b.add_argument("--max-passes", type=int, default=6, help="with --versions-out: at most this many passes")
    b.add_argument("--settle-s", type=float, default=3, help="with --versions-out: wait between passes")
    a = p.parse_args()
    return enroll(a) if a.cmd == "enroll" else beat(a)


if __name__ == "__main__":
    sys.exit(main())
