"""A run's points as the binary frames of :mod:`curvestream_wire.pointstream`,
made page by page as the store reads them."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from curvestream_wire import pointstream

from curvestream_bridge.store.base import Store

__all__ = ["binary_stream"]

log = logging.getLogger("curvestream.bridge.export")


def binary_stream(store: Store, project: str, run: str, keys: list[str]) -> Iterator[bytes]:
    """The frames, ending with the end frame, or with an error frame after a failure:
    the stream has begun, so no status code can say it, and the client must not take
    a cut stream for all points."""
    total = 0
    try:
        for key in keys:
            for page in store.points(project, run, key):
                yield from pointstream.frame(key, page.step, page.wall_ns, page.value)
                total += len(page.step)
    except Exception as exc:
        log.warning("curvestream bridge: export of %s/%s stopped after %d points: %s", project, run, total, exc)
        yield pointstream.error_frame(f"{type(exc).__name__}: {exc}")
        return
    yield pointstream.end_frame(total)
