-- MeshCA hostname certificates (docs/ARCHITECTURE.md, "MeshCA"; docs/API.md, "A hostname certificate"):
-- an ingress node's certificate for the hostnames of the `tls: meshca` routes it serves. It is a row of
-- meshca_certificates like a node certificate (the same serials, revocation, CRL and revocation list),
-- told apart by its DNS names; a node certificate has none (NULL).
ALTER TABLE meshca_certificates ADD COLUMN hostnames text[];
-- a node's current certificate (MeshCA's summary, the gauge) is its latest unrevoked *node*
-- certificate: the partial index leaves hostname certificates out, so the summary stays one probe per
-- node read without the table
DROP INDEX meshca_certificates_current;
CREATE INDEX meshca_certificates_current ON meshca_certificates (node_id, not_after DESC) INCLUDE (not_before)
  WHERE revoked_at IS NULL AND hostnames IS NULL;
