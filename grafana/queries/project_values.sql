SELECT DISTINCT "project" FROM "cs_scalar" WHERE $__timeFilter("time") ORDER BY "project"
