-- Single sign-on (docs/API.md §17, docs/ARCHITECTURE.md "Single sign-on"): a panel user is either
-- local (a password, set by an admin or the command line) or comes from the OpenID Connect identity
-- provider, found again at each login by its issuer and subject (never by its name, which the IdP's
-- users may choose). An IdP user has no password: its password_hash is a marker no password matches.
ALTER TABLE users
  ADD COLUMN source text NOT NULL DEFAULT 'local' CHECK (source IN ('local', 'oidc')),
  ADD COLUMN oidc_issuer text,
  ADD COLUMN oidc_subject text,
  ADD CONSTRAINT users_oidc_identity CHECK ((source = 'oidc') = (oidc_issuer IS NOT NULL AND oidc_subject IS NOT NULL));
CREATE UNIQUE INDEX users_oidc ON users (oidc_issuer, oidc_subject) WHERE source = 'oidc';
