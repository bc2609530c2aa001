SELECT DISTINCT "run" FROM "cs_group" WHERE "project" ~ '^${project:regex}$' AND "group" ~ '^${group:regex}$' ORDER BY "run"
