SELECT DISTINCT "group" FROM "cs_group" WHERE "project" ~ '^${project:regex}$' ORDER BY "group"
