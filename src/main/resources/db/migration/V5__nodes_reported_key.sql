-- The public key a node last reported in a heartbeat (next to reported_relay): the write-behind keeps
-- it, so that a change of the reported key is noticed (the node-change event KEY_CHANGED, and the
-- re-key operation's verification) and survives a full-cluster restart (the live map is seeded from it).
-- A constant default: PostgreSQL adds the column without rewriting the table.
ALTER TABLE nodes ADD COLUMN reported_key text NOT NULL DEFAULT '';
