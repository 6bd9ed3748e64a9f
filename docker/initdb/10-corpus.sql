-- The corpus database, its owner role and its read-only role: the same as
-- corpus_jobs/stack.py bootstrap_corpus_db does for `make run`'s local PostgreSQL.
--
-- Run once, by the postgres image's entrypoint, as the superuser with psql -v ON_ERROR_STOP=1,
-- when the data volume is empty (later changes to the passwords are NOT applied: ALTER ROLE by
-- hand, or start from a new volume). The passwords come from the postgres service's
-- environment (compose.yaml, each ${VAR:?} there), read with psql's \getenv (psql 15+).
--
-- The roles must match the users in ASSISTANT_CORPUS_DSN / ASSISTANT_CORPUS_READ_DSN.
-- corpus_reader gets USAGE on schema public and nothing else here: the index build grants it
-- SELECT on the tables it creates (corpus_jobs/build.py).

\getenv corpus_owner_password CORPUS_OWNER_PASSWORD
\getenv corpus_reader_password CORPUS_READER_PASSWORD

-- Refuse to create roles without passwords (ON_ERROR_STOP makes the init fail).
\if :{?corpus_owner_password}
\else
DO $$ BEGIN RAISE EXCEPTION 'CORPUS_OWNER_PASSWORD is not set'; END $$;
\endif
\if :{?corpus_reader_password}
\else
DO $$ BEGIN RAISE EXCEPTION 'CORPUS_READER_PASSWORD is not set'; END $$;
\endif

CREATE ROLE corpus_owner LOGIN PASSWORD :'corpus_owner_password';
CREATE ROLE corpus_reader LOGIN PASSWORD :'corpus_reader_password';
CREATE DATABASE corpus OWNER corpus_owner;

\connect corpus

CREATE EXTENSION IF NOT EXISTS vector;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO corpus_reader;
GRANT CREATE, USAGE ON SCHEMA public TO corpus_owner;
