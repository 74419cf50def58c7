#!/usr/bin/env bash
# Snapshots of Meshplane's control-plane state: everything durable (PostgreSQL: tokens, nodes with
# their last flushed heartbeat, policy and its history, operations, audit, events, panel users, the
# address sequence, the schema history) and the signing keys, which make every existing token (agent
# credentials included) verify after a restore.
#
#   ops/snapshot.sh export DIR     write DIR/meshplane.dump, DIR/keys/, DIR/manifest.txt (DIR must not exist)
#   ops/snapshot.sh restore DIR    load DIR into an EMPTY database and an EMPTY keys folder
#
# Where: MESH_PG_URL (postgresql://user[:password]@host:port/db[?params], as the service reads it) and
# MESH_KEYS_DIR (default data/keys). A password in the URL is handed to pg_dump/pg_restore through
# PGPASSWORD, never on their command line. Needs pg_dump and pg_restore of the server's major version
# or newer (Debian: postgresql-client).
#
# Consistency: pg_dump reads one MVCC snapshot, so the dump is consistent while replicas run. The live
# heartbeat state reaches PostgreSQL through the write-behind, so a dump taken under load holds each
# node's heartbeat as of the last flush (writebehind.flush_interval). Restore into a stopped
# deployment (no replica on the target database), then start the replicas: the first one seeds the
# live map from the restored rows. Exit codes: 0 done, 2 refused (usage, target not empty), 1 failed.
set -euo pipefail
umask 077

die() { echo "snapshot: $*" >&2; exit "${2:-1}"; }
usage() { sed -n '7,8p' "$0" | sed 's/^# *//' >&2; exit 2; }

[ $# -eq 2 ] || usage
cmd=$1
dir=$2
url=${MESH_PG_URL:-}
keys=${MESH_KEYS_DIR:-data/keys}
[ -n "$url" ] || die "MESH_PG_URL is not set (postgresql://user@host:port/db)" 2
[[ $url =~ ^postgres(ql)?:// ]] || die "MESH_PG_URL must be a postgresql:// URL" 2

# user:password@ -> PGPASSWORD (percent-decoded), the URL without it
if [[ $url =~ ^(postgres(ql)?://)([^:@/]+):([^@/]*)@(.*)$ ]]; then
  pw=${BASH_REMATCH[4]}
  PGPASSWORD=$(printf '%b' "${pw//%/\\x}")
  export PGPASSWORD
  url="${BASH_REMATCH[1]}${BASH_REMATCH[3]}@${BASH_REMATCH[5]}"
fi
for tool in pg_dump pg_restore psql; do command -v "$tool" >/dev/null || die "$tool is not installed (Debian: postgresql-client)" 2; done

q() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$url" -c "$1"; }

case "$cmd" in
  export)
    [ ! -e "$dir" ] || die "$dir exists already: a snapshot goes into a new folder" 2
    ls "$keys"/*.public.pem >/dev/null 2>&1 || die "no signing keys in $keys (set MESH_KEYS_DIR)" 2
    schema=$(q "SELECT max(version::int) FROM flyway_schema_history WHERE success") || die "cannot read the schema version at the database" 1
    mkdir -p "$dir/keys"
    chmod 700 "$dir" "$dir/keys"
    pg_dump --format=custom --no-owner --no-privileges --file "$dir/meshplane.dump" -d "$url"
    cp -p "$keys"/* "$dir/keys/"
    chmod 600 "$dir"/keys/*
    {
      echo "meshplane snapshot"
      echo "taken_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
      echo "schema_version=$schema"
      echo "nodes=$(q 'SELECT count(*) FROM nodes')"
      echo "tokens=$(q 'SELECT count(*) FROM tokens')"
      echo "policy_versions=$(q 'SELECT count(*) FROM acl_policies')"
      echo "audit_events=$(q 'SELECT count(*) FROM audit_events')"
      echo "dump_sha256=$(sha256sum "$dir/meshplane.dump" | cut -d' ' -f1)"
    } > "$dir/manifest.txt"
    echo "snapshot written to $dir ($(du -sh "$dir" | cut -f1)): $(grep -c = "$dir/manifest.txt") facts in manifest.txt"
    ;;
  restore)
    [ -f "$dir/meshplane.dump" ] && [ -f "$dir/manifest.txt" ] && [ -d "$dir/keys" ] || die "$dir is not a snapshot (meshplane.dump, manifest.txt, keys/)" 2
    want=$(sed -n 's/^dump_sha256=//p' "$dir/manifest.txt")
    [ "$(sha256sum "$dir/meshplane.dump" | cut -d' ' -f1)" = "$want" ] || die "meshplane.dump does not match its manifest (damaged or altered)" 2
    tables=$(q "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") || die "cannot reach the target database" 1
    [ "$tables" = 0 ] || die "the target database is not empty ($tables tables): restore into a new, empty database" 2
    if [ -d "$keys" ] && [ -n "$(ls -A "$keys")" ]; then die "the keys folder $keys is not empty: restore into a new one" 2; fi
    pg_restore --no-owner --no-privileges --exit-on-error --single-transaction -d "$url" "$dir/meshplane.dump"
    mkdir -p "$keys"
    chmod 700 "$keys"
    cp -p "$dir"/keys/* "$keys/"
    chmod 600 "$keys"/*
    echo "snapshot $dir restored: $(grep -E '^(taken_at|schema_version|nodes|tokens)=' "$dir/manifest.txt" | tr '\n' ' ')"
    ;;
  *) usage ;;
esac
