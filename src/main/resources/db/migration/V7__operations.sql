-- Node operations, ingress assignments and bound services (docs/API.md §9).
--
-- An operation (rekey, move_relay, drain_ingress) is durable here from the moment it is accepted (202):
-- pending -> delivered (sent as a command in a heartbeat answer) -> succeeded | failed, or expired after
-- its deadline. Every replica learns a node's open operations, ingress and services from `work` entries
-- of the change log (mesh_changes), each carrying the node's whole work after the change, so heartbeat
-- answers never read this table.
CREATE TABLE operations (
  id            text PRIMARY KEY,
  node_id       text NOT NULL,
  team          text NOT NULL,
  environment   text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('rekey', 'move_relay', 'drain_ingress')),
  status        text NOT NULL CHECK (status IN ('pending', 'delivered', 'succeeded', 'failed', 'expired')),
  -- what the operation aims at: {relay, from} for a move, {name} for a drain, {old_key} for a re-key
  target        jsonb NOT NULL DEFAULT '{}',
  actor_type    text NOT NULL,
  actor_id      text NOT NULL,
  actor_name    text NOT NULL,
  requested_at  timestamptz NOT NULL,
  deadline      timestamptz NOT NULL,
  delivered_at  timestamptz,
  completed_at  timestamptz,
  -- {detail, reported} once completed: why it failed, what the agent said
  result        jsonb
);
-- One open operation of a kind per node: a second one is a 409, decided by PostgreSQL, not by a race.
CREATE UNIQUE INDEX operations_open_kind ON operations (node_id, kind) WHERE status IN ('pending', 'delivered');
-- A node's operations, newest last (GET /v1/nodes/{id}/operations pages by id).
CREATE INDEX operations_node ON operations (node_id, id);
-- The expiry sweep reads only open operations past their deadline.
CREATE INDEX operations_open_deadline ON operations (deadline) WHERE status IN ('pending', 'delivered');

-- Ingress assigned to a node: [{name, hostname, port, state: active|draining|drained}], at most 16.
ALTER TABLE nodes ADD COLUMN ingress jsonb NOT NULL DEFAULT '[]';

-- Enrollments that never heartbeat within nodes.pending_ttl are reported once (node.enroll_unconfirmed).
ALTER TABLE node_events DROP CONSTRAINT node_events_type_check;
ALTER TABLE node_events ADD CONSTRAINT node_events_type_check
  CHECK (type IN ('node.stale', 'node.online', 'node.policy_drift', 'node.enroll_unconfirmed'));
CREATE UNIQUE INDEX node_events_unconfirmed_once ON node_events (node_id) WHERE type = 'node.enroll_unconfirmed';
-- The sweep for such enrollments reads only nodes never heard from.
CREATE INDEX nodes_never_heard ON nodes (created_at) WHERE heartbeat_at IS NULL;
