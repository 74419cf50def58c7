-- Traffic policies (the WAF's, API.md §20): every version of each team+environment's document, the
-- current one the highest. The document is kept as the client sent it (its JSON text, re-read by the
-- same parser at each use: the WAF's own code decides what it means); mode is copied out for lists.
CREATE TABLE waf_policies (
  team          text        NOT NULL,
  environment   text        NOT NULL,
  version       bigint      NOT NULL CHECK (version >= 1),
  document      text        NOT NULL,
  mode          text        NOT NULL CHECK (mode IN ('enforce', 'shadow')),
  created_at    timestamptz NOT NULL,
  actor_type    text        NOT NULL,
  actor_id      text        NOT NULL,
  actor_name    text        NOT NULL,
  restored_from bigint,
  PRIMARY KEY (team, environment, version)
);
