"""Runs and their metrics: ``/api/v1/runs``, ``/api/v1/runs/{project}/{run}/metrics``, ``/api/v1/metrics``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from curvestream_bridge.api.answer import GUARDED, answer
from curvestream_bridge.api.deps import READ, Api
from curvestream_bridge.api.models import ApiMetricsManyResponse, ApiMetricsResponse, ApiRunsResponse
from curvestream_bridge.api.paths import RUN_PAIRS_HELP, name, run_pairs
from curvestream_bridge.api.reads import in_thread

if TYPE_CHECKING:
    from curvestream_bridge.store.base import RunRecord

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["runs"], dependencies=READ, responses=GUARDED)


@router.get("/runs", response_model=ApiRunsResponse)
async def runs(request: Request, api: Api, project: str | None = None, tag: str | None = None,
               group: str | None = None, state: str | None = None,
               run_name: str | None = Query(None, alias="name",
                                            description="Runs of this name (several runs may share one)."),
               run: str | None = Query(None, description="The run of this identity.")) -> Response:
    records = await in_thread(api.reader.runs)
    keep = _run_filter(request, project, tag, group, state, run_name, run)
    wanted = [r for r in records if keep(r)]
    firing = api.firing_per_run()
    # a finished run whose tail is still in its trainer's spool: how many batches are missing
    pending = await in_thread(lambda: [api.pending_batches(r.project, r.run) for r in wanted])
    out = [{**r.to_json(), "pending_batches": p, "alerts_firing": firing.get((r.project, r.run), 0),
            **_clock_json(api.clock_of(r.project, r.run))}
           for r, p in zip(wanted, pending)]
    return answer({"runs": out})


@router.get("/runs/{project}/{run}/metrics", response_model=ApiMetricsResponse)
async def metrics_of_run(api: Api, project: str, run: str) -> Response:
    project, run = name(project), name(run)
    records = await in_thread(api.reader.metrics, project, run)
    return answer({"project": project, "run": run, "metrics": [m.to_json() for m in records]})


@router.get("/metrics", response_model=ApiMetricsManyResponse)
async def metrics_of_runs(api: Api, run: list[str] = Query(..., description=RUN_PAIRS_HELP)) -> Response:
    """Several runs' metrics in one request (for overlays), read from the store together:
    each run's entry is the single-run endpoint's answer."""
    pairs = run_pairs(run)
    records = await in_thread(api.reader.metrics_many, pairs)
    return answer({"runs": [{"project": p, "run": r, "metrics": [m.to_json() for m in found]}
                            for (p, r), found in zip(pairs, records)]})


def _run_filter(request: Request, project: str | None, tag: str | None, group: str | None,
                state: str | None, run_name: str | None = None, run: str | None = None
                ) -> Callable[[RunRecord], bool]:
    """The runs list's filters, combined with AND; ``config.<key>=<value>`` compares the run's config."""
    equal = {k: v for k, v in (("project", project), ("group", group), ("state", state), ("name", run_name),
                                ("run", run)) if v is not None}
    config = {k[7:]: v for k, v in request.query_params.items() if k.startswith("config.")}

    def keep(r: RunRecord) -> bool:
        return (all(getattr(r, k) == v for k, v in equal.items()) and (tag is None or tag in r.tags)
                and all(_config_matches(r.config, k, v) for k, v in config.items()))

    return keep


def _clock_json(clock: tuple[float, float] | None) -> dict[str, float | None]:
    offset, correction = clock if clock is not None else (None, None)
    return {"clock_offset_s": offset, "clock_correction_s": correction}


def _config_matches(config: dict[str, Any], dotted: str, wanted: str) -> bool:
    value: Any = config
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    if isinstance(value, str):
        return value == wanted
    return json.dumps(value) == wanted or str(value) == wanted
