WITH points AS (
  SELECT "project", "run", "metric", "time", "value",
    CAST(floor((CAST("time" AS BIGINT) / 1e6 - ${__from}) * (1.0 / $__interval_ms)) AS BIGINT) AS "col"
  FROM "cs_scalar"
  WHERE "project" ~ '^${project:regex}$' AND "run" ~ '^${run:regex}$' AND "metric" ~ '^${system_metric:regex}$'
    AND "time" >= to_timestamp_millis(${__from}) AND "time" <= to_timestamp_millis(${__to}) AND "value" IS NOT NULL
), windows AS (
  SELECT "project", "run", "metric", "col",
    first_value("value" ORDER BY "time") AS "first", min("value") AS "min", max("value") AS "max",
    last_value("value" ORDER BY "time") AS "last"
  FROM points GROUP BY "project", "run", "metric", "col"
)
SELECT to_timestamp_nanos((${__from} + "col" * $__interval_ms) * 1000000) AS "time", "project", "run", "metric", "value"
FROM (
  SELECT "project", "run", "metric", "col", "first" AS "value" FROM windows
  UNION ALL SELECT "project", "run", "metric", "col", "min" FROM windows
  UNION ALL SELECT "project", "run", "metric", "col", "max" FROM windows
  UNION ALL SELECT "project", "run", "metric", "col", "last" FROM windows
)
ORDER BY "project", "run", "metric", "time"
