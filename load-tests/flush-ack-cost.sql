-- What one write-behind statement writes to the WAL: the flush UPDATE of one chunk (2,000 rows, sent
-- whole) of a NODES-row table, as in LiveRepository.flush (its row-writing part; the change-log CTE
-- after it does not depend on these changes), in four versions:
--   1. on the V9 schema, whose partial index nodes_never_heard (WHERE heartbeat_at IS NULL, from V7)
--      makes every row write a non-HOT update;
--   2. on the V10 schema (the index's predicate on `heard` instead), without the acknowledged versions
--      (the statement before V9);
--   3. V10, the acknowledged versions changed (each row stamps acknowledged_at);
--   4. V10, the acknowledged versions unchanged (the common case).
-- WAL records and bytes are deterministic (up to full-page images after a checkpoint: run it twice);
-- times are not. Each statement runs in a transaction that is rolled back, after a VACUUM.
-- Run from the repository's root (it reads the migrations), against a scratch database it creates:
--   psql -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1 -v nodes=10000 -f load-tests/flush-ack-cost.sql
\if :{?nodes}
\else
  \set nodes 10000
\endif
\set QUIET on
DROP DATABASE IF EXISTS meshplane_flush_ack_cost;
CREATE DATABASE meshplane_flush_ack_cost;
\c meshplane_flush_ack_cost
SET client_min_messages = warning;
\i src/main/resources/db/migration/V1__foundation.sql
\i src/main/resources/db/migration/V2__tokens_and_audit.sql
\i src/main/resources/db/migration/V3__nodes.sql
\i src/main/resources/db/migration/V4__nodes_fillfactor.sql
\i src/main/resources/db/migration/V5__nodes_reported_key.sql
\i src/main/resources/db/migration/V6__policy.sql
\i src/main/resources/db/migration/V7__operations.sql
\i src/main/resources/db/migration/V8__users.sql
\i src/main/resources/db/migration/V9__nodes_acknowledged.sql
INSERT INTO nodes (id, name, team, environment, address, public_key, endpoints, reported_key, telemetry, heartbeat_at,
                   acknowledged_peers, acknowledged_acl, acknowledged_at, created_at, updated_at)
SELECT 'nd_' || lpad(g::text, 8, '0'), 'n' || g, 'core', 'prod', '100.64.0.0'::inet + g, 'k' || g,
       ARRAY['203.0.113.7:41641'], 'k' || g, '{"cpu":0.25}', timestamptz 'epoch' + interval '1 millisecond' * 1700000000000,
       40, 40, timestamptz 'epoch' + interval '1 millisecond' * 1700000000000, now(), now()
FROM generate_series(1, :nodes) g;
VACUUM ANALYZE nodes;
-- one chunk: 2,000 nodes spread over the table, a newer heartbeat, the whole row sent
CREATE TEMP TABLE chunk AS
SELECT array_agg('nd_' || lpad(g::text, 8, '0') ORDER BY g) AS ids, array_agg(1700000030000::int8) AS hb,
       array_agg(NULL::int8) AS prev, array_agg('203.0.113.7:41641'::text) AS ep, array_agg(''::text) AS rt,
       array_agg('fra1'::text) AS relay, array_agg(('k' || g)::text) AS key, array_agg('{"cpu":0.25}'::text) AS tel
FROM generate_series(1, :nodes, greatest(1, :nodes / 2000)) g;

\echo ''
\echo '== 1. V9 schema (index predicate on heartbeat_at), the V9 statement, acknowledged versions unchanged'
\set QUIET off
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, SUMMARY OFF, TIMING OFF)
UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
       endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
       reported_relay = COALESCE(u.relay, n.reported_relay), reported_key = COALESCE(NULLIF(u.key, ''), n.reported_key),
       telemetry = COALESCE(u.tel::jsonb, n.telemetry), stale = false,
       acknowledged_peers = CASE WHEN u.kp IS NULL THEN n.acknowledged_peers ELSE NULLIF(u.kp, -1) END,
       acknowledged_acl = CASE WHEN u.ka IS NULL THEN n.acknowledged_acl ELSE NULLIF(u.ka, -1) END,
       acknowledged_at = CASE WHEN (u.kp IS NOT NULL AND NULLIF(u.kp, -1) IS DISTINCT FROM n.acknowledged_peers)
                                OR (u.ka IS NOT NULL AND NULLIF(u.ka, -1) IS DISTINCT FROM n.acknowledged_acl)
                              THEN (timestamptz 'epoch' + u.hb * interval '1 millisecond') ELSE n.acknowledged_at END
FROM chunk c, UNNEST(c.ids, c.hb, c.prev, c.ep, c.rt, c.relay, c.key, c.tel, array_fill(40::int8, ARRAY[2000]),
                     array_fill(40::int8, ARRAY[2000])) AS u(id, hb, prev, ep, rt, relay, key, tel, kp, ka)
WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'));
ROLLBACK;
\set QUIET on
VACUUM nodes;

-- the V10 schema; the rows were heard from already
\i src/main/resources/db/migration/V10__nodes_heard.sql
VACUUM ANALYZE nodes;

\echo ''
\echo '== 2. V10 schema, the statement before V9 (no acknowledged versions)'
\set QUIET off
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, SUMMARY OFF, TIMING OFF)
UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
       endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
       reported_relay = COALESCE(u.relay, n.reported_relay), reported_key = COALESCE(NULLIF(u.key, ''), n.reported_key),
       telemetry = COALESCE(u.tel::jsonb, n.telemetry), stale = false, heard = true
FROM chunk c, UNNEST(c.ids, c.hb, c.prev, c.ep, c.rt, c.relay, c.key, c.tel) AS u(id, hb, prev, ep, rt, relay, key, tel)
WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'));
ROLLBACK;
\set QUIET on
VACUUM nodes;

\echo ''
\echo '== 3. V10 schema, the statement now, acknowledged versions changed (acknowledged_at stamped)'
\set QUIET off
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, SUMMARY OFF, TIMING OFF)
UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
       endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
       reported_relay = COALESCE(u.relay, n.reported_relay), reported_key = COALESCE(NULLIF(u.key, ''), n.reported_key),
       telemetry = COALESCE(u.tel::jsonb, n.telemetry), stale = false, heard = true,
       acknowledged_peers = CASE WHEN u.kp IS NULL THEN n.acknowledged_peers ELSE NULLIF(u.kp, -1) END,
       acknowledged_acl = CASE WHEN u.ka IS NULL THEN n.acknowledged_acl ELSE NULLIF(u.ka, -1) END,
       acknowledged_at = CASE WHEN (u.kp IS NOT NULL AND NULLIF(u.kp, -1) IS DISTINCT FROM n.acknowledged_peers)
                                OR (u.ka IS NOT NULL AND NULLIF(u.ka, -1) IS DISTINCT FROM n.acknowledged_acl)
                              THEN (timestamptz 'epoch' + u.hb * interval '1 millisecond') ELSE n.acknowledged_at END
FROM chunk c, UNNEST(c.ids, c.hb, c.prev, c.ep, c.rt, c.relay, c.key, c.tel, array_fill(41::int8, ARRAY[2000]),
                     array_fill(41::int8, ARRAY[2000])) AS u(id, hb, prev, ep, rt, relay, key, tel, kp, ka)
WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'));
ROLLBACK;
\set QUIET on
VACUUM nodes;

\echo ''
\echo '== 4. V10 schema, the statement now, acknowledged versions unchanged (the common case)'
\set QUIET off
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, SUMMARY OFF, TIMING OFF)
UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
       endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
       reported_relay = COALESCE(u.relay, n.reported_relay), reported_key = COALESCE(NULLIF(u.key, ''), n.reported_key),
       telemetry = COALESCE(u.tel::jsonb, n.telemetry), stale = false, heard = true,
       acknowledged_peers = CASE WHEN u.kp IS NULL THEN n.acknowledged_peers ELSE NULLIF(u.kp, -1) END,
       acknowledged_acl = CASE WHEN u.ka IS NULL THEN n.acknowledged_acl ELSE NULLIF(u.ka, -1) END,
       acknowledged_at = CASE WHEN (u.kp IS NOT NULL AND NULLIF(u.kp, -1) IS DISTINCT FROM n.acknowledged_peers)
                                OR (u.ka IS NOT NULL AND NULLIF(u.ka, -1) IS DISTINCT FROM n.acknowledged_acl)
                              THEN (timestamptz 'epoch' + u.hb * interval '1 millisecond') ELSE n.acknowledged_at END
FROM chunk c, UNNEST(c.ids, c.hb, c.prev, c.ep, c.rt, c.relay, c.key, c.tel, array_fill(40::int8, ARRAY[2000]),
                     array_fill(40::int8, ARRAY[2000])) AS u(id, hb, prev, ep, rt, relay, key, tel, kp, ka)
WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'));
ROLLBACK;
\set QUIET on
VACUUM nodes;

\c postgres
DROP DATABASE meshplane_flush_ack_cost;
