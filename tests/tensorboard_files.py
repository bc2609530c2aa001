"""TensorBoard event files read back with TensorBoard's own loader, keeping
every event (its default keeps 10,000 scalars per tag by reservoir sampling)."""

from __future__ import annotations

import os
from typing import Any

KEEP_EVERYTHING = {"compressedHistograms": 0, "images": 0, "audio": 0, "scalars": 0, "histograms": 0, "tensors": 0}


def read_run(path: str) -> dict[str, Any]:
    """One directory's events: scalars and texts as (step, wall_time, value) lists, histograms, hparams."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.util import tensor_util

    acc = EventAccumulator(path, size_guidance=KEEP_EVERYTHING)
    acc.Reload()
    tags = acc.Tags()
    out: dict[str, Any] = {"scalars": {}, "histograms": {}, "texts": {}, "hparams": {}}
    for tag in tags["scalars"]:
        out["scalars"][tag] = [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
    for tag in tags["histograms"]:
        out["histograms"][tag] = [(e.step, e.wall_time, e.histogram_value) for e in acc.Histograms(tag)]
    for tag in tags["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        events = acc.Tensors(tag)
        if plugin == "text":
            out["texts"][tag.removesuffix("/text_summary")] = [
                (e.step, e.wall_time, tensor_util.make_ndarray(e.tensor_proto).item().decode()) for e in events]
        elif plugin == "scalars":
            out["scalars"][tag] = [(e.step, e.wall_time, float(tensor_util.make_ndarray(e.tensor_proto)))
                                   for e in events]
    for content in acc._plugin_to_tag_to_content.get("hparams", {}).values():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.HasField("session_start_info"):
            for name, value in data.session_start_info.hparams.items():
                out["hparams"][name] = getattr(value, value.WhichOneof("kind"))
    return out


def run_dirs(root: str) -> list[str]:
    """Every directory under ``root`` holding an event file, relative to ``root``."""
    found = []
    for folder, _, files in os.walk(root):
        if any("tfevents" in f for f in files):
            found.append(os.path.relpath(folder, root))
    return sorted(found)
