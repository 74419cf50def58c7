#!/usr/bin/env python3
"""Helper for bench-heartbeat.sh (standard library only).

  enroll.py enroll BASE_URL ADMIN_TOKEN COUNT OUT_FILE [--threads 8] [--prefix hb] [--timeout-s 900]
      Enrolls COUNT nodes through POST /v1/nodes (team "bench", environment "prod", names
      PREFIX-<i>, public_key = base64 of 32 random bytes) with a pool of threads, each on its own
      keep-alive connection. Writes one "<node id> <agent token>" line per node to OUT_FILE.

  enroll.py beat BASE_URL NODES_FILE [--threads 8] [--timeout-s 600]
      Sends exactly one heartbeat per node of NODES_FILE (the warm-up pass: the first request with
      each agent token pays for its signature check, later ones hit the token cache).

Both print a one-line JSON summary on stdout and exit 1 when any request did not answer 2xx
(201 for enroll, 200 for beat), or when the time limit ran out. Every request has a 30 s socket
timeout, and the whole pass stops at --timeout-s. Only meant for 127.0.0.1.
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

HEARTBEAT_BODY = json.dumps({
    "endpoints": ["198.51.100.7:41641"],
    "routes": ["10.1.0.0/24"],
    "telemetry": {"agent_version": "1.4.0", "uptime_s": 812},
    "known": {"peers": 0, "acl": 0},
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
        body = json.dumps({
            "name": "%s-%d" % (a.prefix, i),
            "public_key": base64.b64encode(os.urandom(32)).decode(),
            "team": "bench",
            "environment": "prod",
        }).encode()
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
    nodes = []
    with open(a.nodes) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                nodes.append(parts)

    def one(node):
        status, raw = _post(a.base, "/v1/nodes/%s/heartbeat" % node[0], node[1], HEARTBEAT_BODY)
        if status != 200:
            return "beat %s: HTTP %d %s" % (node[0], status, raw[:200].decode(errors="replace"))
        return None

    t0 = time.monotonic()
    ok, errors = _run(nodes, one, a.threads, deadline)
    secs = time.monotonic() - t0
    print(json.dumps({"heartbeats": ok, "errors": len(errors), "seconds": round(secs, 2),
                      "per_second": round(ok / secs, 1) if secs > 0 else None,
                      "first_errors": errors[:5]}))
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
    e.add_argument("--timeout-s", type=float, default=900)
    b = sub.add_parser("beat")
    b.add_argument("base")
    b.add_argument("nodes")
    b.add_argument("--threads", type=int, default=8)
    b.add_argument("--timeout-s", type=float, default=600)
    a = p.parse_args()
    return enroll(a) if a.cmd == "enroll" else beat(a)


if __name__ == "__main__":
    sys.exit(main())
