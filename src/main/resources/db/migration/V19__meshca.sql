-- MeshCA (docs/ARCHITECTURE.md, "MeshCA"; docs/API.md, "MeshCA"): the certificate authorities of the
-- mesh and the node certificates they issued. Written by the meshca feature only.

-- A root or an intermediate. Only `active` ones are used today; `staged`, `retiring` and `retired` are
-- the phases of a rotation (the plan in docs/ARCHITECTURE.md), so the rows already say where each is.
CREATE TABLE meshca_authorities (
  id          text PRIMARY KEY,
  kind        text NOT NULL CHECK (kind IN ('root', 'intermediate')),
  parent      text REFERENCES meshca_authorities (id),
  state       text NOT NULL CHECK (state IN ('staged', 'active', 'retiring', 'retired')),
  -- the certificate, DER
  certificate bytea NOT NULL,
  -- the private key (PKCS#8) sealed by KeyVault: v1 ‖ nonce ‖ ciphertext ‖ tag, the id as associated
  -- data; null for a root whose key is kept outside the coordinator
  sealed_key  bytea,
  not_before  timestamptz NOT NULL,
  not_after   timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'root') = (parent IS NULL)),
  CHECK (not_after > not_before)
);
-- one active authority of each kind: two replicas that start together cannot both create a hierarchy
CREATE UNIQUE INDEX meshca_authorities_one_active ON meshca_authorities (kind) WHERE state = 'active';

-- A node certificate. The serial is 128 random bits written as 32 lower-case hex digits: the API's
-- identifier as it stands (a path segment, a cursor part), compared and ordered like the number
-- because the width is fixed, and read by the reactive client as text (numeric would need a
-- conversion on every read and write).
CREATE TABLE meshca_certificates (
  serial        text PRIMARY KEY CHECK (serial ~ '^[0-9a-f]{32}$'),
  node_id       text NOT NULL,
  team          text NOT NULL,
  environment   text NOT NULL,
  -- SHA-256 of the certificate's SubjectPublicKeyInfo (DER), hex: revocations name a key this way
  spki_sha256   text NOT NULL CHECK (spki_sha256 ~ '^[0-9a-f]{64}$'),
  -- the node's WireGuard public key the certificate was issued for (a re-key reissues)
  wireguard_key text NOT NULL,
  issuer        text NOT NULL REFERENCES meshca_authorities (id),
  certificate   bytea NOT NULL,
  not_before    timestamptz NOT NULL,
  not_after     timestamptz NOT NULL,
  issued_at     timestamptz NOT NULL,
  revoked_at    timestamptz,
  -- RFC 5280's CRLReason names (certificateHold and removeFromCRL are not offered: a revocation is final)
  reason        text CHECK (reason IN ('unspecified', 'keyCompromise', 'cACompromise', 'affiliationChanged', 'superseded',
                                       'cessationOfOperation', 'privilegeWithdrawn', 'aACompromise')),
  -- the seq of the change log's `pki` entry that announced the revocation: the revocation list's
  -- version is the greatest of them, the same on every replica
  revoked_seq   bigint,
  CHECK ((revoked_at IS NULL) = (reason IS NULL) AND (revoked_at IS NULL) = (revoked_seq IS NULL))
);
-- GET /v1/meshca/certificates orders by (not_after, serial): soonest to expire first.
--   one node's certificates (?node=)
CREATE INDEX meshca_certificates_node ON meshca_certificates (node_id, not_after, serial);
--   a scope's certificates in order, and every team's (?expiring_within=, ?state=: ranges of not_after)
CREATE INDEX meshca_certificates_scope_expiry ON meshca_certificates (team, environment, not_after, serial);
CREATE INDEX meshca_certificates_expiry ON meshca_certificates (not_after, serial);
--   the revoked ones (?state=revoked), and the unexpired revoked ones, which the CRL and the
--   revocation list read: a partial index as small as the revocations
CREATE INDEX meshca_certificates_revoked ON meshca_certificates (not_after, serial) WHERE revoked_at IS NOT NULL;
