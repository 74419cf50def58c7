-- The write-behind's row updates were no longer HOT. V7's partial index nodes_never_heard had
-- `WHERE heartbeat_at IS NULL` as its predicate, and PostgreSQL updates a row in place (HOT) only when
-- no column an index refers to, in its key or its predicate, changes value. Every flush moves
-- heartbeat_at, so from V7 on every row write inserted into all five indexes of nodes: measured on a
-- 10,000-row table (load-tests/flush-ack-cost.sql), 6 WAL records per row written and 0 % HOT,
-- against 100 % HOT once the predicate no longer names heartbeat_at.
--
-- `heard` is what the sweep for unconfirmed enrollments and the pending count need: whether the node
-- ever sent a heartbeat that was written. The flush sets it to true on every write, which changes its
-- value once per node (that first write is not HOT); afterwards the value stays and the updates are
-- HOT again.
--
-- The constant default adds the column without rewriting the table; the UPDATE writes every row that
-- was heard from once (at 100,000 nodes a few seconds; VACUUM reclaims the old versions).
ALTER TABLE nodes ADD COLUMN heard boolean NOT NULL DEFAULT false;
UPDATE nodes SET heard = true WHERE heartbeat_at IS NOT NULL;
DROP INDEX nodes_never_heard;
CREATE INDEX nodes_never_heard ON nodes (created_at) WHERE NOT heard;
