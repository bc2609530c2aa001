"""Alert rules: a YAML file (``CURVESTREAM_ALERT_RULES``) read into validated
:class:`Rule` objects, or the defaults when no file is given.

    rules:
      - {name: val-plateau, kind: plateau, key: "val/*", smoothing: 0.9, patience_steps: 2000}
      - {name: any-nan, kind: nonfinite}
      - {name: dead-runs, kind: lost, project: "vision-*"}

Every mistake is reported with the rule's name (or position) and the field:

    >>> parse_rules("rules: [{name: p, kind: plateau, patience_steps: -5}]")
    Traceback (most recent call last):
    ...
    curvestream_bridge.alerts.rules.RulesError: alert rules: rule 'p' (rules[0]), field 'patience_steps': must be ...

and YAML that does not parse by its line and column:

    >>> parse_rules("rules: [{name: p, kind: plateau", "rules.yaml")
    Traceback (most recent call last):
    ...
    curvestream_bridge.alerts.rules.RulesError: alert rules rules.yaml: not valid YAML at line 1, column 32: ...

The full schema is in docs/alerts.md.
"""

from __future__ import annotations

import fnmatch
import pathlib
import re
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

__all__ = ["Rule", "RulesError", "KINDS", "SERIES_KINDS", "RUN_KINDS", "default_rules", "load_rules",
           "parse_rules", "glob_match"]

SERIES_KINDS = ("plateau", "nonfinite", "spike", "threshold")
"""Kinds evaluated on the points of one metric key."""
RUN_KINDS = ("stalled", "lost")
"""Kinds about a run as a whole (no key)."""
KINDS = SERIES_KINDS + RUN_KINDS


class RulesError(ValueError):
    """An alert rules file that cannot be used; the message names the rule and field."""


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def _check_glob(pattern: str) -> str:
    """fnmatch takes any text; refuse the patterns that are surely mistakes."""
    if not pattern:
        raise ValueError("must not be empty (use \"*\" for everything)")
    depth = 0
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "]") else i + 1)
            if close < 0:
                raise ValueError(f"bad glob {pattern!r}: '[' at position {i} is never closed")
            i = close
        elif ch == "]" and depth == 0:
            raise ValueError(f"bad glob {pattern!r}: ']' at position {i} closes nothing")
        i += 1
    return pattern


def glob_match(pattern: str, text: str) -> bool:
    return fnmatch.fnmatchcase(text, pattern)


class Rule(BaseModel):
    """One rule. Fields that do not apply to a rule's kind are refused, so a
    typo never silently does nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: Literal["plateau", "nonfinite", "spike", "stalled", "lost", "threshold"]
    key: str = "*"
    """Glob over metric keys (series kinds only)."""
    project: str = "*"
    """Glob over project names."""
    run: str = "*"
    """Glob over run names."""
    severity: Literal["info", "warning", "critical"] | None = None
    """Label for receivers; default critical for nonfinite and lost, else warning."""

    mode: Literal["min", "max"] | None = None
    """plateau, threshold: which direction is better (plateau) or bad (threshold: max fires above)."""
    smoothing: float | None = None
    """plateau: EMA weight of the past per step, 0 <= smoothing < 1 (0 = raw values); a key logged every k
    steps weighs its past by smoothing**k. Default 0.99."""
    patience_steps: int | None = None
    """plateau: steps without improvement before it fires. Default 1000."""
    min_delta: float | None = None
    """plateau: relative improvement that counts, >= 0. Default 0.005."""
    warmup_steps: int | None = None
    """plateau: steps after the series' first before it is judged. Default 0."""
    noise_margin: float | None = None
    """plateau: once firing, an improvement must also exceed this many standard deviations of the smoothed
    value's noise to resolve it (0: min_delta alone). Default 3."""
    ignore_spikes: float | None = None
    """plateau: points with a robust z above this are left out of the smoothing (0: keep all). Default 10."""
    threshold: float | None = None
    """spike: robust z that fires (default 10); threshold: the value that fires (required)."""
    window: int | None = None
    """spike (and plateau's spike filter): trailing window of finite points. Default 100."""
    min_points: int | None = None
    """spike: points in the window before it judges. Default 20."""
    after_s: float | None = None
    """stalled: seconds without a new point while the run is running. Default 300."""

    _ALLOWED = {
        "plateau": {"mode", "smoothing", "patience_steps", "min_delta", "noise_margin", "warmup_steps", "ignore_spikes",
                    "window"},
        "nonfinite": set(),
        "spike": {"threshold", "window", "min_points"},
        "threshold": {"threshold", "mode"},
        "stalled": {"after_s"},
        "lost": set(),
    }
    _TUNABLE = {"mode", "smoothing", "patience_steps", "min_delta", "noise_margin", "warmup_steps", "ignore_spikes",
                "threshold", "window", "min_points", "after_s"}

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be 1-128 letters, digits, '_', '.', ':' or '-', starting with a letter or digit")
        return v

    @field_validator("key", "project", "run")
    @classmethod
    def _glob(cls, v: str) -> str:
        return _check_glob(v)

    @field_validator("patience_steps", "window", "min_points")
    @classmethod
    def _at_least_one(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"must be at least 1, got {v}")
        return v

    @field_validator("warmup_steps")
    @classmethod
    def _not_negative_int(cls, v: int | None) -> int | None:
        if v is not None and v < 0:
            raise ValueError(f"must not be negative, got {v}")
        return v

    @field_validator("min_delta", "noise_margin", "ignore_spikes")
    @classmethod
    def _not_negative(cls, v: float | None) -> float | None:
        if v is not None and not v >= 0:
            raise ValueError(f"must not be negative, got {v}")
        return v

    @field_validator("smoothing")
    @classmethod
    def _weight(cls, v: float | None) -> float | None:
        if v is not None and not 0 <= v < 1:
            raise ValueError(f"must be at least 0 and below 1 (the weight of the past), got {v}")
        return v

    @field_validator("after_s")
    @classmethod
    def _positive(cls, v: float | None) -> float | None:
        if v is not None and not v > 0:
            raise ValueError(f"must be positive, got {v}")
        return v

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> Rule:
        allowed = self._ALLOWED[self.kind]
        for field in sorted(self._TUNABLE - allowed):
            if getattr(self, field) is not None:
                raise _FieldError(field, f"does not apply to kind {self.kind!r}")
        if self.kind in RUN_KINDS and self.key != "*":
            raise _FieldError("key", f"a {self.kind} rule is about a whole run; it takes no key")
        if self.kind == "threshold" and self.threshold is None:
            raise _FieldError("threshold", "a threshold rule needs the value that fires")
        if self.kind == "spike" and self.threshold is not None and not self.threshold > 0:
            raise _FieldError("threshold", f"must be positive, got {self.threshold}")
        return self

    # ------------------------------------------------------------------ effective values
    def value(self, field: str) -> Any:
        """A field with the kind's default filled in."""
        v = getattr(self, field)
        return _DEFAULTS[self.kind].get(field) if v is None else v

    @property
    def effective_severity(self) -> str:
        return self.severity or ("critical" if self.kind in ("nonfinite", "lost") else "warning")

    def matches_run(self, project: str, run: str) -> bool:
        return glob_match(self.project, project) and glob_match(self.run, run)

    def matches(self, project: str, run: str, key: str) -> bool:
        return self.matches_run(project, run) and glob_match(self.key, key)


_DEFAULTS: dict[str, dict[str, Any]] = {
    # tuned on real trainings (bench/alerts_quality.py): a healthy run raises at most one, at convergence
    "plateau": {"mode": "min", "smoothing": 0.99, "patience_steps": 1000, "min_delta": 0.005, "noise_margin": 3.0,
                "warmup_steps": 0, "ignore_spikes": 10.0, "window": 100},
    "nonfinite": {},
    "spike": {"threshold": 10.0, "window": 100, "min_points": 20},
    "threshold": {"mode": "max"},
    "stalled": {"after_s": 300.0},
    "lost": {},
}


class _FieldError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def default_rules() -> list[Rule]:
    """What applies when ``CURVESTREAM_ALERT_RULES`` is unset."""
    return [
        Rule(name="nonfinite", kind="nonfinite", key="*"),
        Rule(name="loss-plateau", kind="plateau", key="*loss*"),  # the plateau kind's defaults
        Rule(name="stalled", kind="stalled", after_s=300),
        Rule(name="lost", kind="lost"),
    ]


def load_rules(path: str | pathlib.Path) -> list[Rule]:
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"alert rules: cannot read {path}: {exc.strerror or exc}") from None
    return parse_rules(text, str(path))


def parse_rules(text: str, source: str = "alert rules") -> list[Rule]:
    where = "alert rules" if source == "alert rules" else f"alert rules {source}"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RulesError(f"{where}: {_yaml_error(exc)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list):
        raise RulesError(f"{where}: expected a mapping with a list under 'rules:'")
    unknown = sorted(set(doc) - {"rules"})
    if unknown:
        raise RulesError(f"{where}: unknown top-level field {unknown[0]!r} (only 'rules' is known)")
    rules: list[Rule] = []
    names: set[str] = set()
    for i, item in enumerate(doc["rules"]):
        label = f"rule {item.get('name')!r} (rules[{i}])" if isinstance(item, dict) and "name" in item \
            else f"rules[{i}]"
        if not isinstance(item, dict):
            raise RulesError(f"{where}: {label}: expected a mapping of fields, got {item!r}")
        try:
            rule = Rule.model_validate(item)
        except ValidationError as exc:
            raise RulesError(f"{where}: {label}, {_describe(exc)}") from None
        if rule.name in names:
            raise RulesError(f"{where}: {label}, field 'name': {rule.name!r} is used by an earlier rule")
        names.add(rule.name)
        rules.append(rule)
    return rules


def _yaml_error(exc: yaml.YAMLError) -> str:
    """One line with where the YAML goes wrong (line and column from 1), not PyYAML's
    lines naming ``"<unicode string>"``."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"not valid YAML{where}: {problem}"


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    ctx = err.get("ctx") or {}
    inner = ctx.get("error")
    if isinstance(inner, _FieldError):
        return f"field {inner.field!r}: {inner}"
    field = loc[0] if loc else "?"
    msg = str(inner) if isinstance(inner, ValueError) else err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif err["type"] == "missing":
        msg = "is required"
    elif err["type"] == "literal_error":
        msg = f"{err['msg'].lower()}, got {err.get('input')!r}"
    return f"field {field!r}: {msg}"
