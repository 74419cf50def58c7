-- The fleet-wide operations list (GET /v1/operations, docs/API.md §9): newest first by
-- (requested_at, id), in the caller's scope, filtered by kind, status, node and time. Each index serves
-- one shape of that query with an ordered range scan that stops after one page, whatever the filters
-- (load-tests/list-cost.sh measures each at 10^6 operations):
--   no kind or status filter: the scope's operations in order (and every team's, for `*` callers);
CREATE INDEX operations_scope_time ON operations (team, environment, requested_at DESC, id DESC);
CREATE INDEX operations_time ON operations (requested_at DESC, id DESC);
--   kind and/or status: one ordered scan per (kind, status) pair asked for (at most 3 x 5), merged;
CREATE INDEX operations_scope_kind_status_time ON operations (team, environment, kind, status, requested_at DESC, id DESC);
CREATE INDEX operations_kind_status_time ON operations (kind, status, requested_at DESC, id DESC);
--   one node: its operations in order.
CREATE INDEX operations_node_time ON operations (node_id, requested_at DESC, id DESC);
