import "influxdata/influxdb/schema"

schema.tagValues(
    bucket: v.defaultBucket,
    tag: "project",
    predicate: (r) => r._measurement == "cs_scalar",
    start: 1970-01-01T00:00:00Z,
)
