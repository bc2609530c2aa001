import "date"
import "strings"

level = ":" + string(v: int(v: v.windowPeriod) / 1000000) + ":"
rows = from(bucket: v.defaultBucket)
    |> range(start: date.sub(d: v.windowPeriod, from: v.timeRangeStart), stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "cs_rollup_time" and strings.containsStr(v: r.grafana_interval_ms, substr: level))
    |> filter(fn: (r) => r.project =~ /^${project:regex}$/)
    |> filter(fn: (r) => r.run =~ /^${run:regex}$/ and r.metric =~ /^${metric:regex}$/)
    |> group(columns: ["_measurement", "_field", "project", "run", "metric"])
    |> window(every: v.windowPeriod)

union(tables: [
    rows |> filter(fn: (r) => r._field == "first") |> first(),
    rows |> filter(fn: (r) => r._field == "min") |> min(),
    rows |> filter(fn: (r) => r._field == "max") |> max(),
    rows |> filter(fn: (r) => r._field == "last") |> last(),
])
    |> set(key: "_field", value: "value")
    |> group(columns: ["_measurement", "_field", "project", "run", "metric"])
    |> sort(columns: ["_time"])
    |> drop(columns: ["_start", "_stop", "k", "w", "grafana_interval_ms"])
