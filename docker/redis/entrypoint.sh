#!/bin/sh
# Redis with a password (REDIS_PASSWORD, required): written into a config file only this user
# can read, so it never appears on a command line (`ps`) or in the image.
set -eu
: "${REDIS_PASSWORD:?become-redis: REDIS_PASSWORD is not set}"
umask 077
conf=$(mktemp /tmp/redis-XXXXXX.conf)
printf 'requirepass "%s"\n' "$REDIS_PASSWORD" > "$conf"
unset REDIS_PASSWORD
exec redis-server "$conf" "$@"
