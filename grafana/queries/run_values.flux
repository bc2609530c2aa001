import "influxdata/influxdb/schema"

schema.tagValues(
    bucket: v.defaultBucket,
    tag: "run",
    predicate: (r) => r._measurement == "cs_scalar" and r.project =~ /^${project:regex}$/,
    start: 1970-01-01T00:00:00Z,
)
