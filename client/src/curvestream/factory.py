"""Making a run: everything ``curvestream.init()`` does before it returns.

Names and config are checked first, before anything touches the disk or the
network; then the run's spool (its own directory, locked), its loss record and
metadata, its recorder, and its place in the process's session (the shared
batching thread, uploader and MQTT connection, started with the first run),
which also picks up the spools that dead runs left in the same directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from curvestream_wire import names
from curvestream_wire.v1 import run_pb2

from curvestream import process_hooks, system_metrics
from curvestream.encode import BatchBuilder
from curvestream.identity import Identity
from curvestream.losses import LossRecord
from curvestream.meta import collect_meta, normalize_config
from curvestream.recorder import Recorder
from curvestream.run import Run
from curvestream.session import session_for
from curvestream.settings import Settings
from curvestream.spool import Spool
from curvestream.version import __version__

__all__ = ["start_run"]


def start_run(
    project: str,
    name: str,
    *,
    settings: Settings,
    config: Any = None,
    tags: Iterable[str] = (),
    group: str = "",
    data_version: str = "",
    notes: str = "",
    clock_ns: Callable[[], int] = time.time_ns,
    identity: Identity | None = None,
) -> Run:
    """A run, started: its first batch (metadata, ``running``) is queued. ``name`` is its
    identity; ``identity`` (:func:`curvestream.identity.resolve`) its display name and how
    it continues a stored run, if it does."""
    project = names.validate_name("project name", project)
    name = names.validate_name("run name", name)
    identity = identity or Identity(name, name)
    if identity.id != name:
        raise ValueError(f"curvestream: run {name!r} given the identity of run {identity.id!r}")
    plain_config = normalize_config(config)  # pydantic errors surface here, before any connection
    tag_list = [str(t) for t in tags]
    group = str(group or "")
    producer_id = os.urandom(16)
    try:
        spool = Spool.create(settings.spool_path, producer_id, project, name)
    except OSError as exc:
        raise OSError(f"curvestream: cannot create the spool in {settings.spool_path} ({exc}); "
                      "point CURVESTREAM_SPOOL_DIR (or spool_dir=) at a writable directory") from exc
    session = session_for(settings)
    try:
        meta = collect_meta(project, name, producer_id, plain_config, tag_list, group, data_version,
                            identity.started_ns or clock_ns(), __version__, name=identity.name,
                            resumes=identity.resumes(), notes=str(notes or ""))
        meta.session = session.id
        recorder = Recorder(settings, spool,
                            lambda next_seq: BatchBuilder(producer_id, project, name, next_seq, clock_ns))
        losses = LossRecord(settings.spool_path, producer_id, project, name)
        recorder.on_dropped = lambda stats, why: losses.update(
            stats.points_dropped_spool_full + stats.points_dropped_queue_full, stats.batches_dropped_spool_full, why)
        run = Run(project, name, settings=settings, producer_id=producer_id, meta=meta, spool=spool,
                  recorder=recorder, session=session, losses=losses, config=plain_config, tags=tag_list,
                  group=group, clock_ns=clock_ns, identity=identity)
    except BaseException:
        session.abandon()
        spool.release()
        raise
    recorder.queue.append(meta)
    recorder.queue.append(run.status_message(run_pb2.RUN_STATE_RUNNING))
    run.adopted = session.attach(run)
    if settings.system_metrics:
        system_metrics.attach(run.system_sample, settings.system_metrics_interval_ms / 1000)
    process_hooks.watch(run)
    return run
