-- One key per node: a node's public key is its identity on the mesh, so no two nodes may hold the same
-- current key (the last one its heartbeats reported, else the one it enrolled with).
--
-- current_key is that key, computed by PostgreSQL on every write of the row, and the unique index on
-- it is the constraint. The write-behind's row updates stay HOT: they leave current_key unchanged
-- unless the node re-keyed (an update changes an indexed column only then).
--
-- Adding a stored generated column rewrites the table (seconds at a million nodes, under an ACCESS
-- EXCLUSIVE lock: replicas still on V11 wait meanwhile). A database that already holds two nodes with
-- one key (possible before this version) is not upgraded: the migration stops and names them; delete
-- all but one node of each key (DELETE /v1/nodes/{id}), then start again.
DO $$
DECLARE
  dup text;
BEGIN
  SELECT string_agg(k || ' (nodes ' || ids || ')', '; ') INTO dup FROM (
    SELECT COALESCE(NULLIF(reported_key, ''), public_key) AS k, string_agg(id, ', ' ORDER BY id) AS ids
    FROM nodes GROUP BY 1 HAVING count(*) > 1 ORDER BY 1 LIMIT 10) d;
  IF dup IS NOT NULL THEN
    RAISE EXCEPTION 'V12: nodes share a public key; delete all but one node of each key before upgrading: %', dup;
  END IF;
END $$;

ALTER TABLE nodes ADD COLUMN current_key text GENERATED ALWAYS AS (COALESCE(NULLIF(reported_key, ''), public_key)) STORED;
CREATE UNIQUE INDEX nodes_current_key ON nodes (current_key);
