#!/usr/bin/env bash
# wait-for-it.sh HOST PORT [TIMEOUT_SECONDS]: waits until a TCP connection to HOST:PORT succeeds.
# Exits 0 once it does, 1 after TIMEOUT_SECONDS (default 300) without one.
set -euo pipefail

host=${1:?usage: wait-for-it.sh HOST PORT [TIMEOUT_SECONDS]}
port=${2:?usage: wait-for-it.sh HOST PORT [TIMEOUT_SECONDS]}
timeout=${3:-300}

deadline=$((SECONDS + timeout))
until (exec 3<>"/dev/tcp/${host}/${port}") 2>/dev/null; do
  if ((SECONDS >= deadline)); then
    echo "wait-for-it: ${host}:${port} not reachable after ${timeout}s" >&2
    exit 1
  fi
  sleep 2
done
echo "wait-for-it: ${host}:${port} is reachable"
