SELECT DISTINCT "run" FROM "cs_scalar" WHERE "project" ~ '^${project:regex}$' AND $__timeFilter("time") ORDER BY "run"
