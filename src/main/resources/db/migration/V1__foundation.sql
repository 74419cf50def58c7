-- Facts about this installation (one row per key). The installation id tells operators which
-- database a replica is attached to, and survives restarts like every other row.
CREATE TABLE mesh_meta (
  key        text PRIMARY KEY,
  value      text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO mesh_meta (key, value) VALUES ('installation_id', 'inst_' || md5(random()::text || clock_timestamp()::text));
