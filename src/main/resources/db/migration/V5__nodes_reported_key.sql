-- The public key a node last reported in a heartbeat (next to reported_relay; a heartbeat without one
-- keeps it): the write-behind keeps it, so that a change of the reported key is noticed (the
-- node-change event KEY_CHANGED, and the re-key operation's verification) and survives a full-cluster
-- restart (the live map is seeded from it). '' = none reported yet; the first key is not a change.
--
-- flush_changes: what the write-behind's last write of the row changed, as bits (1 endpoints,
-- 2 reported relay, 4 reported key). The flush UPDATE computes it in its SET list, where the row's old
-- values are at hand, and reads it back with RETURNING: the node-change events come from what the row
-- held, at no extra read (a self-join on the old row doubled the statement's buffer reads).
--
-- Constant defaults: PostgreSQL adds both columns without rewriting the table. Neither is indexed,
-- so the write-behind's row updates stay HOT.
ALTER TABLE nodes ADD COLUMN reported_key text NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN flush_changes smallint NOT NULL DEFAULT 0;
