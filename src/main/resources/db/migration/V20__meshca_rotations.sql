-- MeshCA rotations (docs/ARCHITECTURE.md, "MeshCA: rotation"): replacing the intermediate, or the root
-- and its intermediate, through phases that advance only when the fleet's heartbeats show every online
-- node holds what the next phase needs. Written by the meshca feature only.

-- Several roots may be active at once (the bundle lists every active and retiring root: during a root
-- rotation the old and the new); one intermediate signs at a time.
DROP INDEX meshca_authorities_one_active;
CREATE UNIQUE INDEX meshca_authorities_one_signing ON meshca_authorities (kind) WHERE state = 'active' AND kind = 'intermediate';

-- A root rotation's new root, signed by the old root (same subject and key as the new root): the chain
-- a node presents during the rotation ends with it, so a peer that trusts only the old root verifies
-- a certificate from the new intermediate too. DER; null for an intermediate rotation.
ALTER TABLE meshca_authorities ADD COLUMN cross_signed bytea;

CREATE TABLE meshca_rotations (
  id               text PRIMARY KEY,
  kind             text NOT NULL CHECK (kind IN ('intermediate', 'root')),
  -- staged -> distributing -> issuing -> retired; rolled_back from any phase before retired
  phase            text NOT NULL CHECK (phase IN ('staged', 'distributing', 'issuing', 'retired', 'rolled_back')),
  old_root         text NOT NULL REFERENCES meshca_authorities (id),
  old_intermediate text NOT NULL REFERENCES meshca_authorities (id),
  -- the new root (a root rotation), else null: the new intermediate is signed by the old root
  new_root         text REFERENCES meshca_authorities (id),
  new_intermediate text NOT NULL REFERENCES meshca_authorities (id),
  -- started by the coordinator (the intermediate at two thirds of its life), not by a caller
  automatic        boolean NOT NULL,
  started_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  finished_at      timestamptz,
  CHECK ((kind = 'root') = (new_root IS NOT NULL)),
  CHECK ((phase IN ('retired', 'rolled_back')) = (finished_at IS NOT NULL))
);
-- one rotation at a time
CREATE UNIQUE INDEX meshca_rotations_one_open ON meshca_rotations ((true)) WHERE finished_at IS NULL;
CREATE INDEX meshca_rotations_started ON meshca_rotations (started_at DESC, id);

-- A node operation that asks the node's agent for a new MeshCA certificate (verified by the serial its
-- next heartbeats report).
ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check CHECK (kind IN ('rekey', 'move_relay', 'drain_ingress', 'reissue_certificate'));
