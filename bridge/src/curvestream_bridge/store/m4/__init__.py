"""The engine-independent M4 core: the pixel-column kernel (:mod:`.kernel`),
mergeable first/last/min/max aggregates (:mod:`.agg`), rollup levels
(:mod:`.levels`), query planning over levels (:mod:`.plan`) and the assembly of
an exact answer (:mod:`.query`). Both store engines build on it."""
