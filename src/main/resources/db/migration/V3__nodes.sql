-- Nodes (docs/API.md §8). The record is written at enrollment and by node operations; the live fields
-- (endpoints, reported relay and routes, telemetry, heartbeat_at) are written by the write-behind
-- flusher, at most once per node per flush interval, from the cluster's live map.
CREATE SEQUENCE node_address_seq MINVALUE 1 START 1;

CREATE TABLE nodes (
  id            text PRIMARY KEY,
  name          text NOT NULL,
  team          text NOT NULL,
  environment   text NOT NULL,
  address       inet NOT NULL UNIQUE,
  public_key    text NOT NULL,
  tags          text[] NOT NULL DEFAULT '{}',
  relay         text NOT NULL DEFAULT '',
  services      text[] NOT NULL DEFAULT '{}',
  endpoints     text[] NOT NULL DEFAULT '{}',
  routes        text[] NOT NULL DEFAULT '{}',
  reported_relay text NOT NULL DEFAULT '',
  telemetry     jsonb NOT NULL DEFAULT '{}',
  heartbeat_at  timestamptz,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  UNIQUE (team, environment, name)
);
CREATE INDEX nodes_scope_id ON nodes (team, environment, id);

-- Node state changes found by the staleness monitors (node.stale, node.online), exactly once each.
CREATE TABLE node_events (
  id           text PRIMARY KEY,
  at           timestamptz NOT NULL,
  type         text NOT NULL CHECK (type IN ('node.stale', 'node.online')),
  node_id      text NOT NULL,
  node_name    text NOT NULL,
  team         text NOT NULL,
  environment  text NOT NULL,
  last_heartbeat timestamptz
);
CREATE INDEX node_events_scope_id ON node_events (team, environment, id);
CREATE INDEX node_events_id ON node_events (id);
