"""The wire package stands alone: the bridge needs neither the trainer client
nor its process hooks, and importing curvestream installs nothing until a run starts."""

from __future__ import annotations

import importlib.metadata
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]

_RECORD_HOOKS = textwrap.dedent("""
    import os, sys
    registered = []
    _register = os.register_at_fork
    def recording_register_at_fork(**hooks):
        # a builtin's __module__ may be None (the standard library's concurrent.futures registers a lock's methods)
        registered.extend(f.__module__ or "" for f in hooks.values())
        return _register(**hooks)
    os.register_at_fork = recording_register_at_fork
    original_excepthook = sys.excepthook

    def ours():
        return sorted(m for m in registered if m.split(".")[0] in ("curvestream", "curvestream_bridge"))
""")


def _python(code: str, cwd: pathlib.Path) -> str:
    proc = subprocess.run([sys.executable, "-c", _RECORD_HOOKS + textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_running_the_bridge_leaves_the_excepthook_and_fork_hooks_alone(tmp_path):
    out = _python(f"""
        from curvestream_bridge.service import Bridge
        from curvestream_bridge.settings import BridgeSettings
        bridge = Bridge(BridgeSettings(store="duckdb:///{tmp_path / 's.duckdb'}", mqtt_url="",
                                       http_addr="127.0.0.1:1"))
        bridge.start()
        bridge.stop()
        assert sys.excepthook is original_excepthook, sys.excepthook
        assert ours() == [], ours()
        assert "curvestream" not in sys.modules, "the bridge imported the trainer client"
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"


def test_importing_the_client_installs_its_hooks_only_when_a_run_starts(tmp_path):
    out = _python(f"""
        import curvestream
        assert sys.excepthook is original_excepthook
        assert ours() == []
        run = curvestream.init(project="p", id="r", mode="offline", spool_dir="{tmp_path / 'spool'}")
        assert sys.excepthook is not original_excepthook
        assert ours() == ["curvestream.process_hooks"], ours()
        run.finish()
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"


def test_the_bridge_package_depends_on_the_wire_package_and_not_on_the_client():
    requirements = [r.split(";")[0].strip() for r in importlib.metadata.requires("curvestream-bridge") or []]
    names = {r.split("=")[0].split(">")[0].split("<")[0].split("[")[0].strip().lower() for r in requirements}
    assert "curvestream-wire" in names
    assert "curvestream" not in names
    assert "curvestream-wire" in {r.split("=")[0].strip().lower()
                                  for r in importlib.metadata.requires("curvestream") or []}
