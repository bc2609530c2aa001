"""Every point out, for ``GET /api/v1/runs/{project}/{run}/export``
(:mod:`curvestream_bridge.api.export`): a run's scalar series whole, as
Parquet or CSV (:mod:`.files`) or as the binary frames of
:mod:`curvestream_wire.pointstream` that ``curvestream.Api`` reads
(:mod:`.binary`); never a view, never downsampled.
"""
