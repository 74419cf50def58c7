-- The inventory's orders (GET /v1/nodes?sort=, docs/API.md §8) page by keyset: (name, id) after the
-- cursor's key. One index per order and scope shape, so the first page and a deep page each read
-- about `limit` index entries (load-tests/RESULTS.md, "Inventory at 100,000 nodes"):
--   every team (a wide caller, no team filter) .......... (name, id)
--   one team, every environment .......................... (team, name, id)
--   one team and environment (most callers) .............. (team, environment, name, id)
-- Read backwards for sort=-name. The name is written at enrollment only, so these indexes cost an
-- enrollment three more index insertions and the write-behind's row updates nothing (they stay HOT).
--
-- No index for sort=heartbeat or sort=status (the heartbeat order): an index naming heartbeat_at
-- would make every write-behind update of a row a non-HOT update (V10; HotUpdatesTest). Those orders
-- read the scope and keep the top `limit` rows (a top-N sort): measured at 100,000 nodes in RESULTS.md.
--
-- The mesh-address search (address=) uses the unique index on address (V3) as a range.
CREATE INDEX nodes_name_id ON nodes (name, id);
CREATE INDEX nodes_team_name_id ON nodes (team, name, id);
CREATE INDEX nodes_scope_name_id ON nodes (team, environment, name, id);
