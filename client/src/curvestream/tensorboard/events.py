"""What one TensorBoard ``Event`` holds, in curvestream's terms: scalars (from
``simple_value`` and from scalar tensors), histograms (``HistogramProto`` and the
``[k, 3]`` tensors of TensorFlow 2), text, and hyperparameters.

Decoded with TensorBoard's own protobuf classes (``tensorboard``, else
``tensorboardX``); TensorFlow is not needed.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from typing import Any, NamedTuple

from curvestream.buckets import Buckets
from curvestream.tensorboard.histogram import from_tensorboard

__all__ = ["EventDecoder", "Scalar", "Histogram", "Text"]

_FLOAT_DTYPES = {1: ("float_val", "<f"), 2: ("double_val", "<d"), 19: ("half_val", "<e")}
_INT_DTYPES = {3: ("int_val", "<i"), 9: ("int64_val", "<q"), 4: ("int_val", "<B"), 5: ("int_val", "<h"),
               6: ("int_val", "<b"), 10: ("bool_val", "<?")}
_DT_STRING = 7
_TEXT_SUFFIX = "/text_summary"  # torch's and tensorboardX's add_text append it to the tag


class Scalar(NamedTuple):
    key: str
    value: float


@dataclasses.dataclass
class Histogram:
    key: str
    buckets: Buckets


@dataclasses.dataclass
class Text:
    key: str
    text: str


def _protos() -> tuple[Any, Any]:
    try:
        from tensorboard.compat.proto import event_pb2
        from tensorboard.plugins.hparams import plugin_data_pb2
    except ImportError:
        try:
            from tensorboardX.proto import event_pb2
            from tensorboardX.proto import plugin_hparams_pb2 as plugin_data_pb2
        except ImportError:
            raise ImportError("curvestream: reading TensorBoard event files needs the tensorboard or tensorboardX "
                              "package: pip install ./proto './client[tensorboard]' (from a clone)") from None
    return event_pb2, plugin_data_pb2


class EventDecoder:
    """Decodes the events of one file; remembers each tag's plugin (TensorBoard
    writes a tag's metadata with its first event only)."""

    def __init__(self) -> None:
        self._event_pb2, self._hparams_pb2 = _protos()
        self._plugins: dict[str, str] = {}
        self.hparams: dict[str, Any] = {}

    def parse(self, payload: bytes) -> Any:
        return self._event_pb2.Event.FromString(payload)

    def items(self, event: Any) -> Iterator[Scalar | Histogram | Text]:
        """The points of ``event``; hyperparameters go to ``self.hparams``."""
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "simple_value":  # the common case first: most files are nothing else
                yield Scalar(value.tag, value.simple_value)
                continue
            tag = value.tag
            if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
                self._plugins[tag] = value.metadata.plugin_data.plugin_name
            plugin = self._plugins.get(tag, "")
            if kind == "histo":
                h = value.histo
                yield Histogram(tag, from_tensorboard(h.bucket_limit, h.bucket, min=h.min, max=h.max, sum=h.sum,
                                                      num=h.num))
            elif plugin == "hparams":
                self._read_hparams(value.metadata.plugin_data.content)
            elif kind == "tensor":
                item = self._tensor_item(tag, plugin, value.tensor)
                if item is not None:
                    yield item

    def _tensor_item(self, tag: str, plugin: str, tensor: Any) -> Scalar | Histogram | Text | None:
        dims = [d.size for d in tensor.tensor_shape.dim]
        if tensor.dtype == _DT_STRING:
            if plugin == "text" and tensor.string_val:
                key = tag[: -len(_TEXT_SUFFIX)] if tag.endswith(_TEXT_SUFFIX) else tag
                return Text(key, b"\n".join(tensor.string_val).decode("utf-8", "replace"))
            return None
        numbers = _numbers(tensor)
        if numbers is None:
            return None
        size = 1
        for d in dims:
            size *= d
        if size == 1 and len(numbers) == 1 and plugin != "histograms":
            return Scalar(tag, float(numbers[0]))
        if plugin == "histograms" and len(dims) == 2 and dims[1] == 3 and len(numbers) == dims[0] * 3:
            lefts, rights, counts = numbers[0::3], numbers[1::3], numbers[2::3]
            edges = [lefts[0], *rights] if lefts else [0.0, 1.0]
            return Histogram(tag, Buckets(edges, counts or [0.0], count=round(sum(counts))))
        return None

    def _read_hparams(self, content: bytes) -> None:
        data = self._hparams_pb2.HParamsPluginData.FromString(content)
        if not data.HasField("session_start_info"):
            return
        for name, v in data.session_start_info.hparams.items():
            kind = v.WhichOneof("kind")
            self.hparams[name] = {"number_value": v.number_value, "string_value": v.string_value,
                                  "bool_value": v.bool_value}.get(kind)


def _numbers(tensor: Any) -> list[float] | None:
    dtype = tensor.dtype
    spec = _FLOAT_DTYPES.get(dtype) or _INT_DTYPES.get(dtype)
    if spec is None:
        return None
    field, fmt = spec
    if tensor.tensor_content:
        width = struct.calcsize(fmt)
        n = len(tensor.tensor_content) // width
        return [float(x) for x in struct.unpack(f"<{n}{fmt[1]}", tensor.tensor_content[: n * width])]
    values = list(getattr(tensor, field))
    if dtype == 19:  # half_val holds the float16 bit patterns
        values = [struct.unpack("<e", struct.pack("<H", v))[0] for v in values]
    return [float(v) for v in values]
