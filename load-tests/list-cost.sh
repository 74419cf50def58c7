#!/usr/bin/env bash
# What the list endpoints cost PostgreSQL with hostile filters, at fleet size (deterministic figures:
# rows read and buffers touched, plus the execution time). Builds a scratch database with the jar's
# own migrations, fills it (NODES nodes with one agent token each, AUDIT audit events, EVENTS node
# events) and runs each list query as the service sends it, with filters that match nothing (the
# worst case: the whole scope is read to fill a page), under EXPLAIN (ANALYZE, BUFFERS).
#
#   bash load-tests/list-cost.sh target/meshplane.jar            # NODES=100000 AUDIT=1000000 EVENTS=1000000
#   WITHOUT_V13=1 bash load-tests/list-cost.sh target/meshplane.jar   # the same without V13's indexes
#   WITHOUT_V18=1 bash load-tests/list-cost.sh target/meshplane.jar   # the same without V18's (names inside a scope)
#
# Needs the machine's PostgreSQL at 127.0.0.1:5432 (user postgres, trust). Drops and recreates the
# database `listcost` (or $LISTCOST_DB).
#
# Names are realistic, since the logs filter by name (V16): nodes are web-1 ... web-NODES, each with an
# agent token of the same name. Half of the trail's actors are those agent tokens (NODES distinct
# names); the other half are 300 people and CI tokens (ci-0 ... , user-1 ..., ops-2 ...) with a skew
# (ci-0 alone acts about one time in seven); a tenth of the trail is another team's, whose 300 actors
# are named sm-0 .... Node events are spread over the NODES node names (about EVENTS/NODES each).
# Names also come and go: the oldest 5% of the people's actions are by old-0 ... (people since gone),
# and the oldest 5% of the node events are of db-0 ... db-999 (nodes since deprovisioned).
set -euo pipefail
JAR=${1:?usage: list-cost.sh path/to/meshplane.jar}
NODES=${NODES:-100000}
AUDIT=${AUDIT:-1000000}
EVENTS=${EVENTS:-1000000}
DB=${LISTCOST_DB:-listcost}
PSQL=(psql -X -q -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1)

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB" java -jar "$JAR" migrate >/tmp/listcost-migrate.log 2>&1 || { cat /tmp/listcost-migrate.log; exit 1; }
if [[ -n "${WITHOUT_V13:-}" ]]; then
  "${PSQL[@]}" -d "$DB" -c "DROP INDEX audit_events_scope_action_time, audit_events_action_time, tokens_people_scope_id, node_events_node_id"
fi
if [[ -n "${WITHOUT_V18:-}" ]]; then
  "${PSQL[@]}" -d "$DB" -c "DROP INDEX IF EXISTS audit_events_scope_actor_name_time, node_events_scope_node_name"
fi
echo "filling: $NODES nodes and agent tokens, $AUDIT audit events, $EVENTS node events"
"${PSQL[@]}" -d "$DB" <<SQL
INSERT INTO nodes (id, name, team, environment, address, public_key, tags, created_at, updated_at, heartbeat_at, heard, telemetry)
SELECT 'nd_' || lpad(i::text, 26, '0'), 'web-' || i, 'big', 'prod', '100.64.0.0'::inet + i, md5(i::text) || 'k', ARRAY['tag:t' || (i % 100)],
       now(), now(), now(), true, jsonb_build_object('agent_version', '1.4.0')
FROM generate_series(1, $NODES) i;
INSERT INTO tokens (id, name, team, environment, surface, node_id, key_id, expires_at, created_at, created_by)
SELECT 'tk_' || lpad(i::text, 26, '0'), 'web-' || i, 'big', 'prod', 'agent', 'nd_' || lpad(i::text, 26, '0'), 'k1', now() + interval '90 days', now(), 'test'
FROM generate_series(1, $NODES) i;
INSERT INTO tokens (id, name, team, environment, surface, key_id, expires_at, created_at, created_by)
SELECT 'tk_z' || i, 'ops-' || i, 'big', 'prod', 'operator', 'k1', now() + interval '90 days', now(), 'test' FROM generate_series(1, 10) i;
INSERT INTO audit_events (id, at, actor_type, actor_id, actor_name, action, target_type, target_id, outcome, team, environment)
SELECT 'ev_' || lpad(($AUDIT + 1 - i)::text, 26, '0'), now() - (i || ' seconds')::interval, 'token',
       CASE WHEN i % 10 = 0 THEN 'tk_s' || k WHEN i % 2 = 0 THEN 'tk_' || lpad((i % $NODES + 1)::text, 26, '0') ELSE 'tk_p' || k END,
       CASE WHEN i % 10 = 0 THEN 'sm-' || k WHEN i % 2 = 0 THEN 'web-' || (i % $NODES + 1)
            WHEN i > $AUDIT * 0.95 THEN 'old-' || k ELSE (ARRAY['ci-', 'user-', 'ops-'])[k % 3 + 1] || k END,
       CASE WHEN i % 1000 = 0 THEN 'token.create' ELSE 'node.heartbeat' END, 'node', 'nd_x', 'denied',
       CASE WHEN i % 10 = 0 THEN 'small' ELSE 'big' END, 'prod'
FROM (SELECT i, floor(300 * power(((i::bigint * 2654435761) % 1000003) / 1000003.0, 3))::int AS k
      FROM generate_series(1, $AUDIT) i) s;
INSERT INTO node_events (id, at, type, node_id, node_name, team, environment, last_heartbeat)
SELECT 'ev_n' || lpad(($EVENTS + 1 - i)::text, 26, '0'), now() - (i || ' seconds')::interval, CASE WHEN i % 2 = 0 THEN 'node.stale' ELSE 'node.online' END,
       'nd_' || lpad((i % $NODES + 1)::text, 26, '0'), CASE WHEN i > $EVENTS * 0.95 THEN 'db-' || (i % 1000) ELSE 'web-' || (i % $NODES + 1) END,
       'big', 'prod', now()
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
q "events: newest first, first page" "SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod' ORDER BY id DESC LIMIT 51"
q "events: newest first, deep page" "SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod' AND id < 'ev_n$(printf '%026d' $((EVENTS * 3 / 4)))' ORDER BY id DESC LIMIT 51"

# the logs people read (V16): a name filter as a prefix (a range of the byte-wise index: every match is
# read and sorted, the LIMIT does not stop it) against an exact name (the index's order is the page's)
DEEP_AT="now() - interval '$((AUDIT / 2)) seconds'"
DEEP_EV="ev_n$(printf '%026d' $((EVENTS / 2)))"
AUDIT_SCOPE="team = 'big' AND environment = 'prod'"
prefix() { echo "actor_name COLLATE \"C\" >= '$1' AND actor_name COLLATE \"C\" < '$2'"; }
nprefix() { echo "node_name COLLATE \"C\" >= '$1' AND node_name COLLATE \"C\" < '$2'"; }
AUDIT_LIST="SELECT id FROM audit_events WHERE $AUDIT_SCOPE"
EVENTS_LIST="SELECT id FROM node_events WHERE team = 'big' AND environment = 'prod'"
echo
echo "| name filter (realistic names; 50 a page + 1) | execution | rows read | buffers | rows out |"
echo "|---|---:|---:|---:|---:|"
q "audit: actor_name prefix 'w' (1 char: the agents, half the trail)" "$AUDIT_LIST AND $(prefix w x) ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name prefix 'c' (1 char: ci-*)" "$AUDIT_LIST AND $(prefix c d) ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name prefix 'ci-' (3 chars)" "$AUDIT_LIST AND $(prefix ci- ci.) ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name prefix 'ci-' (3 chars), deep page" "$AUDIT_LIST AND $(prefix ci- ci.) AND (at, id) < ($DEEP_AT, 'ev_') ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name prefix 'web-1' (11,111 names)" "$AUDIT_LIST AND $(prefix web-1 web-2) ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name prefix 'old' (only the oldest 5%)" "$AUDIT_LIST AND $(prefix old ole) ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name prefix 'zz' (none)" "$AUDIT_LIST AND $(prefix zz z{) ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'ci-0' (the busiest actor)" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'ci-0' ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'ci-0', deep page" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'ci-0' AND (at, id) < ($DEEP_AT, 'ev_') ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'ci-0', 1000 a page" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'ci-0' ORDER BY at DESC, id DESC LIMIT 1001"
q "audit: actor_name = 'user-298' (a rare actor)" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'user-298' ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'web-12345' (an agent)" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'web-12345' ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'old-0' (only the oldest 5%)" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'old-0' ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'zz' (none)" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'zz' ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'sm-0' (another team's busiest actor: none in scope)" "$AUDIT_LIST AND actor_name COLLATE \"C\" = 'sm-0' ORDER BY at DESC, id DESC LIMIT 51"
q "audit: actor_name = 'user-298', every team (V16's index)" "SELECT id FROM audit_events WHERE actor_name COLLATE \"C\" = 'user-298' ORDER BY at DESC, id DESC LIMIT 51"
q "events: node_name prefix 'w' (1 char: every event)" "$EVENTS_LIST AND $(nprefix w x) ORDER BY id DESC LIMIT 51"
q "events: node_name prefix 'web' (3 chars: every event)" "$EVENTS_LIST AND $(nprefix web wec) ORDER BY id DESC LIMIT 51"
q "events: node_name prefix 'web-1' (11,111 nodes)" "$EVENTS_LIST AND $(nprefix web-1 web-2) ORDER BY id DESC LIMIT 51"
q "events: node_name prefix 'web-1', deep page" "$EVENTS_LIST AND $(nprefix web-1 web-2) AND id < '$DEEP_EV' ORDER BY id DESC LIMIT 51"
q "events: node_name prefix 'web-1234' (11 nodes)" "$EVENTS_LIST AND $(nprefix web-1234 web-1235) ORDER BY id DESC LIMIT 51"
q "events: node_name prefix 'db-' (only the oldest 5%)" "$EVENTS_LIST AND $(nprefix db- db.) ORDER BY id DESC LIMIT 51"
q "events: node_name prefix 'zz' (none)" "$EVENTS_LIST AND $(nprefix zz z{) ORDER BY id DESC LIMIT 51"
q "events: node_name = 'web-12345'" "$EVENTS_LIST AND node_name COLLATE \"C\" = 'web-12345' ORDER BY id DESC LIMIT 51"
q "events: node_name = 'web-12345', deep page" "$EVENTS_LIST AND node_name COLLATE \"C\" = 'web-12345' AND id < '$DEEP_EV' ORDER BY id DESC LIMIT 51"
q "events: node_name = 'web-12345', oldest first" "$EVENTS_LIST AND node_name COLLATE \"C\" = 'web-12345' ORDER BY id LIMIT 51"
q "events: node_name = 'db-7' (only the oldest 5%)" "$EVENTS_LIST AND node_name COLLATE \"C\" = 'db-7' ORDER BY id DESC LIMIT 51"
q "events: node_name = 'web-12345', every team (V16's index)" "SELECT id FROM node_events WHERE node_name COLLATE \"C\" = 'web-12345' ORDER BY id DESC LIMIT 51"
q "events: node_name = 'zz' (none)" "$EVENTS_LIST AND node_name COLLATE \"C\" = 'zz' ORDER BY id DESC LIMIT 51"
