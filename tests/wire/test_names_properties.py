"""Properties of the name rules: every valid project or run name survives an
MQTT topic exactly, and no topic, however hostile, breaks the parser."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from curvestream_wire.names import decode_segment, encode_segment, validate_name
from curvestream_wire.topics import Topics

# any Unicode a str can carry in UTF-8, weighted towards what topics and stores treat specially
special = st.sampled_from(list("/+#%$ ,=\"'\\\n\r\t\x7f\x01") + ["%25", "%2F", "%ZZ", "%", "😀", "\u2028"])
hostile_text = st.lists(st.one_of(special, st.characters(exclude_categories=("Cs",))), min_size=1, max_size=60).map(
    "".join
)
valid_names = hostile_text.filter(lambda s: "\x00" not in s)


@given(hostile_text)
@settings(max_examples=1000)
def test_a_segment_decodes_back_to_exactly_its_name_and_holds_no_topic_syntax(name):
    segment = encode_segment(name)
    assert decode_segment(segment) == name
    assert not set(segment) & set("/+#"), segment
    assert all(ord(ch) >= 0x20 and ord(ch) != 0x7F for ch in segment), segment


@given(valid_names, valid_names)
@settings(max_examples=1000)
def test_every_valid_project_and_run_name_comes_back_from_its_topics(project, run):
    validate_name("project name", project)
    validate_name("run name", run)
    for leaf, topic in (("points", Topics.points(project, run)), ("status", Topics.status(project, run)),
                        ("meta", Topics.meta(project, run))):
        assert topic.count("/") == 4
        assert Topics.parse(topic) == (project, run, leaf)


@given(st.one_of(st.text(max_size=80), st.builds(lambda a, b: f"curvestream/v1/{a}/{b}/points",
                                                 st.text(max_size=20), st.text(max_size=20))))
@settings(max_examples=1000)
def test_any_topic_parses_to_a_run_or_none_without_raising(topic):
    parsed = Topics.parse(topic)
    assert parsed is None or len(parsed) == 3
