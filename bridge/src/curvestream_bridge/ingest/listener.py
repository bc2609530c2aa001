"""The one interface through which the pipeline tells the rest of the bridge
what happened: the live push, the runs list, the alert engine, the run tails.

Subclass :class:`IngestListener` and override what you need; every method is a
no-op here. Each is called from a pipeline thread and must not block for long:
:meth:`decoded` runs on the receiving thread (MQTT's, HTTP's), the others on
the writer thread. Only :meth:`evaluate` may raise (``StoreUnavailable``: the
round is not committed until it succeeds); an exception from the others is
logged and swallowed, so a listener never holds up ingest.
"""

from __future__ import annotations

from collections.abc import Sequence

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch

__all__ = ["IngestListener"]


class IngestListener:
    def decoded(self, batches: Sequence[DecodedBatch]) -> None:
        """Decoded, validated and clock-corrected, not stored yet (nor deduplicated):
        the live push shows them at once."""

    def stored(self, batches: Sequence[DecodedBatch]) -> None:
        """Fresh batches, now in the store."""

    def evaluate(self, batches: Sequence[DecodedBatch]) -> None:
        """The round's fresh and re-sent batches, after the write and before the
        commit goes out (the alert engine saves its state here)."""

    def status(self, status: run_pb2.RunStatus) -> None:
        """A run's status was applied (from its topic, or riding in a batch after its points)."""

    def meta(self, meta: run_pb2.RunMeta) -> None:
        """A run's metadata came on its own topic and was stored."""
