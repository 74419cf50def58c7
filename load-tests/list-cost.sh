#!/usr/bin/env bash
# What the list endpoints cost PostgreSQL with hostile filters, at fleet size (deterministic figures:
# rows read and buffers touched, plus the execution time). Builds a scratch database with the jar's
# own migrations, fills it (NODES nodes with one agent token each, AUDIT audit events, EVENTS node
# events) and runs each list query as the service sends it, with filters that match nothing (the
# worst case: the whole scope is read to fill a page), under EXPLAIN (ANALYZE, BUFFERS).
#
#   bash load-tests/list-cost.sh target/meshplane.jar            # NODES=100000 AUDIT=1000000 EVENTS=200000
#   WITHOUT_V13=1 bash load-tests/list-cost.sh target/meshplane.jar   # the same without V13's indexes
#
# Needs the machine's PostgreSQL at 127.0.0.1:5432 (user postgres, trust). Drops and recreates the
# database `listcost` (or $LISTCOST_DB).
set -euo pipefail
JAR=${1:?usage: list-cost.sh path/to/meshplane.jar}
NODES=${NODES:-100000}
AUDIT=${AUDIT:-1000000}
EVENTS=${EVENTS:-200000}
DB=${LISTCOST_DB:-listcost}
PSQL=(psql -X -q -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1)

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" java -jar "$JAR" migrate >/dev/null 2>&1
if [[ -n "${WITHOUT_V13:-}" ]]; then
  "${PSQL[@]}" -d "$DB" -c "DROP INDEX audit_events_scope_action_time, audit_events_action_time, tokens_people_scope_id, node_events_node_id"
fi
echo "filling: $NODES nodes and agent tokens, $AUDIT audit events, $EVENTS node events"
"${PSQL[@]}" -d "$DB" <<SQL
INSERT INTO nodes (id, name, team, environment, address, public_key, tags, created_at, updated_at, heartbeat_at, heard, telemetry)
SELECT 'nd_' || lpad(i::text, 26, '0'), 'n-' || i, 'big', 'prod', '100.64.0.0'::inet + i, md5(i::text) || 'k', ARRAY['tag:t' || (i % 100)],
       now(), now(), now(), true, jsonb_build_object('agent_version', '1.4.0')
FROM generate_series(1, $NODES) i;
INSERT INTO tokens (id, name, team, environment, surface, node_id, key_id, expires_at, created_at, created_by)
SELECT 'tk_' || lpad(i::text, 26, '0'), 'n-' || i, 'big', 'prod', 'agent', 'nd_' || lpad(i::text, 26, '0'), 'k1', now() + interval '90 days', now(), 'test'
FROM generate_series(1, $NODES) i;
INSERT INTO tokens (id, name, team, environment, surface, key_id, expires_at, created_at, created_by)
SELECT 'tk_z' || i, 'ops-' || i, 'big', 'prod', 'operator', 'k1', now() + interval '90 days', now(), 'test' FROM generate_series(1, 10) i;
INSERT INTO audit_events (id, at, actor_type, actor_id, actor_name, action, target_type, target_id, outcome, team, environment)
SELECT 'ev_' || lpad(i::text, 26, '0'), now() - (i || ' seconds')::interval, 'token', 'tk_' || lpad((i % $NODES)::text, 26, '0'), 'n',
       CASE WHEN i % 1000 = 0 THEN 'token.create' ELSE 'node.heartbeat' END, 'node', 'nd_x', 'denied',
       CASE WHEN i % 10 = 0 THEN 'small' ELSE 'big' END, 'prod'
FROM generate_series(1, $AUDIT) i;
INSERT INTO node_events (id, at, type, node_id, node_name, team, environment, last_heartbeat)
SELECT 'ev_n' || lpad(i::text, 26, '0'), now() - (i || ' seconds')::interval, CASE WHEN i % 2 = 0 THEN 'node.stale' ELSE 'node.online' END,
       'nd_' || lpad((i % $NODES)::text, 26, '0'), 'n', 'big', 'prod', now()
FROM generate_series(1, $EVENTS) i;
VACUUM ANALYZE;
SQL

q() {
  local what=$1 sql=$2
  local plan
  plan=$("${PSQL[@]}" -d "$DB" -t -A -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $sql")
  python3 - "$what" "$plan" <<'PY'
import json, sys
what, plan = sys.argv[1], json.loads(sys.argv[2])[0]
p = plan["Plan"]
def walk(n, acc):
    loops = n.get("Actual Loops", 1)
    if n.get("Node Type", "").endswith("Scan"):
        acc["read"] += (n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * loops
    for c in n.get("Plans", []): walk(c, acc)
    return acc
acc = walk(p, {"read": 0, "removed": 0})
buffers = p.get("Shared Hit Blocks", 0) + p.get("Shared Read Blocks", 0)
print("| %s | %.1f ms | %d | %d | %d |" % (what, plan["Execution Time"], acc["read"], buffers, p.get("Actual Rows", 0)))
PY
}

SCOPE_NODES="(team = 'big') AND (environment = 'prod')"
echo
echo "| query (a filter that matches nothing, so the whole scope is read for one page) | execution | rows read | buffers | rows out |"
echo "|---|---:|---:|---:|---:|"
q "nodes: tag" "SELECT id FROM nodes WHERE $SCOPE_NODES AND 'tag:none' = ANY (tags) ORDER BY id LIMIT 1001"
q "nodes: name_prefix" "SELECT id FROM nodes WHERE $SCOPE_NODES AND starts_with(name, 'zz') ORDER BY id LIMIT 1001"
q "nodes: agent_version" "SELECT id FROM nodes WHERE $SCOPE_NODES AND telemetry->>'agent_version' = '9.9' ORDER BY id LIMIT 1001"
q "nodes: status=stale (none stale)" "SELECT id FROM nodes WHERE $SCOPE_NODES AND heartbeat_at < now() - interval '1 day' ORDER BY id LIMIT 1001"
q "nodes: counts (panel overview)" "SELECT count(*), count(*) FILTER (WHERE heartbeat_at IS NULL), count(*) FILTER (WHERE heartbeat_at < now()) FROM nodes WHERE $SCOPE_NODES"
q "tokens: list (people's tokens among agents')" "SELECT id FROM tokens WHERE $SCOPE_NODES AND surface <> 'agent' ORDER BY id LIMIT 1001"
q "audit: action (none)" "SELECT id FROM audit_events WHERE team = 'big' AND environment = 'prod' AND action = 'acl.rollback' ORDER BY at DESC, id DESC LIMIT 1001"
q "audit: action, every team" "SELECT id FROM audit_events WHERE action = 'acl.rollback' ORDER BY at DESC, id DESC LIMIT 1001"
q "audit: actor (none)" "SELECT id FROM audit_events WHERE team = 'big' AND environment = 'prod' AND actor_id = 'tk_none' ORDER BY at DESC, id DESC LIMIT 1001"
q "events: node (none)" "SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod' AND node_id = 'nd_none' ORDER BY id LIMIT 1001"
q "events: type + since (none)" "SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod' AND type = 'node.stale' AND at >= now() ORDER BY id LIMIT 1001"
# the logs people read (V16): name prefixes as ranges of byte-wise indexes, events newest first
q "audit: actor_name prefix (none)" "SELECT id FROM audit_events WHERE team = 'big' AND environment = 'prod' AND actor_name COLLATE \"C\" >= 'zz' AND actor_name COLLATE \"C\" < 'z{' ORDER BY at DESC, id DESC LIMIT 1001"
q "audit: actor_name prefix (every row matches)" "SELECT id FROM audit_events WHERE team = 'big' AND environment = 'prod' AND actor_name COLLATE \"C\" >= 'n' AND actor_name COLLATE \"C\" < 'o' ORDER BY at DESC, id DESC LIMIT 51"
q "events: newest first, first page" "SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod' ORDER BY id DESC LIMIT 51"
q "events: newest first, deep page" "SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod' AND id < 'ev_n00000000000000000000150000' ORDER BY id DESC LIMIT 51"
q "events: node_name prefix (none)" "SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod' AND node_name COLLATE \"C\" >= 'zz' AND node_name COLLATE \"C\" < 'z{' ORDER BY id DESC LIMIT 1001"
