#!/usr/bin/env bash
# What the inventory list costs at 100,000 nodes (issue 26): every order's first page and a deep
# page, with and without a team scope, the address search, the total, and the bulk's filter look-up.
# Builds a scratch database with the jar's own migrations (V15's indexes included), fills it with
# NODES nodes, runs each statement as NodeListing builds it under EXPLAIN (ANALYZE, BUFFERS), then
# starts one coordinator on that database and times the same requests end to end (median of 5).
#
#   bash load-tests/inventory-cost.sh target/meshplane.jar           # NODES=100000
#   WITHOUT_V15=1 bash load-tests/inventory-cost.sh target/meshplane.jar   # the plans without V15's indexes
#
# Layout: team `big` holds 60 % of the nodes in prod and 20 % in dev, 20 teams `t1`..`t20` share the
# rest (prod); 5 % never heard from, 10 % stale (an hour old), the rest beat in the last 30 s.
# Needs the machine's PostgreSQL at 127.0.0.1:5432 (user postgres, trust). Drops and recreates the
# database `inventorycost`; the coordinator listens on HTTP_PORT (18090) and CLUSTER_PORT (15791).
set -euo pipefail
JAR=${1:?usage: inventory-cost.sh path/to/meshplane.jar}
NODES=${NODES:-100000}
DB=inventorycost
HTTP_PORT=${HTTP_PORT:-18090}
CLUSTER_PORT=${CLUSTER_PORT:-15791}
PSQL=(psql -X -q -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1)
export MESH_PG_URL="postgresql://postgres@127.0.0.1:5432/$DB"

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
java -jar "$JAR" migrate >/dev/null 2>&1
if [[ -n "${WITHOUT_V15:-}" ]]; then
  "${PSQL[@]}" -d "$DB" -c "DROP INDEX nodes_name_id, nodes_team_name_id, nodes_scope_name_id"
fi
echo "filling: $NODES nodes"
"${PSQL[@]}" -d "$DB" <<SQL
INSERT INTO nodes (id, name, team, environment, address, public_key, tags, created_at, updated_at, heartbeat_at, heard, telemetry)
SELECT 'nd_' || lpad(i::text, 26, '0'),
       (ARRAY['web','db','api','cache','edge','worker','mq','search'])[1 + i % 8] || '-' || (i * 7919 % $NODES),
       CASE WHEN i % 10 < 8 THEN 'big' ELSE 't' || (1 + (i / 10) % 20) END,
       CASE WHEN i % 10 < 6 THEN 'prod' WHEN i % 10 < 8 THEN 'dev' ELSE 'prod' END,
       '100.64.0.0'::inet + i, md5(i::text) || 'k', ARRAY['tag:t' || (i % 100)], now(), now(),
       CASE WHEN i % 20 = 0 THEN NULL WHEN i % 10 = 1 THEN now() - interval '1 hour' - (i % 600) * interval '1 second'
            ELSE now() - (i % 30000) * interval '1 millisecond' END,
       i % 20 <> 0, jsonb_build_object('agent_version', '1.4.0')
FROM generate_series(1, $NODES) i;
VACUUM ANALYZE nodes;
SQL

COLS="id, name, team, environment, host(address) AS address, public_key, tags, relay, services, ingress, endpoints, routes, reported_relay, COALESCE(NULLIF(reported_key, ''), public_key) AS current_key, telemetry::text AS telemetry, heartbeat_at, created_at, updated_at, COALESCE(acknowledged_peers, -1) AS ack_peers, COALESCE(acknowledged_acl, -1) AS ack_acl, acknowledged_at"
WIDE="('*' = '*' OR team = '*') AND ('*' = '*' OR environment = '*')"
TEAM="('big' = '*' OR team = 'big') AND ('*' = '*' OR environment = '*')"
SCOPE="('big' = '*' OR team = 'big') AND ('prod' = '*' OR environment = 'prod')"
HB="COALESCE(heartbeat_at, '-infinity'::timestamptz)"

q() {
  local what=$1 sql=$2
  local plan
  plan=$("${PSQL[@]}" -d "$DB" -t -A -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $sql")
  python3 - "$what" "$plan" <<'PY'
import json, sys
what, plan = sys.argv[1], json.loads(sys.argv[2])[0]
p = plan["Plan"]
idx = []
def walk(n, acc):
    loops = n.get("Actual Loops", 1)
    if n.get("Node Type", "").endswith("Scan"):
        acc["read"] += (n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * loops
        idx.append(n.get("Index Name") or n["Node Type"])
    if n.get("Node Type") == "Sort": idx.append("sort:" + n.get("Sort Method", "?"))
    for c in n.get("Plans", []): walk(c, acc)
    return acc
acc = walk(p, {"read": 0})
buffers = p.get("Shared Hit Blocks", 0) + p.get("Shared Read Blocks", 0)
print("| %s | %.2f ms | %s | %d | %d |" % (what, plan["Execution Time"], ", ".join(dict.fromkeys(idx)), acc["read"], buffers))
PY
}

# a deep page: the key of the row halfway through the order (the cursor a person would hold there)
key() { "${PSQL[@]}" -d "$DB" -t -A -F '|' -c "SELECT $1, id FROM nodes WHERE $2 ORDER BY $3 OFFSET $4 LIMIT 1"; }

echo
echo "| statement (limit 50) | execution | plan (index or scan) | rows read | buffers |"
echo "|---|---:|---|---:|---:|"
for scope in WIDE TEAM SCOPE; do
  where=${!scope}
  total=$("${PSQL[@]}" -d "$DB" -t -A -c "SELECT count(*) FROM nodes WHERE $where")
  half=$((total / 2))
  q "$scope id, first page" "SELECT $COLS FROM nodes WHERE $where ORDER BY id LIMIT 51"
  IFS='|' read -r _ k <<<"$(key id "$where" id $half)"
  q "$scope id, page at row $half" "SELECT $COLS FROM nodes WHERE $where AND id > '$k' ORDER BY id LIMIT 51"
  q "$scope name, first page" "SELECT $COLS FROM nodes WHERE $where ORDER BY name, id LIMIT 51"
  IFS='|' read -r n k <<<"$(key name "$where" "name, id" $half)"
  q "$scope name, page at row $half" "SELECT $COLS FROM nodes WHERE $where AND (name, id) > ('$n', '$k') ORDER BY name, id LIMIT 51"
  q "$scope -name, page at row $half" "SELECT $COLS FROM nodes WHERE $where AND (name, id) < ('$n', '$k') ORDER BY name DESC, id DESC LIMIT 51"
  q "$scope heartbeat (= status), first page" "SELECT $COLS FROM nodes WHERE $where ORDER BY $HB, id LIMIT 51"
  IFS='|' read -r t k <<<"$(key "$HB" "$where" "$HB, id" $half)"
  q "$scope heartbeat, page at row $half" "SELECT $COLS FROM nodes WHERE $where AND ($HB, id) > ('$t'::text::timestamptz, '$k') ORDER BY $HB, id LIMIT 51"
  q "$scope -heartbeat (= -status), page at row $half" "SELECT $COLS FROM nodes WHERE $where AND ($HB, id) < ('$t'::text::timestamptz, '$k') ORDER BY $HB DESC, id DESC LIMIT 51"
  q "$scope total (capped count)" "SELECT count(*) FROM (SELECT 1 FROM nodes WHERE $where LIMIT 10001) c"
  q "$scope total, status=stale" "SELECT count(*) FROM (SELECT 1 FROM nodes WHERE $where AND heartbeat_at < now() - interval '90 seconds' LIMIT 10001) c"
done
q "WIDE address=100.64.1.7" "SELECT $COLS FROM nodes WHERE $WIDE AND address BETWEEN '100.64.1.7'::text::inet AND '100.64.1.7'::text::inet ORDER BY id LIMIT 51"
q "SCOPE address=100.64.1.0/24, sort=name" "SELECT $COLS FROM nodes WHERE $SCOPE AND address BETWEEN '100.64.1.0'::text::inet AND '100.64.1.255'::text::inet ORDER BY name, id LIMIT 51"
q "WIDE address=100.64.0.0/16, total" "SELECT count(*) FROM (SELECT 1 FROM nodes WHERE $WIDE AND address BETWEEN '100.64.0.0'::text::inet AND '100.64.255.255'::text::inet LIMIT 10001) c"
q "WIDE full count, for comparison (what the cap avoids)" "SELECT count(*) FROM nodes WHERE $WIDE"
SMALL="('t3' = '*' OR team = 't3') AND ('*' = '*' OR environment = '*')"
q "team t3 (1,000 nodes) heartbeat, first page" "SELECT $COLS FROM nodes WHERE $SMALL ORDER BY $HB, id LIMIT 51"
q "bulk filter: SCOPE tag, first 501 by id" "SELECT $COLS FROM nodes WHERE $SCOPE AND 'tag:t7' = ANY (tags) ORDER BY id LIMIT 501"

echo
echo "requests, end to end (one coordinator on this database, median of 5, limit 50):"
TOKEN=$(java -jar "$JAR" token create --name cost --team '*' --environment '*' --surface admin --expires 1d 2>/dev/null | tail -1)
SCOPED=$(java -jar "$JAR" token create --name cost-big --team big --environment prod --surface operator --expires 1d 2>/dev/null | tail -1)
# stale_after 1 day: no agent beats here, and the staleness monitors would otherwise mark 95,000 rows
# stale 90 s in (95,000 row updates while the requests are timed, and a bloated table afterwards)
MESH_STALE_AFTER=1d MESH_HTTP_PORT=$HTTP_PORT MESH_CLUSTER_PORT=$CLUSTER_PORT java -jar "$JAR" run --only coordinator >/tmp/inventory-cost-replica.log 2>&1 &
REPLICA=$!
trap 'kill $REPLICA 2>/dev/null || true; wait $REPLICA 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$HTTP_PORT/readyz" >/dev/null && break; sleep 1; done
req() {
  local what=$1 token=$2 query=$3 times=()
  for _ in 1 2 3 4 5; do
    times+=("$(curl -s -o /tmp/inventory-cost-body.json -w '%{time_total}' -H "Authorization: Bearer $token" "http://127.0.0.1:$HTTP_PORT/v1/nodes?$query")")
  done
  python3 - "$what" "/tmp/inventory-cost-body.json" "${times[@]}" <<'PY'
import json, sys, statistics
what, body, times = sys.argv[1], sys.argv[2], [float(t) * 1000 for t in sys.argv[3:]]
b = json.load(open(body))
total = b.get("total"); est = b.get("total_estimated")
print("| %s | %.1f ms | %d | %s%s |" % (what, statistics.median(times), len(b.get("items", [])), total, " (estimated)" if est else ""))
PY
}
deep() { # the cursor after following `pages` pages
  local token=$1 query=$2 pages=$3 cursor=""
  for _ in $(seq 1 "$pages"); do
    cursor=$(curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$HTTP_PORT/v1/nodes?$query&limit=1000${cursor:+&cursor=$cursor}" \
      | python3 -c 'import json,sys,urllib.parse; print(urllib.parse.quote(json.load(sys.stdin)["next_cursor"] or "", safe=""))')
  done
  echo "$cursor"
}
curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$HTTP_PORT/v1/nodes?limit=50" # warm-up
echo "| request | median | items | total |"
echo "|---|---:|---:|---|"
for s in id name -name heartbeat -heartbeat status -status; do
  req "every team, sort=$s, first page" "$TOKEN" "sort=$s&limit=50"
  c=$(deep "$TOKEN" "sort=$s" 50)
  req "every team, sort=$s, after 50,000 rows" "$TOKEN" "sort=$s&limit=50&cursor=$c"
  req "big/prod token, sort=$s, first page" "$SCOPED" "sort=$s&limit=50"
  c=$(deep "$SCOPED" "sort=$s" 30)
  req "big/prod token, sort=$s, after 30,000 rows" "$SCOPED" "sort=$s&limit=50&cursor=$c"
done
req "every team, team=t3" "$TOKEN" "team=t3&sort=name&limit=50"
req "every team, team=t3, sort=heartbeat" "$TOKEN" "team=t3&sort=heartbeat&limit=50"
req "every team, address=100.64.1.7" "$TOKEN" "address=100.64.1.7"
req "every team, address=100.64.1.0/24" "$TOKEN" "address=100.64.1.0%2F24&limit=50"
req "big/prod token, address=100.64.0.0/16, sort=name" "$SCOPED" "address=100.64.0.0%2F16&sort=name&limit=50"
req "every team, status=pending" "$TOKEN" "status=pending&limit=50"
req "every team, policy_sync=behind (scan of 1,000)" "$TOKEN" "policy_sync=behind&limit=50"
req "every team, policy_sync=drifting" "$TOKEN" "policy_sync=drifting"
