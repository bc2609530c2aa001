"""What is stored with a run besides its points: the config, made plain, and
where the run came from (git commit and dirty flag, host, pid, Python and
framework versions). Runs once, at init(), never on the training path.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import socket
import subprocess
import sys
from typing import Any

from curvestream_wire.v1 import run_pb2

__all__ = ["normalize_config", "collect_meta"]

_FRAMEWORKS = ("torch", "numpy", "jax", "tensorflow", "lightning", "pytorch_lightning", "transformers", "sklearn")


def normalize_config(config: Any) -> dict[str, Any]:
    """A JSON-ready dict from a dict, dataclass, argparse Namespace or pydantic model.

    A pydantic model is validated again first, so a value assigned after
    construction that breaks the model fails here with pydantic's own error.
    """
    if config is None:
        return {}
    if hasattr(config, "model_validate") and hasattr(config, "model_dump"):  # pydantic v2, not imported
        validated = type(config).model_validate(config.model_dump(mode="python"))
        return _plain(validated.model_dump(mode="json"))
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return _plain(dataclasses.asdict(config))
    if isinstance(config, argparse.Namespace):
        return _plain(vars(config))
    if isinstance(config, dict):
        return _plain(config)
    raise TypeError(
        "curvestream: config must be a dict, dataclass, argparse.Namespace or pydantic model, "
        f"got {type(config).__name__}"
    )


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _plain(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(mode="json"))
    return str(value)


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=2, check=False,
            stdin=subprocess.DEVNULL, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


_git_states: dict[str, tuple[str, bool]] = {}


def _git_state() -> tuple[str, bool]:
    """The commit of the working directory and whether tracked files differ from it: asked
    of git once per directory and process (two git processes each; a sweep of a hundred
    runs in one process ran two hundred)."""
    cwd = os.getcwd()
    state = _git_states.get(cwd)
    if state is None:
        commit = _git("rev-parse", "HEAD")
        dirty = bool(commit) and bool(_git("status", "--porcelain", "--untracked-files=no"))
        state = _git_states[cwd] = (commit, dirty)
    return state


def collect_meta(
    project: str,
    run: str,
    producer_id: bytes,
    config: dict[str, Any],
    tags: list[str],
    group: str,
    data_version: str,
    started_ns: int,
    client_version: str,
    *,
    name: str = "",
    resumes: list[run_pb2.Resume] | tuple[run_pb2.Resume, ...] = (),
    notes: str = "",
) -> run_pb2.RunMeta:
    """``run`` is the run's identity; ``name`` the name the user gave it (left
    empty when the same); ``resumes`` the sessions that continued it."""
    commit, dirty = _git_state()
    frameworks = {}
    for framework in _FRAMEWORKS:
        module = sys.modules.get(framework)
        version = getattr(module, "__version__", None) if module is not None else None
        if version:
            frameworks[framework] = str(version)
    return run_pb2.RunMeta(
        version=1,
        project=project,
        run=run,
        config_json=json.dumps(config, ensure_ascii=False, sort_keys=True),
        tags=tags,
        group=group,
        started_ns=started_ns,
        host=socket.gethostname(),
        pid=os.getpid(),
        git_commit=commit,
        git_dirty=dirty,
        python_version=platform.python_version(),
        frameworks=frameworks,
        data_version=data_version,
        producer_id=producer_id,
        client_version=client_version,
        name=name if name != run else "",
        resumes=list(resumes),
        notes=notes,
    )
