"""The binary series answer keeps its layout: the bridge's encoder writes the
golden answer (``tests/golden/series_binary.json``, which the page's decoder
test reads too) byte for byte, and decoding it gives back its header, a header
of the API's model, and its columns bit for bit (NaN, ±Inf, -0.0, a subnormal)."""

from __future__ import annotations

import base64
import copy
import json
import pathlib

import numpy as np

from curvestream_bridge import series_binary
from curvestream_bridge.api import models

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parents[1] / "golden" / "series_binary.json").read_text())
BODY = base64.b64decode(GOLDEN["body_base64"])


def _column(values: list, dtype: str) -> np.ndarray:
    """A column of the golden file; "NaN", "Infinity" and "-Infinity" are spelled as strings there."""
    return np.array([float(v) if isinstance(v, str) else v for v in values], dtype=dtype)


def _columns(series: dict) -> dict[str, np.ndarray]:
    return {name: _column(series[name], dtype) for name, dtype in series_binary.COLUMNS}


def test_the_encoder_writes_the_golden_answer_byte_for_byte():
    header = copy.deepcopy(GOLDEN["header"])
    assert series_binary.encode(header, [_columns(s) for s in GOLDEN["columns"]]) == BODY


def test_the_golden_answer_decodes_to_its_header_and_columns_bit_for_bit():
    header, columns = series_binary.decode(BODY)
    assert header == GOLDEN["header"]
    models.ApiSeriesManyColumnsHeader.model_validate(header)
    assert len(columns) == len(GOLDEN["columns"]) == 2
    for got, want in zip(columns, GOLDEN["columns"]):
        for name, dtype in series_binary.COLUMNS:
            assert got[name].dtype == np.dtype(dtype)
            assert got[name].tobytes() == _column(want[name], dtype).tobytes(), name
