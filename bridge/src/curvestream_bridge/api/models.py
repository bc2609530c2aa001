"""The shapes of the HTTP API's answers and of the live WebSocket's messages
(docs/http-api.md): one source for the OpenAPI document at ``/docs`` and for
the page's TypeScript types (``scripts/gen_api_types.py`` writes
``panels/echarts-plugin/src/types/api.ts`` from them).

The routes build their answers as plain dicts and the live hub its messages as
JSON text (validating thousands of runs or points per answer would cost more
than encoding them); tests hold every answer and message to these models,
extra fields forbidden.

A field that every answer carries is required here, even when it may be null;
one that may be absent has a default.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.json_schema import models_json_schema
from typing_extensions import TypeAliasType

__all__ = ["TYPE_ALIASES", "HTTP_MODELS", "LIVE_MODELS", "LiveMessage", "SeriesBinaryHeaders", "definitions"]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------------------------- shared types

ApiNumber = TypeAliasType("ApiNumber", Annotated[
    float | Literal["NaN", "Infinity", "-Infinity"],
    Field(description="A value as JSON carries it: non-finite values travel as strings.")])
RunState = TypeAliasType("RunState", Literal["running", "finished", "failed", "lost", "unknown"])
XMode = TypeAliasType("XMode", Annotated[
    Literal["step", "time", "relative"],
    Field(description="The x axis of a series query. `relative` is seconds since the run's first point.")])
MetricKind = TypeAliasType("MetricKind", Annotated[
    Literal["scalar", "histogram", "text"],
    Field(description="A curve (`series`), a histogram (`histograms`) or text lines (`texts`).")])
AlertKind = TypeAliasType("AlertKind", Annotated[
    Literal["nonfinite", "spike", "plateau", "threshold", "stalled", "lost", "code"],
    Field(description="What raised the alert: a rule of that kind, or the training script (`code`, `run.alert`: "
                      "its rule is the alert's title).")])
AlertValue = TypeAliasType("AlertValue", Annotated[
    float | Literal["NaN", "+Inf", "-Inf"] | None,
    Field(description="The value that made the alert change: a number, `NaN`, `+Inf`, `-Inf` or null.")])

TYPE_ALIASES = (ApiNumber, RunState, XMode, MetricKind, AlertKind, AlertValue)


# ---------------------------------------------------------------------------------------------- runs

class ApiRunMeta(_Shape):
    """What the trainer's process told about itself (absent for a run known only by its status)."""

    pid: int | None = None
    python_version: str | None = None
    frameworks: dict[str, str] | None = None
    data_version: str | None = None
    client_version: str | None = None


class ApiResume(_Shape):
    """A session that continued a stored run (`init(..., resume=...)` or `id=`)."""

    started_ms: float
    after_step: int | None = Field(description=(
        "The step the stored run had ended at when the session began (null: unknown, resumed offline)."))
    back_to_step: int | None = Field(description=(
        "The first step the session logged at or below `after_step`: its steps went back (null: they did not)."))


class ApiRun(_Shape):
    """A run of `GET /api/v1/runs`."""

    project: str
    run: str = Field(description="The run's identity: unique, e.g. the name and a random suffix (`lr=0.1-k3x9q2`).")
    name: str = Field(description="The name the trainer gave the run; several runs may share it.")
    resumes: list[ApiResume] = Field(description="Each time the run was resumed, oldest first.")
    state: RunState
    reason: str = Field(description="Exception type and message when failed.")
    started_ms: float | None
    updated_ms: float | None
    tags: list[str]
    group: str
    config: dict[str, Any]
    host: str
    git_commit: str
    git_dirty: bool | None
    points: int = Field(description="Scalar points stored for the run.")
    meta: ApiRunMeta
    pending_batches: int | None = Field(description=(
        "Finished or failed, but this many batches up to the final status are not stored yet (null: unknown)."))
    alerts_firing: int = Field(description="Alerts of the run firing now.")
    clock_offset_s: float | None = Field(description=(
        "The trainer's clock behind the bridge's by this much (null: unknown)."))
    clock_correction_s: float | None = Field(description="Added to the run's times by the bridge.")
    summary: dict[str, Any] = Field(description=(
        "What the run stored as its summary (an imported W&B summary); the read API shows each key's last "
        "value where it names none."))
    notes: str = Field(description="Free text about the run, from its trainer or written since.")


class ApiRunsResponse(_Shape):
    runs: list[ApiRun]


class ApiRunEdit(_Shape):
    """`PATCH /api/v1/runs/{project}/{run}` (write token): what to set; what is absent stays."""

    name: str | None = Field(None, min_length=1, max_length=256, description="The name shown (the identity stays).")
    tags: list[Annotated[str, Field(min_length=1, max_length=256)]] | None = Field(
        None, description="The run's tags, all of them.")
    add_tags: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list, description="Tags added (after `tags`, if given).")
    remove_tags: list[str] = Field(default_factory=list, description="Tags taken away.")
    notes: str | None = Field(None, max_length=100_000)


class ApiRunEdited(_Shape):
    """A run's name, tags and notes after an edit."""

    project: str
    run: str
    name: str
    tags: list[str]
    notes: str


class ApiRunDeleted(_Shape):
    """`DELETE /api/v1/runs/{project}/{run}`: the run and everything of it are gone."""

    project: str
    run: str
    deleted: bool


class ApiMetric(_Shape):
    """A key of a run: how many values it holds, over which steps and times."""

    key: str
    kind: MetricKind
    count: int
    first_step: int
    last_step: int
    last_value: ApiNumber
    first_ms: float
    last_ms: float


class ApiMetricsResponse(_Shape):
    project: str
    run: str
    metrics: list[ApiMetric]


class ApiMetricsManyResponse(_Shape):
    """`GET /api/v1/metrics`: each run asked, in order, as the single-run endpoint answers it."""

    runs: list[ApiMetricsResponse]


class ApiRunsTableCount(_Shape):
    value: str | None = Field(description="null: the runs without a value.")
    runs: int


class ApiRunsTableFacets(_Shape):
    """The choices of the table's filters, over every run (of the project asked)."""

    tags: list[str]
    groups: list[str]
    config_keys: list[str]
    config_values: list[str] | None = Field(None, description="The values of `config_key`, when one is asked.")


class ApiRunsTable(_Shape):
    """`GET /api/v1/runs/table`: one page of the runs that match the filters, filtered, sorted and paged
    by the bridge."""

    total: int = Field(description="Every run known (of the project asked).")
    matched: int = Field(description="Runs that match the filters.")
    offset: int
    limit: int
    sort: str
    runs: list[ApiRun]
    selected: list[ApiRun] = Field(description="The runs asked for by name (`run=`), wherever they are.")
    selected_hidden: int = Field(description="Of the runs asked for by name, those the filters hide.")
    count_by: str
    counts: list[ApiRunsTableCount] = Field(description="Matching runs per value of `count_by`, most first.")
    facets: ApiRunsTableFacets


class ApiKeySection(_Shape):
    """Keys sharing the prefix before their first `/` (`""`: keys without one)."""

    name: str
    offset: int = Field(description="Where the section starts in the order of the matching keys.")
    keys: int


class ApiKeyEntry(_Shape):
    key: str
    runs: list[int] = Field(description="The runs (indices into `runs`) that logged it.")


class ApiKeyRun(_Shape):
    project: str
    run: str
    first_ms: float | None = Field(description="The run's first point: the origin of relative x.")


class ApiKeys(_Shape):
    """`GET /api/v1/keys`: the scalar keys of some runs, in sections by prefix, one range of them."""

    total: int = Field(description="Keys of these runs.")
    matched: int = Field(description="Of them, those the search keeps.")
    sections: list[ApiKeySection]
    offset: int
    limit: int
    keys: list[ApiKeyEntry]
    runs: list[ApiKeyRun] = Field(description="The runs asked, in order.")


class ApiGroupRun(_Shape):
    project: str
    run: str


class ApiGroupColumns(_Shape):
    """Parallel arrays, one entry per pixel column where a run of the group has points."""

    column: list[int]
    x: list[float] = Field(description="The mean x of the runs' values.")
    step: list[float | None] = Field(description="The mean step of the runs' values (null: none).")
    time_ms: list[float | None] = Field(description="The mean wall time of the runs' values (null: none).")
    mean: list[ApiNumber]
    std: list[ApiNumber]
    min: list[ApiNumber]
    max: list[ApiNumber]
    count: list[int] = Field(description="Runs with a value in the column.")


class ApiGroup(_Shape):
    value: str | None = Field(description="What its runs are grouped by (null: runs without it).")
    label: str
    runs: list[ApiGroupRun]
    non_finite: int = Field(description="Runs' values left out of the means for being NaN or ±Inf.")
    columns: ApiGroupColumns


class ApiGroupRow(_Shape):
    """One group's column in the table form: the group, then the column's figures."""

    group: str
    value: str | None
    runs: int
    column: int
    x: float
    step: float | None
    time_ms: float | None
    mean: ApiNumber
    std: ApiNumber
    min: ApiNumber
    max: ApiNumber
    count: int


class _GroupsFields(_Shape):
    """What a groups answer says besides its groups: the key, the grouping, the range and its columns."""

    key: str
    x: XMode
    group_by: str
    start: float | None
    end: float | None
    width: int


class ApiGroupsTable(_GroupsFields):
    """`GET /api/v1/groups/table`: the groups as rows, one per group and column."""

    rows: list[ApiGroupRow]


class ApiGroups(_GroupsFields):
    """`GET /api/v1/groups/series`: groups of runs as one curve each, per pixel column of the range."""

    groups: list[ApiGroup]


# ---------------------------------------------------------------------------------------------- series

class ApiPoint(_Shape):
    x: float
    y: ApiNumber
    step: int
    time_ms: float


class ApiSeriesPoints(_Shape):
    """Parallel arrays, sorted by x."""

    x: list[float]
    y: list[ApiNumber]
    step: list[int]
    time_ms: list[float]


class _SeriesFields(_Shape):
    """What a series answer says besides its points."""

    project: str
    run: str
    key: str
    x: XMode
    start: float | None
    end: float | None
    width: int
    raw: bool = Field(description="These are all the points in the range.")
    total: int = Field(description="Points in the range.")
    before: ApiPoint | None = Field(description="The nearest point left of the range.")
    after: ApiPoint | None = Field(description="The nearest point right of the range.")


class ApiSeriesResponse(_SeriesFields):
    """At most 4·width points that draw the same line as the raw data (M4), or the raw points."""

    points: ApiSeriesPoints


class ApiSeriesManyResponse(_Shape):
    """`GET /api/v1/series`: one answer per run × key, runs outer, keys inner."""

    series: list[ApiSeriesResponse]


class ApiColumnsAt(_Shape):
    """Where a series' columns lie in a binary answer: `n` points at `offset` bytes after the header's padding."""

    n: int
    offset: int


class ApiSeriesColumnsHeader(_SeriesFields):
    """A series in the header of a binary answer: its JSON answer, with `points` naming where its columns are."""

    points: ApiColumnsAt


class ApiSeriesManyColumnsHeader(_Shape):
    series: list[ApiSeriesColumnsHeader]


SeriesBinaryHeaders = ApiSeriesColumnsHeader | ApiSeriesManyColumnsHeader


class ApiHistogram(_Shape):
    """One histogram observation: `counts[i]` values fell in [edges[i], edges[i+1])."""

    step: int
    time_ms: float
    edges: list[float | None] = Field(description="null: an edge that is not finite (a bucket up to +Inf).")
    counts: list[float]
    min: float | None
    max: float | None
    sum: float | None
    count: int | None


class ApiHistogramsResponse(_Shape):
    project: str
    run: str
    key: str
    histograms: list[ApiHistogram]


class ApiText(_Shape):
    """A line of text; `level` is the Python logging level of a log line, 0 for plain text."""

    key: str
    step: int
    time_ms: float
    level: int
    text: str


class ApiTextsResponse(_Shape):
    project: str
    run: str
    texts: list[ApiText]


# ---------------------------------------------------------------------------------------------- alerts

class ApiAlertWindow(_Shape):
    from_step: int
    to_step: int


class ApiAlert(_Shape):
    """An alert of the bridge's alert engine as `GET /api/v1/alerts` lists it (its latest change):
    what happened to which curve (key "" = the whole run: stalled, lost) at which step, over which
    window of steps."""

    id: str
    rule: str
    kind: AlertKind
    severity: Literal["info", "warning", "critical"]
    project: str
    run: str
    key: str
    state: Literal["firing", "resolved"]
    step: int = Field(description="Where the condition became true; for a resolved alert, where it stopped.")
    time_ms: float
    value: AlertValue
    message: str
    window: ApiAlertWindow
    fired_step: int = Field(description="Where it fired (the same as `step` while firing).")
    started_ms: float
    ended_ms: float | None
    version: int
    time_ns: int


class ApiAlertsResponse(_Shape):
    alerts: list[ApiAlert]


# ---------------------------------------------------------------------------------------------- operations

class ApiProducerBatches(_Shape):
    """`GET /api/v1/producers/{producer}/batches`: the seq ranges (inclusive) of the producer's stored batches,
    the newest it received and whether the writer stores now."""

    producer: str
    stored: list[list[int]]
    received_last_seq: int | None = Field(description=(
        "The newest seq received from the producer, stored or still being written (null: none since the bridge "
        "started)."))
    received_s_ago: float | None = Field(description="How long ago it came, in seconds (null: none).")
    writing: bool = Field(description="The writer stores now: no store outage, no write failing unexpectedly.")


class ApiParkedBatch(_Shape):
    """A batch parked after unexpected store errors, with why."""

    producer: str
    seq: int
    reason: str
    source: str
    parked_ms: float
    file: str


class ApiParkedResponse(_Shape):
    parked: list[ApiParkedBatch]


class ApiReplayResponse(_Shape):
    """What became of the parked batches sent through the ingest pipeline again."""

    replayed: int
    rejected: int
    still_parked: int
    parked: list[ApiParkedBatch]


class ApiHealth(_Shape):
    ok: bool


class ApiReadiness(_Shape):
    """`GET /readyz` (503 unless the store and the broker are reachable and the writer is not retrying)."""

    store: bool
    mqtt: bool
    ingest_healthy: bool
    unexpected_store_error: str | None
    parked_batches: int


class ApiError(_Shape):
    detail: str


class ApiRefusal(_Shape):
    """A batch that can never be stored, and why."""

    detail: str
    reason: str


# ---------------------------------------------------------------------------------------------- live WebSocket

class LiveSubscription(_Shape):
    project: str
    run: str
    keys: list[str] | None = Field(None, description="Omitted or null: every key of the run.")


class LiveSubscribe(_Shape):
    """What a client sends, at any time: the full set of runs (and keys) it wants."""

    subscribe: list[LiveSubscription]


class LiveSeriesFrame(_Shape):
    key: str
    step: list[int]
    time_ms: list[float]
    y: list[ApiNumber]


class LivePointsMessage(_Shape):
    """Points of a watched run, decoded and validated, maybe not stored yet."""

    type: Literal["points"]
    project: str
    run: str
    series: list[LiveSeriesFrame]


class LiveStatusMessage(_Shape):
    type: Literal["status"]
    project: str
    run: str
    state: RunState
    reason: str


class LiveRunMessage(_Shape):
    """A new run appeared (sent to every client)."""

    type: Literal["run"]
    project: str
    run: str


class LiveGapMessage(_Shape):
    """Points of this run were not pushed (a slow client, or a huge frame): query the visible range again."""

    type: Literal["gap"]
    project: str
    run: str


class LiveTextsMessage(_Shape):
    """New text lines of a run (at most 1,000 per run per frame; more: a gap follows)."""

    type: Literal["texts"]
    project: str
    run: str
    texts: list[ApiText]


class LiveHistogramMessage(_Shape):
    """A new histogram of a run's key is stored: fetch it."""

    type: Literal["histogram"]
    project: str
    run: str
    key: str
    step: int


class LiveAlertMessage(_Shape):
    """An alert of a watched run fired or resolved: the alert as `GET /api/v1/alerts` lists it."""

    type: Literal["alert"]
    project: str
    run: str
    alert: ApiAlert


class LiveSubscribedMessage(_Shape):
    """The client's subscription is in place: what changed before it may be missing from what it read."""

    type: Literal["subscribed"]
    runs: int


class LiveErrorMessage(_Shape):
    """The client's last message could not be read; its subscriptions stay as they were."""

    type: Literal["error"]
    error: str


LiveMessage = TypeAliasType(
    "LiveMessage",
    Annotated[
        LiveAlertMessage
        | LivePointsMessage
        | LiveStatusMessage
        | LiveRunMessage
        | LiveGapMessage
        | LiveTextsMessage
        | LiveHistogramMessage
        | LiveSubscribedMessage
        | LiveErrorMessage,
        Field(discriminator="type", description="A message the bridge pushes on `WS /api/v1/live`."),
    ],
)

HTTP_MODELS: tuple[type[BaseModel], ...] = (
    ApiRunMeta, ApiResume, ApiRun, ApiRunsResponse, ApiRunEdit, ApiRunEdited, ApiRunDeleted, ApiMetric,
    ApiMetricsResponse, ApiMetricsManyResponse,
    ApiPoint, ApiSeriesPoints, ApiSeriesResponse, ApiSeriesManyResponse, ApiColumnsAt, ApiSeriesColumnsHeader,
    ApiSeriesManyColumnsHeader, ApiHistogram, ApiHistogramsResponse, ApiText, ApiTextsResponse, ApiAlertWindow,
    ApiAlert, ApiAlertsResponse, ApiParkedBatch, ApiParkedResponse, ApiReplayResponse, ApiHealth, ApiReadiness,
    ApiError, ApiRefusal, ApiProducerBatches, ApiRunsTableCount, ApiRunsTableFacets, ApiRunsTable, ApiKeySection,
    ApiKeyEntry, ApiKeyRun, ApiKeys, ApiGroupRun, ApiGroupColumns, ApiGroup, ApiGroups, ApiGroupRow, ApiGroupsTable)
LIVE_MODELS: tuple[type[BaseModel], ...] = (
    LiveSubscription, LiveSubscribe, LiveSeriesFrame, LivePointsMessage, LiveStatusMessage, LiveRunMessage,
    LiveGapMessage, LiveTextsMessage, LiveHistogramMessage, LiveAlertMessage, LiveSubscribedMessage, LiveErrorMessage)


def definitions(ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """Every shape's JSON schema by name (as answers serialize), for OpenAPI and the TypeScript types."""
    _, top = models_json_schema([(m, "serialization") for m in (*HTTP_MODELS, *LIVE_MODELS)],
                                ref_template=ref_template)
    live = TypeAdapter(LiveMessage).json_schema(mode="serialization", ref_template=ref_template)
    message = {k: v for k, v in live.items() if k != "$defs"}
    return {**top["$defs"], **live.pop("$defs"), "LiveMessage": message}
