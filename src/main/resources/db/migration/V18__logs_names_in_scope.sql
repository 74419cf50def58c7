-- The logs' name filters match a whole name, not a prefix (docs/ARCHITECTURE.md, "The logs people
-- read"): after the name, V16's byte-wise indexes are in the list's order, so a page reads its own rows.
-- V16's indexes serve a caller of every team; these serve a caller inside one team and environment, so
-- that a name common in another team (ci, admin, web-1) costs nothing to a caller who has none of it.
CREATE INDEX audit_events_scope_actor_name_time ON audit_events (team, environment, (actor_name COLLATE "C"), at DESC, id DESC);
CREATE INDEX node_events_scope_node_name ON node_events (team, environment, (node_name COLLATE "C"), id);
