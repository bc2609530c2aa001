#!/bin/sh
# Creates a Grafana service account for the bridge's Grafana Live push and prints
# the two lines to put into compose/.env. Grafana must be running:
#   sh scripts/grafana-live-token.sh          (from compose/, reads .env)
# Pushing to /api/live/push/<stream> needs an Admin service account; a token
# cannot be made before Grafana has started, hence this step.
set -eu
cd "$(dirname "$0")/.."
[ -f .env ] && . ./.env
grafana="http://127.0.0.1:${GRAFANA_PORT:-3000}"
auth="${GRAFANA_ADMIN_USER:-admin}:${GRAFANA_ADMIN_PASSWORD:?set GRAFANA_ADMIN_PASSWORD in .env}"

account=$(curl -fsS -u "$auth" -H 'Content-Type: application/json' \
  -d '{"name":"curvestream-bridge","role":"Admin"}' "$grafana/api/serviceaccounts")
id=$(printf '%s' "$account" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
[ -n "$id" ] || { echo "no service account id in: $account" >&2; exit 1; }

token=$(curl -fsS -u "$auth" -H 'Content-Type: application/json' \
  -d '{"name":"live-push"}' "$grafana/api/serviceaccounts/$id/tokens")
key=$(printf '%s' "$token" | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
[ -n "$key" ] || { echo "no token in: $token" >&2; exit 1; }

echo "GRAFANA_LIVE_URL=http://grafana:3000"
echo "GRAFANA_LIVE_TOKEN=$key"
echo "# put these two lines into compose/.env, then: docker compose up -d bridge" >&2
