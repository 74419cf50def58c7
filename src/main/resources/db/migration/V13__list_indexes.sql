-- Lists whose filters read the whole scope to fill a page (load-tests/list-cost.sh measures each):
-- the audit trail by action (in a scope, and across every team for wide credentials), a scope's
-- people's tokens among one agent token per node, and a node's events. Each index serves one filter of
-- a list route with a range scan; every list also runs under postgres.read_timeout on the read pool.
CREATE INDEX audit_events_scope_action_time ON audit_events (team, environment, action, at DESC, id DESC);
CREATE INDEX audit_events_action_time ON audit_events (action, at DESC, id DESC);
CREATE INDEX tokens_people_scope_id ON tokens (team, environment, id) WHERE surface <> 'agent';
CREATE INDEX node_events_node_id ON node_events (node_id, id);
