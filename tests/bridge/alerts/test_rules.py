"""Alert rules files: the documented form loads, mistakes name the rule and field."""

from __future__ import annotations

import pytest

from curvestream_bridge.alerts.rules import RulesError, default_rules, load_rules, parse_rules

ISSUE_FORM = """
rules:
  - name: loss-plateau
    kind: plateau          # plateau | nonfinite | spike | stalled | lost | threshold
    key: "train/loss"
    mode: min
    smoothing: 0.98
    patience_steps: 500
    min_delta: 0.01
    warmup_steps: 200
  - {name: nonfinite, kind: nonfinite, key: "*"}
  - {name: loss-spike, kind: spike, key: "train/loss", threshold: 10}
  - {name: stalled, kind: stalled, after_s: 15}
  - {name: lost, kind: lost}
"""


def test_the_documented_rules_file_loads_with_every_field(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(ISSUE_FORM)
    rules = load_rules(path)
    assert [r.kind for r in rules] == ["plateau", "nonfinite", "spike", "stalled", "lost"]
    plateau = rules[0]
    assert (plateau.value("smoothing"), plateau.value("patience_steps"), plateau.value("min_delta"),
            plateau.value("warmup_steps"), plateau.value("mode")) == (0.98, 500, 0.01, 200, "min")
    assert rules[2].value("threshold") == 10 and rules[3].value("after_s") == 15
    assert plateau.matches("p", "r", "train/loss") and not plateau.matches("p", "r", "val/loss")


@pytest.mark.parametrize("item, words", [
    ("{name: p, kind: wobble}", ["rule 'p'", "field 'kind'", "'wobble'"]),
    ("{name: p, kind: plateau, key: 'train/[loss'}", ["rule 'p'", "field 'key'", "bad glob"]),
    ("{name: p, kind: plateau, patience_steps: -5}", ["rule 'p'", "field 'patience_steps'", "at least 1"]),
    ("{name: p, kind: plateau, smoothing: 1.0}", ["rule 'p'", "field 'smoothing'"]),
    ("{name: p, kind: stalled, patience_steps: 5}", ["rule 'p'", "field 'patience_steps'", "does not apply"]),
    ("{name: p, kind: threshold}", ["rule 'p'", "field 'threshold'"]),
    ("{name: p, kind: lost, key: loss}", ["rule 'p'", "field 'key'"]),
    ("{name: p, kind: plateau, patience: 5}", ["rule 'p'", "field 'patience'", "unknown field"]),
    ("{kind: plateau}", ["rules[1]", "field 'name'", "required"]),
])
def test_a_mistake_is_reported_with_the_rule_and_the_field(item, words):
    with pytest.raises(RulesError) as err:
        parse_rules(f"rules:\n  - {{name: fine, kind: lost}}\n  - {item}\n")
    for word in words:
        assert word in str(err.value)


def test_two_rules_with_one_name_are_refused():
    with pytest.raises(RulesError, match=r"field 'name'.*earlier rule"):
        parse_rules("rules: [{name: a, kind: lost}, {name: a, kind: nonfinite}]")


def test_a_file_that_is_not_yaml_or_has_no_rules_list_is_refused(tmp_path):
    with pytest.raises(RulesError, match="not valid YAML"):
        parse_rules("rules: [unclosed")
    with pytest.raises(RulesError, match="list under 'rules:'"):
        parse_rules("alerts: []")
    with pytest.raises(RulesError, match="cannot read"):
        load_rules(tmp_path / "missing.yaml")


def test_the_defaults_watch_every_key_for_nonfinite_and_loss_keys_for_plateaus():
    by_kind = {r.kind: r for r in default_rules()}
    assert set(by_kind) == {"nonfinite", "plateau", "stalled", "lost"}
    assert by_kind["nonfinite"].matches("p", "r", "acc")
    assert by_kind["plateau"].matches("p", "r", "train/loss") and not by_kind["plateau"].matches("p", "r", "acc")
    assert by_kind["stalled"].value("after_s") == 300
