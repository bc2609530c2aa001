"""The run behind the framework integrations: started on first use, finished
with the framework's word for the outcome, started again as the same run
(config carried along) when the framework logs after finishing."""

from __future__ import annotations

from curvestream.lazyrun import STATUS_OF, LazyRun, flatten


def test_nested_hyperparameters_flatten_with_slashes():
    assert flatten({"opt": {"lr": 0.1, "betas": {"b1": 0.9}}, "layers": 4, "empty": {}}) == {
        "opt/lr": 0.1, "opt/betas/b1": 0.9, "layers": 4, "empty": {}}


def test_framework_outcomes_map_to_run_statuses():
    assert (STATUS_OF["success"], STATUS_OF["finished"], STATUS_OF["failed"]) == ("finished", "finished", "failed")


def test_logging_after_finish_continues_the_same_run_with_the_config(spool_dir):
    lazy = LazyRun("p", "r", config={"a": 1}, mode="offline", spool_dir=str(spool_dir))
    assert not lazy.started
    first = lazy.get()
    lazy.update_config({"b": 2})
    lazy.finish("success")
    assert first._report is not None and not lazy.started
    again = lazy.get()
    assert again is not first and (again.project, again.name, again.display_name) == ("p", first.name, "r")
    assert first.name.startswith("r-") and first.display_name == "r"
    assert again.config == {"a": 1, "b": 2}
    lazy.finish("failed")
    lazy.finish("failed")  # nothing left to finish: harmless
