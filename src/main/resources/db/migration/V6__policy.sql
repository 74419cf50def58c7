-- ACL policy, peer sets and the change log they are computed from (docs/API.md §10, §11).
--
-- mesh_changes is the ordered log of every change that shapes what nodes are told in heartbeat
-- answers: enrollments, deletions, re-tags, policy versions, and the live changes a write-behind flush
-- or a staleness scan finds (endpoints, key, first heartbeat, stale/online). Every replica tails it and
-- applies it in seq order to its in-memory peer model, so two replicas that have applied the log up to
-- the same seq hold the same model, and a version handed to a node (a seq) means the same content on
-- every replica. The writer of an entry first bumps mesh_clock in its own transaction: that row lock
-- serialises the writers, so seq order is commit order and a reader that sees seq n has every entry
-- below n too (no gaps to wait for). Writers are rare next to heartbeats (one per flush that changed
-- something, per scan that found transitions, per operator change).
CREATE TABLE mesh_clock (
  id   boolean PRIMARY KEY DEFAULT true CHECK (id),
  seq  bigint NOT NULL
);
INSERT INTO mesh_clock (id, seq) VALUES (true, 0);

CREATE TABLE mesh_changes (
  seq   bigint PRIMARY KEY,
  at    timestamptz NOT NULL DEFAULT now(),
  kind  text NOT NULL,
  data  jsonb NOT NULL
);
CREATE INDEX mesh_changes_at ON mesh_changes (at);

-- Every version of every team+environment's policy; the current one is the highest. Version 0 (no
-- row) is the empty policy: no grants, so no peers and no inbound rules.
CREATE TABLE acl_policies (
  team              text NOT NULL,
  environment       text NOT NULL,
  version           bigint NOT NULL CHECK (version > 0),
  policy            jsonb NOT NULL,
  created_at        timestamptz NOT NULL,
  actor_type        text NOT NULL,
  actor_id          text NOT NULL,
  actor_name        text NOT NULL,
  restored_from     bigint,
  PRIMARY KEY (team, environment, version)
);

-- The staleness monitors' verdict, kept with the record so that a replica that loads the peer model
-- from a snapshot knows which peers are online (peers carry `online`). Not indexed: updates stay HOT.
ALTER TABLE nodes ADD COLUMN stale boolean NOT NULL DEFAULT false;
-- Least-loaded relay at enrollment, and GET /v1/relays counts: an index-only count per relay.
CREATE INDEX nodes_relay ON nodes (relay);

-- Details of an audit event where the action has more to say (a policy update: old and new version).
ALTER TABLE audit_events ADD COLUMN details jsonb;

ALTER TABLE node_events DROP CONSTRAINT node_events_type_check;
ALTER TABLE node_events ADD CONSTRAINT node_events_type_check CHECK (type IN ('node.stale', 'node.online', 'node.policy_drift'));
