WITH points AS (
  SELECT "project", "run", "metric", "time", "step",
    CASE "nonfinite" WHEN 1 THEN CAST('NaN' AS DOUBLE) WHEN 2 THEN CAST('inf' AS DOUBLE)
      WHEN 3 THEN CAST('-inf' AS DOUBLE) ELSE "value" END AS "value",
    LEAST(CAST(floor((CAST("time" AS BIGINT) / 1e6 - ${__from}) * (1.0 / $__interval_ms)) AS BIGINT),
      (${__to} - ${__from} + $__interval_ms - 1) / $__interval_ms - 1) AS "col"
  FROM "cs_scalar"
  WHERE "project" ~ '^${project:regex}$' AND "run" ~ '^${run:regex}$' AND "metric" ~ '^${metric:regex}$'
    AND "time" >= to_timestamp_millis(${__from}) AND "time" <= to_timestamp_millis(${__to})
), ranked AS (
  SELECT *,
    row_number() OVER (PARTITION BY "project", "run", "metric", "col" ORDER BY "time") AS "r_first",
    row_number() OVER (PARTITION BY "project", "run", "metric", "col" ORDER BY "time" DESC) AS "r_last",
    row_number() OVER (PARTITION BY "project", "run", "metric", "col"
      ORDER BY isnan("value"), "value" + 0.0, "time") AS "r_min",
    row_number() OVER (PARTITION BY "project", "run", "metric", "col"
      ORDER BY isnan("value"), "value" + 0.0 DESC, "time" DESC) AS "r_max",
    row_number() OVER (PARTITION BY "project", "run", "metric", "col"
      ORDER BY isnan("value") DESC, "time") AS "r_nan"
  FROM points
)
SELECT "time", "project", "run", "metric", "step", "value" FROM ranked
WHERE "r_first" = 1 OR "r_last" = 1 OR (("r_min" = 1 OR "r_max" = 1) AND NOT isnan("value"))
  OR ("r_nan" = 1 AND isnan("value"))
ORDER BY "project", "run", "metric", "time"
