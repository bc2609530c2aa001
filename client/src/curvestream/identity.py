"""Which run an ``init()`` writes to: a new one every time, unless the user
resumes one explicitly.

    init("mnist", run="lr=0.1")                   # a new run: identity "lr=0.1-k3x9q2", name "lr=0.1"
    init("mnist", run="lr=0.1", resume="allow")   # the newest run named "lr=0.1", else a new one
    init("mnist", run="lr=0.1", resume="must")    # the newest run named "lr=0.1", else an error
    init("mnist", id="lr=0.1-k3x9q2")             # that identity: continued if stored, else new

The identity (``run`` in topics, the store and the API) never repeats; the
name (``RunMeta.name``, ``name`` in the runs list) may. Running a script twice
therefore makes two runs, never one run holding both.

Resuming asks the bridge over HTTP where the stored run ended (the step of its
latest point): implicit steps go on after it, and the session is recorded in
the run's metadata (``RunMeta.resumes``) with that step. A session that logs
a step at or below it "went back": that is recorded too (the first such step),
so the API and the page show the run as resumed with overlapping steps
instead of interleaving two sessions silently.

Offline (``mode="offline"`` or the bridge unreachable) nothing can be looked
up: a resume by name with ``"allow"`` starts a new run and says so on stderr,
``"must"`` raises; an ``id=`` is used as is, implicit steps start at 0 and the
resume is recorded without the step it continued from (steps going back are
then not detected).
"""

from __future__ import annotations

import dataclasses
import datetime
import secrets
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Literal

from curvestream_wire import names
from curvestream_wire.v1 import run_pb2

from curvestream import notices
from curvestream.http_fallback import BridgeHttp, Permanent, Retryable
from curvestream.settings import Settings

__all__ = ["Identity", "resolve", "new_identity", "generated_name", "Resume"]

Resume = Literal["allow", "must"]
_SUFFIX_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"
_LOOKUP_TIMEOUT_S = 5.0


@dataclasses.dataclass(frozen=True)
class Identity:
    """The run a session writes to, and how it continues a stored one."""

    id: str
    name: str
    resumed: run_pb2.Resume | None = None  # this session's record when it continues a stored run
    history: tuple[run_pb2.Resume, ...] = ()  # the stored run's earlier resumes
    started_ns: int = 0  # the stored run's start (0: a new run, which starts now)
    next_step: int = 0  # the first implicit step

    def resumes(self) -> list[run_pb2.Resume]:
        return [*self.history, *([self.resumed] if self.resumed is not None else [])]


def generated_name() -> str:
    """The name of a run given none: already unique, so it is also the identity."""
    return f"{datetime.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def new_identity(name: str) -> str:
    """``NAME-xxxxxx``: the name and 6 random lowercase base-36 characters."""
    return f"{name}-{''.join(secrets.choice(_SUFFIX_CHARS) for _ in range(6))}"


def resolve(project: str, run: str | None, settings: Settings, *, id: str | None = None,
            resume: str | None = None, clock_ns: Callable[[], int] = time.time_ns) -> Identity:
    """The identity of a new session of ``run`` in ``project`` (see the module docstring)."""
    if resume not in (None, "allow", "must"):
        raise ValueError(f"curvestream: resume must be 'allow', 'must' or None, got {resume!r}")
    names.validate_name("project name", project)
    if id is not None:
        names.validate_name("run id", id)
        name = names.validate_name("run name", run) if run is not None else id
        return _by_id(project, id, name, settings, resume, clock_ns)
    if run is None:
        if resume is not None:
            raise ValueError("curvestream: resume= needs the run's name (run=) or its identity (id=)")
        name = generated_name()
        return Identity(name, name)
    name = names.validate_name("run name", run)
    if resume is None:
        return Identity(names.validate_name("run identity", new_identity(name)), name)
    return _by_name(project, name, settings, resume, clock_ns)


def _by_id(project: str, run_id: str, name: str, settings: Settings, resume: str | None,
           clock_ns: Callable[[], int]) -> Identity:
    with _Lookup(settings) as lookup:
        stored = lookup.run(project, run=run_id)
        return _id_found(project, run_id, name, stored, lookup, resume, clock_ns)


def _id_found(project: str, run_id: str, name: str, stored: dict[str, Any] | None, lookup: _Lookup,
              resume: str | None, clock_ns: Callable[[], int]) -> Identity:
    if stored is None:
        if resume == "must":
            raise RuntimeError(f"curvestream: cannot resume run {project}/{run_id}: "
                               + (lookup.why or "the bridge has no such run"))
        if lookup.why and resume is not None:
            notices.say(f"curvestream: {lookup.why}; run {project}/{run_id} goes on under its id, with implicit "
                        "steps from 0 (steps going back cannot be checked)")
            return Identity(run_id, name, _resume_record(clock_ns(), None))
        return Identity(run_id, name)
    return _continued(project, run_id, name, stored, lookup, clock_ns)


def _by_name(project: str, name: str, settings: Settings, resume: str, clock_ns: Callable[[], int]) -> Identity:
    with _Lookup(settings) as lookup:
        stored = lookup.run(project, name=name)
        return _name_found(project, name, stored, lookup, resume, clock_ns)


def _name_found(project: str, name: str, stored: dict[str, Any] | None, lookup: _Lookup, resume: str,
                clock_ns: Callable[[], int]) -> Identity:
    if stored is None:
        if resume == "must":
            raise RuntimeError(f"curvestream: cannot resume a run named {name!r} in project {project!r}: "
                               + (lookup.why or "the bridge has none"))
        identity = new_identity(name)
        if lookup.why:
            notices.say(f"curvestream: {lookup.why}, so no run named {name!r} can be resumed; starting a new run "
                        f"{project}/{identity}")
        return Identity(names.validate_name("run identity", identity), name)
    return _continued(project, stored["run"], name, stored, lookup, clock_ns)


def _continued(project: str, run_id: str, name: str, stored: dict[str, Any], lookup: _Lookup,
               clock_ns: Callable[[], int]) -> Identity:
    last_step = lookup.last_step(project, run_id)
    history = tuple(_from_json(r) for r in stored.get("resumes") or [])
    started_ms = stored.get("started_ms")
    return Identity(
        run_id, stored.get("name") or name, _resume_record(clock_ns(), last_step), history,
        started_ns=int(started_ms * 1e6) if started_ms else 0,
        next_step=0 if last_step is None else last_step + 1,
    )


def _resume_record(started_ns: int, after_step: int | None) -> run_pb2.Resume:
    return run_pb2.Resume(started_ns=started_ns, after_step=-1 if after_step is None else after_step,
                          after_step_known=after_step is not None)


def _from_json(item: dict[str, Any]) -> run_pb2.Resume:
    """A resume as the runs list serves it (:func:`resume_json` on the bridge), back to its message."""
    after = item.get("after_step")
    back = item.get("back_to_step")
    return run_pb2.Resume(started_ns=int((item.get("started_ms") or 0) * 1e6),
                          after_step=after if after is not None else -1, after_step_known=after is not None,
                          went_back=back is not None, back_to_step=back if back is not None else 0)


class _Lookup:
    """The bridge's answers a resume needs; ``why`` says why there were none."""

    def __init__(self, settings: Settings) -> None:
        self.why = ""
        self._http: BridgeHttp | None = None
        self._token = settings.read_token
        if settings.mode == "offline":
            self.why = "the run is offline"
        elif not settings.bridge_url:
            self.why = "no bridge URL is set (CURVESTREAM_BRIDGE_URL)"
        else:
            self._url = settings.bridge_url
            self._http = BridgeHttp(settings.bridge_url, timeout_s=_LOOKUP_TIMEOUT_S)

    def _get(self, path: str) -> Any:
        assert self._http is not None
        try:
            return self._http.get_json(path, self._token)
        except (Retryable, Permanent, ValueError) as exc:
            self.why = f"the bridge at {self._url} cannot be asked ({exc})"
            return None

    def run(self, project: str, *, name: str | None = None, run: str | None = None) -> dict[str, Any] | None:
        """The newest stored run of that name (or that identity), None when there is none or no answer."""
        if self._http is None:
            return None
        query = {"project": project, **({"name": name} if name is not None else {}), **({"run": run} if run else {})}
        answer = self._get("/api/v1/runs?" + urllib.parse.urlencode(query))
        if not isinstance(answer, dict):
            return None
        found = [r for r in answer.get("runs", []) if r.get("project") == project
                 and (name is None or (r.get("name") or r.get("run")) == name) and (run is None or r.get("run") == run)]
        if not found:
            return None
        return max(enumerate(found), key=lambda ir: (ir[1].get("started_ms") or 0, -ir[0]))[1]

    def last_step(self, project: str, run_id: str) -> int | None:
        """The step of the run's latest point (by wall time), -1 for a run without points, None when unknown."""
        if self._http is None:
            return None
        path = f"/api/v1/runs/{urllib.parse.quote(project, safe='')}/{urllib.parse.quote(run_id, safe='')}/metrics"
        answer = self._get(path)
        if not isinstance(answer, dict):
            return None
        metrics = [m for m in answer.get("metrics", []) if m.get("count")]
        if not metrics:
            return -1
        latest = max(metrics, key=lambda m: (m.get("last_ms") or 0, m.get("last_step") or 0))
        return int(latest.get("last_step") or 0)

    def __enter__(self) -> _Lookup:
        return self

    def __exit__(self, *_: object) -> None:
        if self._http is not None:
            self._http.close()
