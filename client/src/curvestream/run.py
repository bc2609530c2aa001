"""A run: what ``curvestream.init()`` returns.

Making a run, batching, sending and the process hooks live in factory.py,
recorder.py, session.py and process_hooks.py.

    >>> import curvestream
    >>> with curvestream.init(project="demo", run="r1", mode="offline") as run:  # doctest: +SKIP
    ...     for step in range(3):
    ...         run.log({"loss": 1.0 / (step + 1)}, step=step)

``log()`` runs on the training thread and only checks and enqueues: no I/O,
no encoding, no lock. The process's recorder thread batches and spools; its
uploader thread sends and lets go of what the bridge has committed (one of
each for all the runs of a process: :mod:`curvestream.session`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from curvestream_wire import names
from curvestream_wire.topics import Topics
from curvestream_wire.v1 import run_pb2

from curvestream import notices, process_hooks, system_metrics
from curvestream.alerts import Alert, AlertDispatcher
from curvestream.bridge_wait import wait_for_bridge
from curvestream.identity import Identity
from curvestream.losses import LossRecord
from curvestream.meta import normalize_config
from curvestream.mqtt import MqttLink
from curvestream.progress import WaitProgress
from curvestream.recorder import Recorder
from curvestream.settings import Settings
from curvestream.spool import Spool
from curvestream.uploader import Uploader
from curvestream.values import AlertItem, HistogramItem, TextItem, alert_level, histogram_values, to_float

if TYPE_CHECKING:
    from curvestream.session import Session

__all__ = ["Run", "FinishReport"]

log = logging.getLogger("curvestream")

_NEVER = -(2**63) - 1  # below every int64 step: no resume to compare steps with

_STATES = {
    "finished": run_pb2.RUN_STATE_FINISHED,
    "failed": run_pb2.RUN_STATE_FAILED,
}


@dataclasses.dataclass
class FinishReport:
    """What finish() saw; also logged when anything was lost or left behind."""

    points_logged: int
    points_spooled: int
    batches: int
    points_dropped_queue_full: int
    points_dropped_spool_full: int
    batches_rejected: int
    batches_left_in_spool: int
    damaged_records: int
    spool_dir: str

    @property
    def complete(self) -> bool:
        return not (self.points_dropped_queue_full or self.points_dropped_spool_full
                    or self.batches_rejected or self.batches_left_in_spool)


class Run:
    """One training run streaming to curvestream. Create it with ``curvestream.init()``
    (or :func:`curvestream.factory.start_run`): the constructor only keeps the parts
    it is given, made and started by the factory.

    ``name`` (and ``id``) is the run's identity, as topics, the store and the API
    know it; ``display_name`` is the name the user gave, which other runs may
    share. ``identity`` (from :func:`curvestream.identity.resolve`) says how this
    session continues a stored run, if it does.
    """

    def __init__(
        self,
        project: str,
        name: str,
        *,
        settings: Settings,
        producer_id: bytes,
        meta: run_pb2.RunMeta,
        spool: Spool,
        recorder: Recorder,
        session: Session,
        losses: LossRecord,
        config: dict[str, Any],
        tags: list[str],
        group: str,
        clock_ns: Callable[[], int] = time.time_ns,
        identity: Identity | None = None,
    ) -> None:
        self.project = project
        self.name = name
        identity = identity or Identity(name, name)
        self.display_name = identity.name
        self.config = config
        self.tags = tags
        self.group = group
        self.settings = settings
        self.producer_id = producer_id
        self.meta = meta
        self.spool = spool
        self.recorder = recorder
        self.session = session
        self.adopted: list[Spool] = []
        """Leftovers of dead producers found when the run started; ``finish()`` waits for them too."""
        self._losses = losses
        self._time_ns = clock_ns
        self.clock_ns = clock_ns
        """The clock the run dates its points by (the machine's, unless injected)."""
        self.started_ns = meta.started_ns
        self._next_step = identity.next_step
        resumed = identity.resumed
        self._resumed_after = resumed.after_step if resumed is not None and resumed.after_step_known else _NEVER
        self._keys: set[str] = set()
        self._closed = False
        self._forked = False
        self._finish_lock = threading.Lock()
        self._report: FinishReport | None = None
        self._batches_rejected = 0
        self._alerts = AlertDispatcher()
        self._stop_reason: str | None = None
        self._queue = recorder.queue  # log() appends here; the flush loop drains it
        self._wake_len = recorder.wake_len

    @property
    def link(self) -> MqttLink | None:
        """The MQTT link of the run's session (None offline)."""
        return self.session.link

    @property
    def uploader(self) -> Uploader | None:
        """The uploader of the run's session (None offline)."""
        return self.session.uploader

    # ------------------------------------------------------------------ logging (training thread)
    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Record scalars: ``run.log({"loss": 0.3, "acc": 0.9}, step=100)``.

        ``step`` defaults to one more than the last step. Values must be real
        numbers (float, int, numpy/torch scalars); NaN and ±Inf are kept.
        """
        t = self._time_ns()
        if self._closed:
            return self._after_close()
        if step is None:
            step = self._next_step
        else:
            if type(step) is not int:
                step = self._check_step(step)
            if step <= self._resumed_after:
                self._went_back(step)
        self._next_step = step + 1
        if type(data) is not dict:
            data = self._check_mapping(data)
        values = dict(data)
        keys = self._keys
        for key, value in values.items():
            if type(value) is not float:
                values[key] = to_float(key, value)
            if key not in keys:
                self._check_key(key)
        queue = self._queue
        if len(queue) >= self._wake_len and self._backlog():
            return
        queue.append((step, t, values))
        if self.recorder.idle:
            self.recorder.resume()

    def log_histogram(self, key: str, values: Any, step: int | None = None, bins: int = 64) -> None:
        """Record the distribution of ``values`` (list, numpy array or torch tensor) at ``step``."""
        head = self._item_head(key, step)
        if head is None:
            return
        if not isinstance(bins, int) or bins <= 0:
            raise ValueError(f"curvestream: bins for histogram {key!r} must be a positive int")
        self._enqueue(HistogramItem(key, head[0], head[1], histogram_values(key, values), bins))

    def log_text(self, key: str, text: str, step: int | None = None, level: int = 0) -> None:
        """Record a line of text (a sample, a note, a log line) at ``step``."""
        head = self._item_head(key, step)
        if head is None:
            return
        if not isinstance(text, str):
            raise TypeError(f"curvestream: text for {key!r} must be a str, got {type(text).__name__}")
        self._enqueue(TextItem(key, head[0], head[1], text, int(level)))

    def alert(self, title: str, text: str = "", level: str = "info", step: int | None = None) -> None:
        """Raise an alert from the script: it goes wherever the bridge's alerts go (the API,
        the page, webhooks, InfluxDB for Grafana, back to ``on_alert``), at the step the run is
        at (or ``step``). It travels in the run's batches: spooled like points, sent until the
        bridge has it, raised once. ``level``: info, warning or critical."""
        t = self._time_ns()
        if self._closed:
            return self._after_close()
        if not isinstance(title, str) or not title.strip() or len(title) > 256:
            raise ValueError(f"curvestream: an alert's title must be a non-empty str of at most 256 characters, "
                             f"got {title!r:.80}")
        if not isinstance(text, str):
            raise TypeError(f"curvestream: an alert's text must be a str, got {type(text).__name__}")
        self._enqueue(AlertItem(title, text[:10_000], alert_level(level), self._take_step(step), t))

    def update_config(self, values: Any) -> None:
        """Merge ``values`` (same types as ``init(config=)``) into the run's config
        and send it again: hyperparameters known only after the run started."""
        if self._closed:
            return self._after_close()
        self.config = {**self.config, **normalize_config(values)}
        meta = run_pb2.RunMeta()
        meta.CopyFrom(self.meta)
        meta.config_json = json.dumps(self.config, ensure_ascii=False, sort_keys=True)
        self._send_meta(meta)

    def update_summary(self, values: Mapping[str, Any]) -> None:
        """Merge ``values`` into the run's summary (final or best values: the runs list and
        ``curvestream.Api`` show them over each key's last value) and send it again."""
        if self._closed:
            return self._after_close()
        summary = {**json.loads(self.meta.summary_json or "{}"), **normalize_config(dict(values))}
        meta = run_pb2.RunMeta()
        meta.CopyFrom(self.meta)
        meta.summary_json = json.dumps(summary, ensure_ascii=False, sort_keys=True)
        self._send_meta(meta)

    def _send_meta(self, meta: run_pb2.RunMeta) -> None:
        self.meta = meta  # re-announced on every reconnect, so the retained copy is the newest
        self._enqueue(meta)
        if self.link is not None:
            self.link.publish(Topics.meta(self.project, self.name), meta.SerializeToString(), retain=True)

    def _went_back(self, step: int) -> None:
        """This resumed session logs a step the stored run had already passed: recorded
        in the run's metadata (the API and the page show it), said once."""
        after, self._resumed_after = self._resumed_after, _NEVER
        meta = run_pb2.RunMeta()
        meta.CopyFrom(self.meta)
        meta.resumes[-1].went_back = True
        meta.resumes[-1].back_to_step = step
        self._send_meta(meta)
        notices.say(f"curvestream: run {self.project}/{self.name} was resumed after step {after:,} and now logs "
                    f"step {step:,}: its steps go back; the runs list marks it (x = time shows both sessions apart)")

    def system_sample(self, wall_ns: int, values: dict[str, float]) -> None:
        """A system metrics sample (the sampler's thread), at the step the run is at; it never
        blocks, and is left out while the queue is full. An idle run's rounds start again."""
        if not self._closed and len(self._queue) < self.recorder.max_queue:
            self._queue.append((max(self._next_step - 1, 0), wall_ns, values))
            if self.recorder.idle:
                self.recorder.resume()

    def _item_head(self, key: str, step: int | None) -> tuple[int, int] | None:
        """(step, wall_ns) of a histogram or text item; None after finish()."""
        t = self._time_ns()
        if self._closed:
            self._after_close()
            return None
        step = self._take_step(step)
        if key not in self._keys:
            self._check_key(key)
        return step, t

    def _take_step(self, step: int | None) -> int:
        if step is None:
            return max(self._next_step - 1, 0)
        step = self._check_step(step) if type(step) is not int else step
        if step <= self._resumed_after:
            self._went_back(step)
        return step

    def _enqueue(self, item: Any) -> None:
        if len(self._queue) >= self._wake_len and self._backlog():
            return
        self._queue.append(item)
        if self.recorder.idle:
            self.recorder.resume()

    # slow paths of log(), kept out of the hot path
    def _check_step(self, step: Any) -> int:
        if isinstance(step, bool) or not hasattr(step, "__index__"):
            raise TypeError(f"curvestream: step must be an int, got {type(step).__name__} {step!r:.40}")
        return int(step.__index__())

    @staticmethod
    def _check_mapping(data: Any) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise TypeError(f"curvestream: log() takes a dict of {{key: number}}, got {type(data).__name__}")
        return data

    def _check_key(self, key: Any) -> None:
        names.validate_key(key)
        self._keys.add(key)

    def _backlog(self) -> bool:
        """The queue is long: the recorder decides (True when this call is dropped)."""
        return self.recorder.backlog(lambda: self._closed)

    def _after_close(self) -> None:
        if self._forked:
            if not getattr(self, "_warned_fork", False):
                self._warned_fork = True
                log.warning("curvestream: log() in a forked child process is ignored; log from the main process")
            return
        if not getattr(self, "_warned_closed", False):
            self._warned_closed = True
            log.warning("curvestream: log() after finish() is ignored (run %s/%s)", self.project, self.name)

    # ------------------------------------------------------------------ alerts (any thread)
    def on_alert(self, callback: Callable[[Alert], Any]) -> None:
        """Call ``callback(alert)`` for every alert the bridge raises or resolves
        about this run (see :mod:`curvestream.alerts`), on a background thread."""
        self._alerts.add(callback)
        if self.link is None:
            log.warning("curvestream: run %s/%s is offline; it receives no alerts", self.project, self.name)
            return
        self.link.watch(Topics.alerts(self.project, self.name), self._alerts.payload)

    def on_watched(self, payload: bytes) -> None:
        """The bridge's retained hint: a live page watches this run (paho's thread)."""
        try:
            hint_ms = int(payload.decode("ascii")) if payload else None
        except (UnicodeDecodeError, ValueError):
            return
        self.recorder.watched(hint_ms)

    def request_stop(self, reason: str) -> None:
        """Ask the training loop to stop (it checks ``stop_requested``); ``finish()``
        without a reason then records this one."""
        if self._stop_reason is None:
            self._stop_reason = str(reason)

    @property
    def finished(self) -> bool:
        """``finish()`` ran (or the run belongs to the parent of this forked process)."""
        return self._report is not None

    @property
    def stop_requested(self) -> bool:
        return self._stop_reason is not None

    @property
    def stop_reason(self) -> str | None:
        return self._stop_reason

    # ------------------------------------------------------------------ background plumbing
    def status_message(self, state: run_pb2.RunState, reason: str = "") -> run_pb2.RunStatus:
        return run_pb2.RunStatus(
            version=1, project=self.project, run=self.name, state=state, reason=reason,
            updated_ns=self._time_ns(), producer_id=self.producer_id, last_seq=self.recorder.stats.last_seq,
            session=self.session.id,
        )

    def announce(self, link: MqttLink) -> None:
        """On every (re)connect: retained metadata, and ``running`` again (a
        dropped connection may have set ``lost`` through the Last Will)."""
        link.publish(Topics.meta(self.project, self.name), self.meta.SerializeToString(), retain=True)
        if not self._closed:
            link.publish(Topics.status(self.project, self.name),
                         self.status_message(run_pb2.RUN_STATE_RUNNING).SerializeToString(), retain=True)

    # ------------------------------------------------------------------ finishing
    def finish(self, status: str = "finished", reason: str = "") -> FinishReport:
        """Flush, wait for the bridge to commit everything, set the run's final
        status and close. Idempotent.

        The wait lasts as long as commits keep coming (a bar on a terminal, the
        batches left in words otherwise) and ends after ``finish_timeout_ms``
        without a single new commit; what is left stays in the spool, and the
        final status names the last batch, so the bridge shows the run as
        finished with batches pending until they arrive."""
        with self._finish_lock:
            if self._report is not None:
                return self._report
            if self._forked:
                raise RuntimeError("curvestream: finish() in a forked child process; finish the run in its parent")
            if status not in _STATES:
                raise ValueError(f"curvestream: status must be one of {sorted(_STATES)}, got {status!r}")
            self._closed = True
            system_metrics.detach(self.system_sample)  # no sample after the final status
            if not reason and self._stop_reason is not None:
                reason = f"stopped early: {self._stop_reason}"
            stall_s = self.settings.finish_timeout_ms / 1000
            final_status = self.status_message(_STATES[status], reason)
            self._queue.append(final_status)
            self.recorder.finish(max(1.0, stall_s))
            producers = [self.spool.producer_id] + [s.producer_id for s in self.adopted]
            uploader = self.uploader
            why = "the run is offline"
            if uploader is not None:
                why = wait_for_bridge(uploader, [self.spool, *self.adopted], self.settings, self._label,
                                      self._finish_progress(), stall_s)
            final_status.updated_ns = self._time_ns()
            final_status.last_seq = self.recorder.stats.last_seq
            self.session.publish_status(self, final_status)
            self._batches_rejected = uploader.rejected_batches(producers) if uploader is not None else 0
            left = self.session.detach(self)
            self._alerts.stop()
            self._report = self._make_report(left, why)
            process_hooks.forget(self)
            return self._report

    def _finish_progress(self) -> WaitProgress:
        rec = self.recorder.stats
        per_batch = rec.points_spooled / rec.batches_sealed if rec.batches_sealed else 0.0
        return WaitProgress(f"curvestream: {self._label}", points_per_batch=per_batch, delay_s=1.0)

    @property
    def _label(self) -> str:
        return f"run {self.project}/{self.name}"

    @property
    def id(self) -> str:
        """The run's identity (``run`` in the API): the name and a random suffix, or the ``id=`` given."""
        return self.name

    def _make_report(self, left: int, why: str = "") -> FinishReport:
        rec = self.recorder.stats
        report = FinishReport(
            points_logged=rec.points_spooled + rec.points_dropped_spool_full + rec.points_dropped_queue_full,
            points_spooled=rec.points_spooled,
            batches=rec.batches_sealed,
            points_dropped_queue_full=rec.points_dropped_queue_full,
            points_dropped_spool_full=rec.points_dropped_spool_full,
            batches_rejected=self._batches_rejected,
            batches_left_in_spool=left,
            damaged_records=len(self.spool.damage) + sum(len(s.damage) for s in self.adopted),
            spool_dir=str(self.settings.spool_path),
        )
        dropped = report.points_dropped_queue_full + report.points_dropped_spool_full
        if dropped:
            self._losses.update(dropped, rec.batches_dropped_spool_full,
                                self._losses.reason or "the log() queue was full (queue_full=drop)")
        self._losses.close()
        if report.points_dropped_queue_full or report.points_dropped_spool_full:
            log.warning("curvestream: run %s/%s dropped %d points (queue full: %d, spool full: %d)",
                        self.project, self.name,
                        report.points_dropped_queue_full + report.points_dropped_spool_full,
                        report.points_dropped_queue_full, report.points_dropped_spool_full)
        if report.batches_rejected:
            log.warning("curvestream: the bridge rejected %d batch(es) of run %s/%s", report.batches_rejected,
                        self.project, self.name)
        if left:
            per_batch = rec.points_spooled / rec.batches_sealed if rec.batches_sealed else 0.0
            notices.left_in_spool(self._label, left, round(left * per_batch), self.settings, why)
        elif notices.trouble_said():
            notices.all_delivered(self._label)
        return report

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None or issubclass(exc_type, (GeneratorExit,)):
            self.finish()
        else:
            self.finish("failed", f"{exc_type.__name__}: {exc}"[:2000])

    def __repr__(self) -> str:
        return f"<curvestream.Run {self.project}/{self.name} producer={self.producer_id.hex()[:8]}>"

    # ------------------------------------------------------------------ fork safety
    def after_fork_in_child(self) -> None:
        """A DataLoader worker or any forked child: the parent owns the spool and
        the connection; the child logs nothing and touches neither."""
        self._closed = True
        self._forked = True
        self._report = FinishReport(0, 0, 0, 0, 0, 0, 0, 0, str(self.settings.spool_path))
        self.spool.forget_after_fork()
        for spool in self.adopted:
            spool.forget_after_fork()
        self.recorder.forget_after_fork()
