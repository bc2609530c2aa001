import "influxdata/influxdb/schema"

schema.tagValues(
    bucket: v.defaultBucket,
    tag: "group",
    predicate: (r) => r._measurement == "cs_group" and r.project =~ /^${project:regex}$/,
    start: 1970-01-01T00:00:00Z,
)
