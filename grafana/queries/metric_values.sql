SELECT DISTINCT "metric" FROM "cs_scalar" WHERE "project" ~ '^${project:regex}$' AND "run" ~ '^${run:regex}$' AND $__timeFilter("time") ORDER BY "metric"
