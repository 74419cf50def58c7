-- Logs people can read (docs/DASHBOARD.md, Audit log and Events). The audit trail records the name of
-- the object acted on (a node's, token's or user's) next to its id when the action knows it; rows
-- written before carry null and are shown by id. Both logs filter by a name prefix: the trail by its
-- actor's name, the node events by the node's name. Each prefix is a range of a byte-wise ("C"
-- collation) index, whatever the database's locale; the events' newest-first order reads the id
-- indexes of V3 and V13 backwards and needs none.
ALTER TABLE audit_events ADD COLUMN target_name text;
CREATE INDEX audit_events_actor_name_time ON audit_events ((actor_name COLLATE "C"), at DESC, id DESC);
CREATE INDEX node_events_node_name ON node_events ((node_name COLLATE "C"), id);
