"""The README's install lines work from a clone, as written: each `pip install`
line of its "Install from a clone" and "Drop-ins" sections runs in a fresh
virtual environment (which sees the test environment's third-party packages,
so nothing is downloaded but the build tools), and what it installed works: the
commands start, and the bridge serves its page from the installed package.
`make demo` installs the three packages and nothing of the test stack."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import venv

REPO = pathlib.Path(__file__).resolve().parent.parent
SECTIONS = ("Install from a clone", "Drop-ins: one line to switch an existing training script")


def readme_commands() -> list[str]:
    """Every `pip install ...` of the sections, in code blocks or inline, in order, once each."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found: list[str] = []
    for title in SECTIONS:
        body = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
        for block in re.findall(r"```sh\n(.*?)```", body, re.S):
            found += [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("pip install")]
        found += re.findall(r"`(pip install [^`]+)`", re.sub(r"```.*?```", "", body, flags=re.S))
    return list(dict.fromkeys(found))


def test_the_readme_names_its_install_lines():
    assert readme_commands() == ["pip install ./proto ./client", "pip install ./proto ./bridge",
                                 "pip install ./proto './client[tensorboard]'"]


def test_each_install_line_of_the_readme_works_in_a_fresh_environment(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages")]  # the third-party packages, not the clone's sources
    pathlib.Path(site, "_test_environment.pth").write_text("\n".join(ours) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CURVESTREAM_", "PYTHON"))}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    for command in readme_commands():
        done = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    check = ("import pathlib, curvestream, curvestream_bridge, curvestream_wire, curvestream.tensorboard\n"
             "for m in (curvestream, curvestream_bridge, curvestream_wire):\n"
             f"    assert [pathlib.Path(p).is_relative_to({site!r}) for p in m.__path__] == [True], m.__path__\n"
             "page = pathlib.Path(list(curvestream_bridge.__path__)[0]) / 'static' / 'index.html'\n"
             "assert page.exists(), page\n")
    done = subprocess.run([str(python), "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for command in ("curvestream", "curvestream-bridge"):
        done = subprocess.run([str(env_dir / "bin" / command), "--help"], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and done.stdout.startswith(f"usage: {command}"), done.stderr


def test_make_demo_installs_the_three_packages_and_nothing_of_the_test_stack(tmp_path):
    done = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    installs = [line for line in done.stdout.splitlines() if " install " in line and "/pip " in line]
    assert any(line.endswith("-e ./proto -e ./client -e ./bridge") for line in installs), installs
    assert not any("requirements" in line or "[grafana]" in line for line in installs), installs
