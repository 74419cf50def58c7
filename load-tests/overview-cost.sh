#!/usr/bin/env bash
# What one refresh of the dashboard's overview costs PostgreSQL at fleet size, and what the series
# sampler adds (deterministic figures: rows read and buffers touched, plus the execution time, the
# median of RUNS runs). Builds a scratch database with the jar's own migrations and fills `nodes` with
# NODES nodes: 90 % in big/prod and 10 % in small/prod (interleaved), 2 % of them stale (last heartbeat an hour ago)
# and 1 % pending (never heard), then runs each statement the overview sends, as the service sends it
# (the boundary predicate of Sql.inScope, the stale cutoff of heartbeat.stale_after), under
# EXPLAIN (ANALYZE, BUFFERS):
#   - per refresh of an open overview page (every 5 s): the node counts and the stale list of the
#     caller's boundary, the names of up to 5 drifting nodes (point reads by key);
#   - per panel.series_interval (10 s), on the oldest replica only: the mesh's node counts.
# The series request itself reads no PostgreSQL (SeriesCostBench measures its CPU).
#
#   mvn -q package -DskipTests && bash load-tests/overview-cost.sh target/meshplane.jar    # NODES=100000 RUNS=7
#
# Needs the machine's PostgreSQL at 127.0.0.1:5432 (user postgres, trust). Drops and recreates the
# database `overviewcost`.
set -euo pipefail
JAR=${1:?usage: overview-cost.sh path/to/meshplane.jar}
NODES=${NODES:-100000}
RUNS=${RUNS:-7}
DB=overviewcost
PSQL=(psql -X -q -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1)

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" java -jar "$JAR" migrate >/dev/null 2>&1
echo "filling: $NODES nodes (10 % in small/prod; 2 % stale, 1 % pending)"
"${PSQL[@]}" -d "$DB" <<SQL
INSERT INTO nodes (id, name, team, environment, address, public_key, tags, created_at, updated_at, heartbeat_at, heard, telemetry)
SELECT 'nd_' || lpad(i::text, 26, '0'), 'n-' || i, CASE WHEN i % 10 = 0 THEN 'small' ELSE 'big' END, 'prod',
       '100.64.0.0'::inet + i, md5(i::text) || 'k', ARRAY['tag:t' || (i % 100)], now(), now(),
       CASE WHEN i % 100 = 1 THEN NULL WHEN i % 100 IN (2, 10) THEN now() - interval '1 hour' - (i || ' ms')::interval ELSE now() END,
       i % 100 <> 1, jsonb_build_object('agent_version', '1.4.0')
FROM generate_series(1, $NODES) i;
VACUUM ANALYZE;
SQL

q() {
  local what=$1 sql=$2
  local plans=()
  for ((r = 0; r < RUNS; r++)); do plans+=("$("${PSQL[@]}" -d "$DB" -t -A -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $sql")"); done
  python3 - "$what" "${plans[@]}" <<'PY'
import json, statistics, sys
what, plans = sys.argv[1], [json.loads(p)[0] for p in sys.argv[2:]]
def walk(n, acc):
    loops = n.get("Actual Loops", 1)
    if n.get("Node Type", "").endswith("Scan"):
        acc["read"] += (n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * loops
    for c in n.get("Plans", []): walk(c, acc)
    return acc
p = plans[-1]["Plan"]
acc = walk(p, {"read": 0})
buffers = p.get("Shared Hit Blocks", 0) + p.get("Shared Read Blocks", 0)
times = [x["Execution Time"] for x in plans]
print("| %s | %.1f ms (%.1f–%.1f) | %d | %d | %d |" % (what, statistics.median(times), min(times), max(times), acc["read"], buffers,
      p.get("Actual Rows", 0)))
PY
}

scope() { echo "('$1' = '*' OR team = '$1') AND ('$2' = '*' OR environment = '$2')"; }
CUTOFF="now() - interval '90 seconds'"
counts() { echo "SELECT count(*), count(*) FILTER (WHERE heartbeat_at IS NULL), count(*) FILTER (WHERE heartbeat_at < $CUTOFF) FROM nodes WHERE $(scope "$1" "$2")"; }
stale() { echo "SELECT id, name, team, environment, heartbeat_at FROM nodes WHERE $(scope "$1" "$2") AND heartbeat_at < $CUTOFF ORDER BY heartbeat_at DESC, id LIMIT 5"; }
IDS="ARRAY['nd_$(printf %026d 3)','nd_$(printf %026d 13)','nd_$(printf %026d 23)','nd_$(printf %026d 33)','nd_$(printf %026d 43)']"

echo
echo "| statement | execution (median, min–max of $RUNS) | rows read | buffers | rows out |"
echo "|---|---:|---:|---:|---:|"
q "refresh, */* caller: node counts" "$(counts '*' '*')"
q "refresh, */* caller: stale list (top 5)" "$(stale '*' '*')"
q "refresh, small/prod caller: node counts" "$(counts small prod)"
q "refresh, small/prod caller: stale list (top 5)" "$(stale small prod)"
q "refresh: names of 5 drifting nodes" "SELECT id, name, team, environment, heartbeat_at FROM nodes WHERE $(scope '*' '*') AND id = ANY ($IDS) ORDER BY id"
q "series sampler (oldest replica, every interval): mesh counts" "$(counts '*' '*')"
