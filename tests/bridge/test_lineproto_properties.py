"""Properties of line protocol text: a tag value is stored in a form that
decodes back to exactly the name, a line built from any name holds no
unescaped separator, and real InfluxDB 1.6.7 parses such lines back into
exactly the names and strings that went in."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curvestream_bridge.store.influx.http import InfluxHTTP
from curvestream_bridge.store.influx.lineproto import (
    decode_tag,
    encode_tag,
    influxql_ident,
    influxql_string,
    stored_tag,
    string_field,
)

special = st.sampled_from(
    list(",= \"'\\\n\r\t%#/{}|;\x7f\x01") + ["\\\\", "%25", "%0A", "\\ ", "😀", "\u2028", "'; DROP"]
)
hostile_char = st.one_of(special, st.characters(exclude_categories=("Cs",)))
hostile_text = st.lists(hostile_char, min_size=1, max_size=40).map("".join)
names = hostile_text.filter(lambda s: "\x00" not in s)

# a line-protocol token ends at an unescaped comma, space or =
_UNESCAPED_SEPARATOR = re.compile(r"(?<!\\)(?:\\\\)*[, =]")


@given(hostile_text)
@settings(max_examples=1000)
def test_a_stored_tag_decodes_back_to_exactly_its_name(name):
    assert decode_tag(stored_tag(name)) == name


@given(names)
@settings(max_examples=1000)
def test_an_encoded_tag_is_one_token_without_newlines_or_a_trailing_backslash(name):
    text = encode_tag(name)
    assert not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text), text
    assert not _UNESCAPED_SEPARATOR.search(text.replace("\\,", "").replace("\\ ", "").replace("\\=", "")), text
    assert text.replace("\\,", ",").replace("\\ ", " ").replace("\\=", "=") == stored_tag(name)


@given(st.text(max_size=200))
@settings(max_examples=2000)
def test_a_string_field_reads_back_as_its_json_text(text):
    field = string_field(text)
    assert field[0] == field[-1] == '"' and "\n" not in field
    inner = field[1:-1].replace('\\"', '"').replace("\\\\", "\\")  # line protocol's two escapes, undone
    assert json.loads(inner) == text


@pytest.fixture(scope="module")
def influx_db(influxd):
    db = InfluxHTTP(influxd.store_url("lineproto_properties"))
    db.connect()
    yield db
    db.close()


@given(metric=names, project=names, text=st.text(max_size=100))
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_real_influxdb_parses_a_line_of_hostile_names_back_into_exactly_those_names(influx_db, metric, project,
                                                                                   text):
    t = next(_timestamps)
    influx_db.write([f"prop,metric={encode_tag(metric)},project={encode_tag(project)} "
                     f"text={string_field(text)},step=1i {t}"])
    where = f"{influxql_ident('metric')} = {influxql_string(stored_tag(metric))} AND time = {t}"
    rows = influx_db.series(f'SELECT "text", "project" FROM "prop" WHERE {where}')
    assert len(rows) == 1 and len(rows[0]["values"]) == 1, rows
    _, stored_text, stored_project = rows[0]["values"][0]
    assert decode_tag(stored_project) == project
    assert json.loads(stored_text) == text
    tags = influx_db.series(f'SHOW TAG VALUES FROM "prop" WITH KEY = "metric" WHERE time = {t}')
    assert metric in {decode_tag(v[1]) for s in tags for v in s["values"]}


_timestamps = itertools.count(1_700_000_000_000_000_000, 1000)
