-- Panel users (docs/API.md §17): people who sign in to the web panel. The password is stored only as an
-- argon2id hash in PHC form ($argon2id$v=19$m=…,t=…,p=…$salt$hash); sessions live in the cluster
-- (Hazelcast), not here.
CREATE TABLE users (
  id             text PRIMARY KEY,
  username       text NOT NULL,
  password_hash  text NOT NULL,
  role           text NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
  team           text NOT NULL,
  environment    text NOT NULL,
  disabled       boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  last_login_at  timestamptz,
  created_by     text NOT NULL
);
-- Usernames are stored lower-case; one person, one name.
CREATE UNIQUE INDEX users_username ON users (username);
