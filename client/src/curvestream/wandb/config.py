"""``wandb.config`` and ``run.summary``: mappings with attribute access, whose
changes are sent with the run (its config; its summary).

    >>> config = Config({"lr": 0.1})
    >>> config.lr, config["lr"], config.get("batch", 64)
    (0.1, 0.1, 64)
    >>> config.update({"batch": 32}); config.batch
    32
    >>> config.lr = 0.2
    Traceback (most recent call last):
    ...
    ValueError: curvestream.wandb: config key 'lr' is 0.1 already; pass allow_val_change=True to config.update() ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

__all__ = ["Config", "Summary"]

Changed = Callable[[dict[str, Any]], None]


class _AttrMapping(MutableMapping):
    """Item and attribute access to a dict; ``_changed(values)`` hears each change."""

    def __init__(self, values: Mapping[str, Any] | None = None, changed: Changed | None = None) -> None:
        object.__setattr__(self, "_values", dict(values or {}))
        object.__setattr__(self, "_changed", changed)

    def _bind(self, changed: Changed | None) -> None:
        object.__setattr__(self, "_changed", changed)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        del self._values[key]
        if self._changed is not None:
            self._changed({key: None})

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__.lower()} has no key {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delattr__(self, key: str) -> None:
        del self[key]

    def update(self, values: Any = None, **more: Any) -> None:  # type: ignore[override]
        new = {**_as_dict(values), **more}
        self._values.update(new)
        if new and self._changed is not None:
            self._changed(new)

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._values!r})"


class Config(_AttrMapping):
    """The run's hyperparameters; a value may change only with ``update(..., allow_val_change=True)``, as in W&B."""

    def update(self, values: Any = None, allow_val_change: bool | None = None, **more: Any) -> None:  # type: ignore[override]
        new = {**_as_dict(values), **more}
        if not allow_val_change:
            for key, value in new.items():
                if key in self._values and self._values[key] != value:
                    raise ValueError(f"curvestream.wandb: config key {key!r} is {self._values[key]!r} already; pass "
                                     f"allow_val_change=True to config.update() to change it to {value!r}")
        super().update(new)

    def setdefaults(self, values: Mapping[str, Any]) -> None:
        self.update({k: v for k, v in values.items() if k not in self._values})


class Summary(_AttrMapping):
    """The run's final or best values, shown over each key's last logged value."""


def _as_dict(values: Any) -> dict[str, Any]:
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return dict(values)
    if hasattr(values, "__dict__"):  # argparse.Namespace and the like, as W&B takes them
        return dict(vars(values))
    raise TypeError(f"curvestream.wandb: expected a dict, got {type(values).__name__}")
