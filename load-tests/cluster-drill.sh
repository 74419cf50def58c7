#!/usr/bin/env bash
# The cluster drill at a chosen size (issue 17): three replicas as separate JVMs on one PostgreSQL,
# NODES nodes heartbeating through all three, then (a) SIGKILL of one replica, (b) a real restart of
# the drill's own PostgreSQL server (down for PG_DOWN_MS), (c) a replacement replica, (d) a rolling
# restart with SIGTERM. It prints what was lost
# (target: nothing), the requests that failed, the database's convergence time and the stale events.
# The same code runs in CI, short (src/test/java/io/meshplane/drill/ClusterDrillTest.java: 60 nodes).
#
# Usage: bash load-tests/cluster-drill.sh
# Env:   NODES (1000) BEAT_MS (1000) PHASE_MS (15000: load between the faults) PG_DOWN_MS (10000)
# Needs: Maven (the drill runs its own PostgreSQL from the embedded binaries). Loopback only;
#        every wait is bounded (the test times out after 10 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q verify -Dtest=ClusterDrillTest -Dsurefire.failIfNoSpecifiedTests=false \
  -Ddrill.nodes="${NODES:-1000}" -Ddrill.beat_ms="${BEAT_MS:-1000}" -Ddrill.phase_ms="${PHASE_MS:-15000}" \
  -Ddrill.pg_down_ms="${PG_DOWN_MS:-10000}" || status=$?
sed -n '/^cluster drill:/,/^  total/p' target/surefire-reports/io.meshplane.drill.ClusterDrillTest-output.txt 2>/dev/null | head -20
exit "${status:-0}"
