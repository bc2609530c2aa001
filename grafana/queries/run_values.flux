import "influxdata/influxdb/schema"

schema.tagValues(
    bucket: v.defaultBucket,
    tag: "run",
    predicate: (r) => r._measurement == "cs_group" and r.project =~ /^${project:regex}$/ and r.group =~ /^${group:regex}$/,
    start: 1970-01-01T00:00:00Z,
)
