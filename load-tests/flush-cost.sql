-- What one write-behind statement costs PostgreSQL: the flush UPDATE of one chunk (2,000 rows) of a
-- NODES-row table, as the service sends it (a prepared statement with array parameters), in three
-- versions: before node-change events (de7f10e); with the change report as a self-join on the old row
-- (3337a78, replaced); with the change report computed in the SET list (now). Shared-buffer hits are
-- deterministic; the times are not (run it twice). Each statement runs in a transaction rolled back,
-- followed by a VACUUM.
-- Run from the repository's root (it reads the migrations), against a scratch database it creates:
--   psql -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1 -v nodes=10000 -f load-tests/flush-cost.sql
\if :{?nodes}
\else
  \set nodes 10000
\endif
\set QUIET on
DROP DATABASE IF EXISTS meshplane_flush_cost;
CREATE DATABASE meshplane_flush_cost;
\c meshplane_flush_cost
SET client_min_messages = warning;
\i src/main/resources/db/migration/V1__foundation.sql
\i src/main/resources/db/migration/V2__tokens_and_audit.sql
\i src/main/resources/db/migration/V3__nodes.sql
\i src/main/resources/db/migration/V4__nodes_fillfactor.sql
\i src/main/resources/db/migration/V5__nodes_reported_key.sql
INSERT INTO nodes (id, name, team, environment, address, public_key, endpoints, reported_key, telemetry, heartbeat_at, created_at, updated_at)
SELECT 'nd_' || lpad(g::text, 8, '0'), 'n' || g, 'core', 'prod', '100.64.0.0'::inet + g, 'k' || g,
       ARRAY['203.0.113.7:41641'], 'k' || g, '{"cpu":0.25}', timestamptz 'epoch' + interval '1 millisecond' * 1700000000000, now(), now()
FROM generate_series(1, :nodes) g;
VACUUM ANALYZE nodes;
-- one chunk: 2,000 nodes spread over the table with a newer heartbeat, sent whole (as after a node's
-- first heartbeat since this member last wrote it: the common case for a fleet beating every 30 s);
-- one node in ten reports new endpoints
SELECT array_agg('nd_' || lpad(g::text, 8, '0'))::text AS ids, array_agg(1700000001000::int8)::text AS hb,
       array_agg(NULL::int8)::text AS prev,
       array_agg(CASE WHEN i % 10 = 0 THEN '198.51.100.9:41641' ELSE '203.0.113.7:41641' END)::text AS ep,
       array_agg(''::text)::text AS rt, array_agg(''::text)::text AS relay, array_agg('k' || g)::text AS k,
       array_agg('{"cpu":0.25}'::text)::text AS tel
FROM (SELECT i, 1 + i * (:nodes / 2000) AS g FROM generate_series(0, 1999) i) c \gset

PREPARE before_events(text[], int8[], int8[], text[], text[], text[], text[]) AS
UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
       endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
       reported_relay = COALESCE(u.relay, n.reported_relay), telemetry = COALESCE(u.tel::jsonb, n.telemetry)
FROM UNNEST($1, $2, $3, $4, $5, $6, $7) AS u(id, hb, prev, ep, rt, relay, tel)
WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'))
  AND (u.prev IS NULL OR n.heartbeat_at = (timestamptz 'epoch' + u.prev * interval '1 millisecond'));

PREPARE self_join(text[], int8[], int8[], text[], text[], text[], text[], text[]) AS
WITH written AS (
  UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
         endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
         reported_relay = COALESCE(u.relay, n.reported_relay), reported_key = COALESCE(u.key, n.reported_key),
         telemetry = COALESCE(u.tel::jsonb, n.telemetry)
  FROM UNNEST($1, $2, $3, $4, $5, $6, $7, $8) AS u(id, hb, prev, ep, rt, relay, key, tel)
       JOIN nodes o ON o.id = u.id
  WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'))
    AND (u.prev IS NULL OR n.heartbeat_at = (timestamptz 'epoch' + u.prev * interval '1 millisecond'))
  RETURNING n.id, o.endpoints IS DISTINCT FROM n.endpoints AS ep, o.reported_relay IS DISTINCT FROM n.reported_relay AS relay,
            o.reported_key IS DISTINCT FROM n.reported_key AS key)
SELECT count(*) AS rows, array_agg(id) FILTER (WHERE ep) AS ep, array_agg(id) FILTER (WHERE relay) AS relay,
       array_agg(id) FILTER (WHERE key) AS key
FROM written;

-- the statement of LiveRepository.flush
PREPARE in_set_list(text[], int8[], int8[], text[], text[], text[], text[], text[]) AS
WITH written AS (
  UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
         endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
         reported_relay = COALESCE(u.relay, n.reported_relay), reported_key = COALESCE(NULLIF(u.key, ''), n.reported_key),
         telemetry = COALESCE(u.tel::jsonb, n.telemetry),
         flush_changes = (CASE WHEN COALESCE(string_to_array(u.ep, ','), n.endpoints) IS DISTINCT FROM n.endpoints THEN 1 ELSE 0 END)
                       | (CASE WHEN COALESCE(u.relay, n.reported_relay) IS DISTINCT FROM n.reported_relay THEN 2 ELSE 0 END)
                       | (CASE WHEN n.reported_key <> '' AND COALESCE(NULLIF(u.key, ''), n.reported_key) <> n.reported_key
                               THEN 4 ELSE 0 END)
  FROM UNNEST($1, $2, $3, $4, $5, $6, $7, $8) AS u(id, hb, prev, ep, rt, relay, key, tel)
  WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'))
    AND (u.prev IS NULL OR n.heartbeat_at = (timestamptz 'epoch' + u.prev * interval '1 millisecond'))
  RETURNING n.id, n.flush_changes AS c)
SELECT count(*) AS rows, array_agg(id) FILTER (WHERE c & 1 <> 0) AS ep, array_agg(id) FILTER (WHERE c & 2 <> 0) AS relay,
       array_agg(id) FILTER (WHERE c & 4 <> 0) AS key
FROM written;

\echo === before (de7f10e): no change report
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE before_events(:'ids', :'hb', :'prev', :'ep', :'rt', :'relay', :'tel');
ROLLBACK;
VACUUM nodes;  -- the rolled-back row versions would slow the next statement down
\echo === 3337a78: change report by a self-join on the old row
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE self_join(:'ids', :'hb', :'prev', :'ep', :'rt', :'relay', :'k', :'tel');
ROLLBACK;
VACUUM nodes;  -- the rolled-back row versions would slow the next statement down
\echo === now: change report computed in the SET list
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE in_set_list(:'ids', :'hb', :'prev', :'ep', :'rt', :'relay', :'k', :'tel');
ROLLBACK;
VACUUM nodes;  -- the rolled-back row versions would slow the next statement down
\echo === now, the answer (rows written; whose endpoints, relay, key changed: one in ten, none, none)
BEGIN;
EXECUTE in_set_list(:'ids', :'hb', :'prev', :'ep', :'rt', :'relay', :'k', :'tel') \gset r_
SELECT :r_rows AS rows, cardinality(:'r_ep'::text[]) AS endpoints_changed;
-- an empty list comes back as NULL, which leaves the variable unset
\echo relay changed for some node: :{?r_relay}, key changed for some node: :{?r_key}
ROLLBACK;
\c postgres
DROP DATABASE meshplane_flush_cost;
