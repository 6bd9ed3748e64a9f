#!/bin/sh
# First start: initdb with password authentication everywhere (no `trust`, not even on the
# container's own socket), then the roles and databases that
# assistant_cli/stack.py bootstrap_corpus_db / bootstrap_app_db make for `make run`. Later starts:
# just PostgreSQL. Passwords are applied only when the data volume is new.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  for v in POSTGRES_PASSWORD CORPUS_OWNER_PASSWORD CORPUS_READER_PASSWORD ASSISTANT_DB_PASSWORD; do
    eval "val=\${$v:-}"
    [ -n "$val" ] || { echo "become-postgres: $v is not set" >&2; exit 1; }
    case "$val" in *"'"*|*'\'*) echo "become-postgres: $v may not contain quotes or backslashes" >&2; exit 1;; esac
  done
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U postgres --pwfile="$pwfile" --encoding=UTF8 \
         --auth-local=scram-sha-256 --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  postgres --single -D "$PGDATA" postgres >/dev/null <<SQL
CREATE ROLE corpus_owner LOGIN PASSWORD '$CORPUS_OWNER_PASSWORD';
CREATE ROLE corpus_reader LOGIN PASSWORD '$CORPUS_READER_PASSWORD';
CREATE ROLE assistant LOGIN PASSWORD '$ASSISTANT_DB_PASSWORD';
CREATE DATABASE corpus OWNER corpus_owner;
CREATE DATABASE assistant OWNER assistant;
SQL
  postgres --single -D "$PGDATA" corpus >/dev/null <<SQL
CREATE EXTENSION IF NOT EXISTS vector;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO corpus_reader;
GRANT CREATE, USAGE ON SCHEMA public TO corpus_owner;
SQL
  echo "become-postgres: initialised $PGDATA (roles corpus_owner, corpus_reader, assistant)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
