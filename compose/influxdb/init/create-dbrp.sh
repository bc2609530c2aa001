#!/bin/sh
# Runs once, right after the InfluxDB 2 image's setup (DOCKER_INFLUXDB_INIT_MODE=setup):
# maps the v1 database the bridge writes and queries (CURVESTREAM_STORE=influxdb://…/<db>)
# to the bucket, so the v1 /write and /query endpoints and Grafana's InfluxQL source work.
set -eu
influx v1 dbrp create \
  --org "${DOCKER_INFLUXDB_INIT_ORG}" \
  --bucket-id "${DOCKER_INFLUXDB_INIT_BUCKET_ID}" \
  --db "${CURVESTREAM_INFLUXDB_DB}" \
  --rp autogen \
  --default
