#!/bin/sh
# Runs once, right after the InfluxDB 2 image's setup (DOCKER_INFLUXDB_INIT_MODE=setup):
# maps the v1 database the bridge writes and queries (CURVESTREAM_STORE=influxdb://…/<db>)
# to the bucket, so the v1 /write and /query endpoints and Grafana's InfluxQL source work;
# and its retention policy curvestream_meta (the store URL's ?meta_rp=: runs, stored batches,
# alert states) to the same bucket, which keeps points forever, so InfluxQL names it as on 1.x
# ("curvestream_meta"."cs_alert_now" in the provisioned alert rule).
set -eu
influx v1 dbrp create \
  --org "${DOCKER_INFLUXDB_INIT_ORG}" \
  --bucket-id "${DOCKER_INFLUXDB_INIT_BUCKET_ID}" \
  --db "${CURVESTREAM_INFLUXDB_DB}" \
  --rp autogen \
  --default
influx v1 dbrp create \
  --org "${DOCKER_INFLUXDB_INIT_ORG}" \
  --bucket-id "${DOCKER_INFLUXDB_INIT_BUCKET_ID}" \
  --db "${CURVESTREAM_INFLUXDB_DB}" \
  --rp curvestream_meta
