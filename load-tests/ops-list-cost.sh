#!/usr/bin/env bash
# What one page of the fleet-wide operations list (GET /v1/operations) costs PostgreSQL at fleet size,
# with filters that match nothing (the worst case for a list that filters: a plan that cannot stop
# early reads the whole scope to fill a page). Builds a scratch database with the jar's own
# migrations, fills it with OPS operations over NODES nodes (90 % in team big, 10 % in small; 3 kinds;
# mostly succeeded, 1 % failed, 2 % of re-keys expired, 1,000 open; one a minute back from now), and
# runs each query exactly as OpsQuery writes it, PREPAREd and EXPLAINed under EXPLAIN (ANALYZE, BUFFERS)
# with plan_cache_mode = force_custom_plan, as the read pool's connections run it (PLAN_CACHE_MODE=
# force_generic_plan shows the plans a pooled connection could end up with otherwise).
#
#   bash load-tests/ops-list-cost.sh target/meshplane.jar                # NODES=100000 OPS=1000000
#   WITHOUT_V14=1 bash load-tests/ops-list-cost.sh target/meshplane.jar  # the same without V14's indexes
#   PLAN_CACHE_MODE=force_generic_plan bash load-tests/ops-list-cost.sh target/meshplane.jar
#
# Needs the machine's PostgreSQL at 127.0.0.1:5432 (user postgres, trust). Drops and recreates the
# database `opslistcost`.
set -euo pipefail
JAR=${1:?usage: ops-list-cost.sh path/to/meshplane.jar}
NODES=${NODES:-100000}
OPS=${OPS:-1000000}
DB=opslistcost
PSQL=(psql -X -q -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1)

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" java -jar "$JAR" migrate >/dev/null 2>&1
if [[ -n "${WITHOUT_V14:-}" ]]; then
  "${PSQL[@]}" -d "$DB" -c "DROP INDEX operations_scope_time, operations_time, operations_scope_kind_status_time, operations_kind_status_time, operations_node_time"
fi
echo "filling: $OPS operations over $NODES nodes"
"${PSQL[@]}" -d "$DB" <<SQL
INSERT INTO operations (id, node_id, team, environment, kind, status, target, actor_type, actor_id, actor_name, requested_at, deadline,
                        delivered_at, completed_at, result)
SELECT 'op_' || lpad(i::text, 26, '0'), 'nd_' || lpad((i % $NODES)::text, 26, '0'),
       CASE WHEN (i % $NODES) % 10 = 0 THEN 'small' ELSE 'big' END, 'prod',
       (ARRAY['rekey', 'move_relay', 'drain_ingress'])[i % 3 + 1],
       CASE WHEN i <= 500 THEN 'pending' WHEN i <= 1000 THEN 'delivered' WHEN i % 100 = 7 THEN 'failed'
            WHEN i % 3 = 0 AND i % 50 = 3 THEN 'expired' ELSE 'succeeded' END,
       '{"old_key":"x"}', 'token', 'tok_x', 'root',
       now() - (i || ' minutes')::interval, now() - (i || ' minutes')::interval + interval '10 minutes',
       now() - (i || ' minutes')::interval, CASE WHEN i <= 1000 THEN NULL ELSE now() - (i || ' minutes')::interval END,
       CASE WHEN i <= 1000 THEN NULL ELSE '{"detail":"done"}'::jsonb END
FROM generate_series(1, $OPS) i;
VACUUM ANALYZE operations;
SQL

COLS="id, node_id, team, environment, kind, status, target, actor_type, actor_id, actor_name, requested_at, deadline, delivered_at, completed_at, result"
ORDER="ORDER BY requested_at DESC, id DESC LIMIT"

# q <label> <parameter types> <statement with \$n> <arguments>
q() {
  local what=$1 types=$2 sql=$3 args=$4
  local plan
  plan=$("${PSQL[@]}" -d "$DB" -t -A -c "SET plan_cache_mode = ${PLAN_CACHE_MODE:-force_custom_plan}" -c "PREPARE q($types) AS $sql" \
    -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE q($args)")
  python3 - "$what" "$plan" <<'PY'
import json, sys
what, plan = sys.argv[1], json.loads(sys.argv[2])[0]
p = plan["Plan"]
def walk(n, acc):
    loops = n.get("Actual Loops", 1)
    if n.get("Node Type", "").endswith("Scan"):
        acc["read"] += (n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * loops
        if n.get("Index Name"): acc["idx"].add(n["Index Name"])
        elif n.get("Node Type") == "Seq Scan": acc["idx"].add("seq scan")
    for c in n.get("Plans", []): walk(c, acc)
    return acc
acc = walk(p, {"read": 0, "idx": set()})
buffers = p.get("Shared Hit Blocks", 0) + p.get("Shared Read Blocks", 0)
print("| %s | %.2f ms | %d | %d | %d | %s |" % (what, plan["Execution Time"], acc["read"], buffers, p.get("Actual Rows", 0),
      ", ".join(sorted(acc["idx"]))))
PY
}

# one (kind, status) branch of the merged form, for the scope ($1 team, $2 environment) and limit $3
branch() {
  echo "(SELECT $COLS FROM operations WHERE TRUE AND team = \$1 AND environment = \$2 AND kind = '$1' AND status = '$2' $ORDER \$3)"
}
merged() {
  local out="" k s
  for k in $1; do for s in $2; do out+="${out:+ UNION ALL }$(branch "$k" "$s")"; done; done
  echo "SELECT * FROM ($out) AS o $ORDER \$3"
}
ALL_KINDS="drain_ingress move_relay rekey"
SCOPE="SELECT $COLS FROM operations WHERE TRUE AND team = \$1 AND environment = \$2"

echo
echo "| query (one page of 51 rows: the page and the row that says a next page exists) | execution | rows read | buffers | rows out | index |"
echo "|---|---:|---:|---:|---:|---|"
q "first page of a scope (900,000 operations)" "text, text, int" "$SCOPE $ORDER \$3" "'big', 'prod', 51"
q "first page of a small team (100,000 operations)" "text, text, int" "$SCOPE $ORDER \$3" "'small', 'prod', 51"
q "first page of a team without operations" "text, text, int" "$SCOPE $ORDER \$3" "'nobody', 'prod', 51"
q "a page deep in the scope (after the 500,000th)" "text, text, timestamptz, text, int" \
  "$SCOPE AND (requested_at, id) < (\$3, \$4) $ORDER \$5" "'big', 'prod', now() - interval '500000 minutes', 'op_z', 51"
q "status=open (1,000 open of 1,000,000): 6 branches" "text, text, int" "$(merged "$ALL_KINDS" "delivered pending")" "'big', 'prod', 51"
q "status=failed (1 %): 3 branches" "text, text, int" "$(merged "$ALL_KINDS" "failed")" "'big', 'prod', 51"
q "status=failed, a team without operations: 3 branches" "text, text, int" "$(merged "$ALL_KINDS" "failed")" "'nobody', 'prod', 51"
q "kind=drain_ingress&status=expired (none)" "text, text, int" \
  "SELECT $COLS FROM operations WHERE TRUE AND team = \$1 AND environment = \$2 AND kind = 'drain_ingress' AND status = 'expired' $ORDER \$3" \
  "'big', 'prod', 51"
q "kind=drain_ingress (5 branches), since 1 day" "text, text, timestamptz, int" \
  "SELECT * FROM ($(for s in delivered expired failed pending succeeded; do printf '%s' "${sep:-}(SELECT $COLS FROM operations WHERE TRUE AND team = \$1 AND environment = \$2 AND requested_at >= \$3 AND kind = 'drain_ingress' AND status = '$s' $ORDER \$4)"; sep=' UNION ALL '; done)) AS o $ORDER \$4" \
  "'big', 'prod', now() - interval '1 day', 51"
q "until before every operation (none)" "text, text, timestamptz, int" "$SCOPE AND requested_at < \$3 $ORDER \$4" "'big', 'prod', now() - interval '10 years', 51"
q "node_id of no node (none)" "text, text, text, int" "$SCOPE AND node_id = \$3 $ORDER \$4" "'big', 'prod', 'nd_none', 51"
q "node_id, status=failed (a node's 10 operations)" "text, text, text, int" \
  "$SCOPE AND node_id = \$3 AND status IN ('failed') $ORDER \$4" "'big', 'prod', 'nd_$(printf '%026d' 7)', 51"
q "every team (*): first page" "int" "SELECT $COLS FROM operations WHERE TRUE $ORDER \$1" "51"
q "every team (*): status=failed, 3 branches" "int" \
  "SELECT * FROM ($(sep=''; for k in $ALL_KINDS; do printf '%s' "${sep}(SELECT $COLS FROM operations WHERE TRUE AND kind = '$k' AND status = 'failed' $ORDER \$1)"; sep=' UNION ALL '; done)) AS o $ORDER \$1" "51"
