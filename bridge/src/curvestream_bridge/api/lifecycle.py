"""A run after the fact (write token): ``PATCH /api/v1/runs/{project}/{run}`` sets
its name, tags and notes (its identity, and so its curves, stay);
``DELETE /api/v1/runs/{project}/{run}`` deletes it and everything of it, for good
(:mod:`curvestream_bridge.run_lifecycle`)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from curvestream_bridge.api.answer import GUARDED, answer
from curvestream_bridge.api.deps import WRITE, Api
from curvestream_bridge.api.models import ApiError, ApiRunDeleted, ApiRunEdit, ApiRunEdited
from curvestream_bridge.api.paths import name
from curvestream_bridge.api.reads import in_thread
from curvestream_bridge.store.base import RunRecord
from curvestream_bridge.store.lifecycle import RunEdits

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["runs"], dependencies=WRITE,
                   responses={**GUARDED, 404: {"model": ApiError, "description": "No such run"},
                              503: {"model": ApiError, "description": "The store is unavailable"}})


@router.patch("/runs/{project}/{run}", response_model=ApiRunEdited)
async def edit_run(api: Api, project: str, run: str, edit: ApiRunEdit) -> Response:
    """Set the run's name (the one shown; several runs may share it), tags or notes."""
    project, run = name(project), name(run)
    record = await _record(api, project, run)
    edits = RunEdits(name=edit.name, tags=_tags(edit, record.tags), notes=edit.notes)
    if not await in_thread(api.edit_run, project, run, edits):
        raise HTTPException(404, f"no run {project}/{run}")
    record = await _record(api, project, run)
    return answer({"project": project, "run": run, "name": record.name, "tags": record.tags, "notes": record.notes})


@router.delete("/runs/{project}/{run}", response_model=ApiRunDeleted,
               responses={504: {"model": ApiError, "description": "The writer did not get to it in time; it will"}})
async def delete_run(api: Api, project: str, run: str) -> Response:
    """Delete the run: its points, rollups, histograms, texts, alerts and records, in the store
    and on the broker (its retained messages); what arrives for it later is dropped."""
    project, run = name(project), name(run)
    try:
        found = await in_thread(api.delete_run, project, run)
    except TimeoutError as exc:
        raise HTTPException(504, str(exc)) from None
    if not found:
        raise HTTPException(404, f"no run {project}/{run}")
    return answer({"project": project, "run": run, "deleted": True})


def _tags(edit: ApiRunEdit, current: list[str]) -> tuple[str, ...] | None:
    """The tags after ``edit`` (None: it leaves them as they are)."""
    if edit.tags is None and not edit.add_tags and not edit.remove_tags:
        return None
    tags = [t for t in (edit.tags if edit.tags is not None else current) if t not in edit.remove_tags]
    return tuple(dict.fromkeys(tags + [t for t in edit.add_tags if t not in edit.remove_tags]))


async def _record(api: Api, project: str, run: str) -> RunRecord:
    for record in await in_thread(api.reader.runs):
        if record.project == project and record.run == run:
            return record
    raise HTTPException(404, f"no run {project}/{run}")
