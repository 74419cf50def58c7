-- Ingress routes (docs/API.md §18, docs/ARCHITECTURE.md "Ingress routes"): ordered rules per
-- team+environment, each sending a hostname and path prefix to a node's bound service, served by the
-- ingress nodes that carry ingress_tag. Written only by the ingress feature, under the change log's
-- clock lock (taken first), so that every change of one team+environment's rules, its version and a
-- hostname's owning team are decided one at a time.
CREATE TABLE ingress_routes (
  id              text PRIMARY KEY,
  team            text NOT NULL,
  environment     text NOT NULL,
  -- 1..n within the team+environment, dense: the order in which an ingress node tries the rules
  position        integer NOT NULL CHECK (position > 0),
  -- LDH ASCII lower case (IDN as punycode A-labels), optionally '*.' as the leftmost label
  hostname        text NOT NULL CHECK (hostname = lower(hostname)),
  path_prefix     text NOT NULL,
  target_node     text NOT NULL,
  target_service  text NOT NULL,
  exposure        text NOT NULL CHECK (exposure IN ('public', 'mesh')),
  tls             text NOT NULL CHECK (tls IN ('acme', 'meshca')),
  ingress_tag     text NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  UNIQUE (team, environment, position) DEFERRABLE INITIALLY DEFERRED
);
-- a hostname's owning team (another team's create is a 409), and the list filter by hostname
CREATE INDEX ingress_routes_hostname ON ingress_routes (hostname);
-- routes whose target a deleted node was
CREATE INDEX ingress_routes_target ON ingress_routes (target_node);

-- One counter per team+environment, bumped by every change of its routes (the ETag, and the version
-- ingress nodes are sent). No row: version 0, no routes ever.
CREATE TABLE ingress_versions (
  team         text NOT NULL,
  environment  text NOT NULL,
  version      bigint NOT NULL CHECK (version > 0),
  PRIMARY KEY (team, environment)
);
