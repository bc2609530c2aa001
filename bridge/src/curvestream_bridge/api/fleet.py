"""The reads of the page at fleet scale (docs/http-api.md): ``/api/v1/runs/table``
(:mod:`curvestream_bridge.runs_table`), ``/api/v1/keys``
(:mod:`curvestream_bridge.key_index`) and ``/api/v1/groups/series``
(:mod:`curvestream_bridge.group_bands`). Each answers what one screen shows,
whatever the number of runs or keys behind it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from starlette.requests import HTTPConnection

from curvestream_bridge.api.answer import GUARDED, answer
from curvestream_bridge.api.deps import READ, Api
from curvestream_bridge.api.facade import BridgeApi
from curvestream_bridge.api.models import ApiGroups, ApiGroupsTable, ApiKeys, ApiRunsTable
from curvestream_bridge.api.paths import RUN_PAIRS_HELP, run_pairs
from curvestream_bridge.api.reads import in_thread, read_for
from curvestream_bridge.configtext import CONFIG_PREFIX, group_value
from curvestream_bridge.group_bands import GroupQuery, group_bands, group_table
from curvestream_bridge.key_index import KeyIndexCache, KeyMatcher
from curvestream_bridge.runs_table import RunsFilter, RunsSnapshot, RunsTable

__all__ = ["router", "FleetReads"]

router = APIRouter(prefix="/api/v1", dependencies=READ, responses=GUARDED)


class FleetReads:
    """What these reads keep between requests: the runs table's snapshot (read again
    when the live hub sees a run change) and the key indices of recently asked runs."""

    def __init__(self, api: BridgeApi) -> None:
        self.table = RunsTable(api.reader.runs)
        api.on_runs_changed(self.table.changed)
        self.keys = KeyIndexCache(api.reader.metrics_many, generation=lambda: api.deletions)


async def fleet_reads(conn: HTTPConnection, api: Api) -> FleetReads:
    """The app's :class:`FleetReads`, made by its first request (on the event loop: made once)."""
    reads = getattr(conn.app.state, "fleet_reads", None)
    if reads is None:
        reads = conn.app.state.fleet_reads = FleetReads(api)
    return reads


Fleet = Annotated[FleetReads, Depends(fleet_reads)]


def _group_by(text: str) -> str:
    if text != "group" and not (text.startswith(CONFIG_PREFIX) and len(text) > len(CONFIG_PREFIX)):
        raise HTTPException(422, f"group_by must be 'group' or 'config:<key>', got {text!r}")
    return text


def _row_json(api: BridgeApi, row: Any, firing: dict[tuple[str, str], int]) -> dict[str, Any]:
    """A row as the runs list answers it: its tail still in a spool, its alerts, its clock."""
    clock = api.clock_of(*row.ref)
    return {**row.json, "pending_batches": api.pending_batches(*row.ref), "alerts_firing": firing.get(row.ref, 0),
            "clock_offset_s": clock[0] if clock else None, "clock_correction_s": clock[1] if clock else None}


def _total(snap: RunsSnapshot, project: str | None) -> int:
    """How many runs the table holds, in ``project`` or in all."""
    return len(snap.rows) if project is None else sum(r.record.project == project for r in snap.rows)


def _value_counts(matched: list[Any], count_by: str) -> list[dict[str, Any]]:
    """Matching runs per value of ``count_by``, the most common first."""
    counts: dict[str | None, int] = {}
    for row in matched:
        value = group_value(row.json, count_by)
        counts[value] = counts.get(value, 0) + 1
    return [{"value": v, "runs": n} for v, n in sorted(counts.items(), key=lambda kv: -kv[1])]


def _facets(snap: RunsSnapshot, project: str | None, config_key: str) -> dict[str, Any]:
    """The filters' choices, with the values of ``config_key`` when one is picked."""
    facets = dict(snap.facets(project))
    if config_key:
        facets["config_values"] = snap.config_values(project, config_key)
    return facets


@router.get("/runs/table", tags=["runs"], response_model=ApiRunsTable)
async def runs_table(
    api: Api, fleet: Fleet,
    project: str | None = None,
    q: str = Query("", description="words that must all appear in a run's name, state, group, host, tags or "
                                   "config (any case)"),
    tag: str = "", group: str = "", state: str = "",
    config_key: str = "", config_value: str = Query("", description="as the page writes it; empty: any"),
    alerting: bool = Query(False, description="only runs with firing alerts"),
    sort: str = Query("-started", description="started, updated, project, run, state, group, points or alerts; "
                                              "'-' first: descending"),
    offset: int = Query(0, ge=0), limit: int = Query(100, ge=0, le=5000),
    count_by: str = Query("group", description="'group' or 'config:<key>': matching runs per value"),
    run: list[str] = Query([], description=f"{RUN_PAIRS_HELP}: their rows in 'selected', wherever they are"),
) -> Response:
    """One page of the runs that match the filters, how many match, per-value counts and the
    filters' choices."""
    f = RunsFilter(project, q, tag, group, config_key, config_value, state, alerting)
    wanted = run_pairs(run)
    count_by = _group_by(count_by)

    def page() -> dict[str, Any]:
        snap = fleet.table.snapshot()
        firing = api.firing_per_run()
        try:
            matched = snap.matching(f, firing, sort)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        shown = {r.ref for r in matched}
        return {"total": _total(snap, project), "matched": len(matched), "offset": offset, "limit": limit,
                "sort": sort, "runs": [_row_json(api, r, firing) for r in matched[offset:offset + limit]],
                "selected": [_row_json(api, snap.by_ref[ref], firing) for ref in wanted if ref in snap.by_ref],
                "selected_hidden": sum(ref in snap.by_ref and ref not in shown for ref in wanted),
                "count_by": count_by, "counts": _value_counts(matched, count_by),
                "facets": _facets(snap, project, config_key)}

    return answer(await in_thread(page))


@router.get("/keys", tags=["runs"], response_model=ApiKeys)
async def keys(
    fleet: Fleet,
    run: list[str] = Query(..., description=RUN_PAIRS_HELP),
    q: str = "", match: Literal["words", "glob", "regex"] = "words",
    offset: int = Query(0, ge=0), limit: int = Query(200, ge=0, le=20000),
    fresh: bool = Query(False, description="read the runs' keys again (they are kept for 10 s)"),
) -> Response:
    """The scalar keys of these runs in sections by prefix, searched, one range of them."""
    refs = run_pairs(run)
    try:
        matcher = KeyMatcher(match, q)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None

    def listed() -> dict[str, Any]:
        index = fleet.keys.index(refs, fresh)
        out = index.answer(matcher, offset, limit)
        out["runs"] = [{"project": p, "run": r, "first_ms": first} for (p, r), first in zip(refs, index.first_ms)]
        return out

    return answer(await in_thread(listed))


class GroupsAsked:
    """What the groups endpoints take: a key, a grouping, the runs (named, or those the runs table's
    filters match) and the range and width."""

    def __init__(
        self,
        key: str = Query(..., description="metric key, exactly as logged"),
        group_by: str = Query(..., description="'group' (the run's group) or 'config:<key>'"),
        run: list[str] = Query([], description=f"{RUN_PAIRS_HELP}; none: the runs the filters below match"),
        project: str | None = None, q: str = "", tag: str = "", group: str = "", state: str = "",
        config_key: str = "", config_value: str = "", alerting: bool = False,
        x: Literal["step", "time", "relative"] = "step",
        start: float | None = None, end: float | None = None,
        width: int = Query(1000, ge=1, le=20000),
    ) -> None:
        if start is not None and end is not None and end < start:
            raise HTTPException(422, "end must not be less than start")
        self.query = GroupQuery(key, _group_by(group_by), x, start, end, width)
        self.refs = run_pairs(run)
        self.filter = RunsFilter(project, q, tag, group, config_key, config_value, state, alerting)


Groups = Annotated[GroupsAsked, Depends()]


@router.get("/groups/series", tags=["series"], response_model=ApiGroups)
async def groups_series(request: Request, api: Api, fleet: Fleet, asked: Groups) -> Response:
    """Groups of runs as one mean line and a min–max band per pixel column."""
    return answer(await _groups(request, api, fleet, asked))


@router.get("/groups/table", tags=["series"], response_model=ApiGroupsTable)
async def groups_table(request: Request, api: Api, fleet: Fleet, asked: Groups) -> Response:
    """``/groups/series`` as a table: one row per group and column (for table readers: Grafana's Infinity
    data source, a dataframe)."""
    return answer(group_table(await _groups(request, api, fleet, asked)))


async def _groups(request: Request, api: BridgeApi, fleet: FleetReads, asked: GroupsAsked) -> dict[str, Any]:
    gq = asked.query

    def members() -> list[tuple[tuple[str, str], str | None]]:
        snap = fleet.table.snapshot()
        if asked.refs:
            rows = {ref: snap.by_ref.get(ref) for ref in dict.fromkeys(asked.refs)}
            return [(ref, group_value(row.json, gq.group_by) if row is not None else None) for ref, row in rows.items()]
        return [(row.ref, group_value(row.json, gq.group_by))
                for row in snap.matching(asked.filter, api.firing_per_run())]

    chosen = await in_thread(members)
    return await read_for(request, api, group_bands, gq, chosen, api.reader.series_many)
