#!/usr/bin/env bash
# The Prometheus test (docs/telemetry.md): Debian's Prometheus scraping a Rust (axum), a Python
# (FastAPI) and a Node (Express) program, each with a health route, that contend on one Redis lock
# and one election, and `tenure exporter` on the same store; tests/metrics/check.py checks the counters against the operations made, the leader gauge, a
# paused and a killed holder, and every query of docs/grafana-dashboard.json, through
# Prometheus's HTTP API, and prints one scrape of each program.
# Usage: scripts/metrics.sh WHEEL NODE_TARBALL_DIR
#   WHEEL: the Python package's wheel; NODE_TARBALL_DIR: where scripts/test-node.sh packed the npm
#   packages (target/node). Needs Redis on TENURE_REDIS_URL (default redis://127.0.0.1:6379).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { sed -n 2,9p "$0" >&2; exit 2; }
wheel=$(realpath "$1") tarballs=$(realpath "$2")
command -v prometheus > /dev/null \
  || { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus > /dev/null; }
prometheus --version 2>&1 | sed -n 1p

cargo build -q -p tenure-cli -p tenure-metrics-test

# What a FastAPI user installs to expose metrics: the SDK's Prometheus reader (and prometheus_client).
venv=target/metrics-venv
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q "$wheel" opentelemetry-exporter-prometheus fastapi uvicorn

# What an Express user installs: the SDK's Prometheus exporter with the SDK it was built for.
node_dir=target/metrics-node
rm -rf "$node_dir"
mkdir -p "$node_dir"
(cd "$node_dir" && echo '{"private": true}' > package.json \
  && npm install --no-audit --no-fund --loglevel=error "$tarballs"/tenure-*.tgz \
    @opentelemetry/api@1.9.1 @opentelemetry/sdk-metrics@2.12.0 @opentelemetry/exporter-prometheus@0.223.0 express@5)

python3 tests/metrics/check.py --tenure target/debug/tenure --rust target/debug/tenure-metrics-contender \
  --python "$venv/bin/python" --node-path "$PWD/$node_dir/node_modules" --dashboard docs/grafana-dashboard.json
