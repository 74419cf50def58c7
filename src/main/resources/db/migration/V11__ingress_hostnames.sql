-- A public ingress hostname belongs to one ingress of the whole mesh, whatever its node's team and
-- environment (API.md §9, POST /v1/nodes/{id}/ingress): two teams assigning web.example.net would
-- each send their agent traffic meant for the other.
--
-- One row per hostname held: by an ingress that is `active` or `draining` (nodes.ingress keeps the
-- entries themselves). The row is written in the transaction that assigns the ingress, under the node's
-- row lock, and deleted in the one that marks it `drained` or replaces it; the node's deletion removes
-- its rows (ON DELETE CASCADE). The primary key decides between two assignments of one hostname at
-- once: the second waits for the first to commit and fails with 23505, which the service answers as
-- 409 conflict. Hostnames are compared as DNS compares them, without case: the key is lower-cased (the
-- API accepts lower case only, the check keeps anything else out).
CREATE TABLE ingress_hostnames (
  hostname  text PRIMARY KEY CHECK (hostname = lower(hostname)),
  node_id   text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  -- the name of the node's ingress that holds it
  ingress   text NOT NULL,
  -- one hostname per ingress; also the index the cascade and the release look rows up by
  UNIQUE (node_id, ingress)
);

-- The hostnames already held. Should two ingress hold one before this migration, the one of the node
-- enrolled first keeps it; the other keeps its entry in nodes.ingress but holds nothing, and its drain
-- or replacement releases nothing of the first.
INSERT INTO ingress_hostnames (hostname, node_id, ingress)
SELECT lower(e->>'hostname'), n.id, e->>'name'
FROM nodes n CROSS JOIN LATERAL jsonb_array_elements(n.ingress) AS e
WHERE e->>'state' <> 'drained'
ORDER BY n.created_at, n.id
ON CONFLICT DO NOTHING;
