#!/usr/bin/env bash
# Drops what a test suite left on the machine's stores: the Redis keys matching KEYS (a glob) and
# the PostgreSQL tables and functions whose names start with PREFIX_.
# Usage: scripts/clean-stores.sh KEYS PREFIX
set -euo pipefail
keys=$1 prefix=$2
redis=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
redis-cli -u "$redis" --scan --pattern "$keys" | xargs -r redis-cli -u "$redis" del > /dev/null
psql "${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}" -qAt -c "
  DO \$\$ DECLARE t text; BEGIN
    FOR t IN SELECT tablename FROM pg_tables WHERE tablename LIKE '${prefix}\_%' LOOP EXECUTE 'DROP TABLE ' || quote_ident(t) || ' CASCADE'; END LOOP;
    FOR t IN SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE '${prefix}\_%' LOOP EXECUTE 'DROP FUNCTION ' || t; END LOOP;
  END \$\$" > /dev/null
