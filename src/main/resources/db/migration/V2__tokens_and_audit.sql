-- Scoped tokens (docs/API.md §3, §5). The JWT itself is never stored: only its metadata. An agent token
-- (surface 'agent') belongs to one node (node_id) and is issued at enrollment.
CREATE TABLE tokens (
  id           text PRIMARY KEY,
  name         text NOT NULL,
  team         text NOT NULL,
  environment  text NOT NULL,
  surface      text NOT NULL CHECK (surface IN ('admin', 'operator', 'enrollment', 'pipeline', 'monitoring', 'agent')),
  node_id      text,
  key_id       text NOT NULL,
  expires_at   timestamptz NOT NULL,
  created_at   timestamptz NOT NULL,
  created_by   text NOT NULL,
  revoked_at   timestamptz,
  retire_at    timestamptz,          -- set by a rotation: the token stops working at min(expires_at, retire_at)
  rotated_to   text REFERENCES tokens (id),
  last_used_at timestamptz           -- coalesced: written at most once per flush period
);
-- Scoped listing in id order (keyset pagination).
CREATE INDEX tokens_scope_id ON tokens (team, environment, id);
-- Start-up load of the tokens that must be denied before their expiry.
CREATE INDEX tokens_denied ON tokens (expires_at) WHERE revoked_at IS NOT NULL OR retire_at IS NOT NULL;

-- Audit trail (docs/API.md §7): append-only, newest first.
CREATE TABLE audit_events (
  id           text PRIMARY KEY,
  at           timestamptz NOT NULL,
  actor_type   text NOT NULL,
  actor_id     text NOT NULL,
  actor_name   text NOT NULL,
  action       text NOT NULL,
  target_type  text,
  target_id    text,
  outcome      text NOT NULL CHECK (outcome IN ('success', 'denied', 'failed')),
  request_id   text,
  source_ip    text,
  team         text NOT NULL,
  environment  text NOT NULL
);
CREATE INDEX audit_events_time ON audit_events (at DESC, id DESC);
CREATE INDEX audit_events_scope_time ON audit_events (team, environment, at DESC, id DESC);
CREATE INDEX audit_events_actor_time ON audit_events (actor_id, at DESC, id DESC);
