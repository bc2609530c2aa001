"""The command line's known failures end in one line that says what to do, not
a traceback; every option has a help text (with its unit); a second
`curvestream demo` trains into the first one's stack and says so."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys

import pytest

from curvestream.cli import build_parser
from servers import free_port, wait_until


def cli(*args: str, env: dict[str, str] | None = None, cwd: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    return subprocess.run([sys.executable, "-m", "curvestream.cli", *args], capture_output=True, text=True,
                          env={**base, **(env or {})}, cwd=cwd, timeout=timeout)


def one_line(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_up_on_a_busy_port_says_so_in_one_line(busy_port, tmp_path):
    for args, option in ((["--port", str(busy_port), "--mqtt-port", str(free_port())], "--port"),
                         (["--port", str(free_port()), "--mqtt-port", str(busy_port)], "--mqtt-port")):
        done = cli("up", "--data", str(tmp_path / "data"), *args)
        line = one_line(done)
        assert done.returncode == 2
        assert line.startswith(f"curvestream up: port {busy_port} on 127.0.0.1") and "is in use" in line
        assert f"choose another with {option} N" in line


@pytest.mark.parametrize("command", ["up", "demo"])
def test_up_and_demo_with_a_rules_file_that_is_not_yaml_name_the_file_and_line(command, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {name: p, kind: [plateau}\n")
    done = cli(command, "--data", str(tmp_path / "data"), "--port", str(free_port()), "--mqtt-port",
               str(free_port()), env={"CURVESTREAM_ALERT_RULES": str(rules)})
    line = one_line(done)
    assert done.returncode == 2
    assert line == (f"curvestream {command}: bad settings: CURVESTREAM_ALERT_RULES: alert rules {rules}: not valid "
                    "YAML at line 2, column 29: expected ',' or ']', but got '}'")
    bad_field = tmp_path / "field.yaml"
    bad_field.write_text("rules:\n  - {name: hasty, kind: plateau, patience_steps: -5}\n")
    line = one_line(cli(command, "--data", str(tmp_path / "data"), "--port", str(free_port()), "--mqtt-port",
                        str(free_port()), env={"CURVESTREAM_ALERT_RULES": str(bad_field)}))
    assert "rule 'hasty' (rules[0]), field 'patience_steps': must be at least 1, got -5" in line


def test_grafana_sync_without_a_grafana_checks_offline_with_dry_run_and_says_it_in_one_line_without(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dry = cli("grafana", "sync", "--url", url, "--token", "t", "--dry-run", "--webhook-url", "http://hook/", cwd=repo)
    assert dry.returncode == 0 and dry.stderr == "", dry.stderr
    assert "Max retries" not in dry.stdout
    *steps, last = dry.stdout.splitlines()
    assert last == (f"Grafana at {url} cannot be reached ([Errno 111] Connection refused): each body above was "
                    "built and checked against grafana-foundation-sdk's types; what Grafana holds was not compared "
                    "and nothing was sent")
    kinds = [line.split()[:2] for line in steps]
    assert ["checked", "dashboard"] in kinds and ["checked", "contact"] in kinds and ["checked", "alert"] in kinds
    assert ["unknown", "plugin"] in kinds
    done = cli("grafana", "sync", "--url", url, "--token", "t", cwd=repo)
    assert done.returncode == 2 and done.stdout == ""
    assert one_line(done) == (f"curvestream grafana sync: cannot reach Grafana at {url} ([Errno 111] Connection "
                              "refused); nothing was changed")


def _options(parser: argparse.ArgumentParser, path: str = "curvestream"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_option_has_a_help_text_and_times_say_their_unit():
    options = list(_options(build_parser()))
    assert len(options) >= 25
    missing = [f"{path} {action.option_strings or action.dest}" for path, action in options if not action.help]
    assert missing == []
    for path, action in options:
        if {"--timeout", "--duration"} & set(action.option_strings):
            assert "seconds" in action.help, (path, action.help)
    for command in (["alerts", "--help"], ["alerts", "test", "--help"], ["bridge", "--help"],
                    ["grafana", "sync", "--help"], ["demo", "--help"], ["status", "--help"]):
        done = cli(*command)
        assert done.returncode == 0 and "rest" not in done.stdout.split(), (command, done.stdout)


def test_the_bridge_command_lists_its_commands_and_each_has_help():
    done = subprocess.run([sys.executable, "-c", "import sys; from curvestream_bridge.cli import main; "
                           "sys.argv[0] = 'curvestream-bridge'; main()", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: curvestream-bridge")
    assert "replay-dead-letters" in done.stdout and "grafana sync" in done.stdout
    grafana = subprocess.run([sys.executable, "-m", "curvestream_bridge", "grafana", "--help"],
                             capture_output=True, text=True, timeout=60)
    assert grafana.returncode == 0 and "sync" in grafana.stdout


def test_a_second_demo_trains_into_the_running_stack_and_says_whose_it_is(tmp_path):
    port, mqtt_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    up = subprocess.Popen([sys.executable, "-m", "curvestream.cli", "up", "--data", str(tmp_path / "data"), "--port",
                           str(port), "--mqtt-port", str(mqtt_port)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        assert "curvestream is up" in up.stdout.readline()
        done = cli("demo", "--port", str(port), "--mqtt-port", str(mqtt_port), "--runs", "1", "--steps", "50",
                   "--duration", "1", "--spool-dir", str(tmp_path / "spool"))
        assert done.returncode == 0, done.stderr
        assert f"watch them at the curvestream already running at http://127.0.0.1:{port}" in done.stdout
        assert done.stdout.splitlines()[-1] == (f"curvestream demo: training done; the curves stay at "
                                                f"http://127.0.0.1:{port}, served by the curvestream that was "
                                                "already running there")
        assert "Ctrl-C" not in done.stdout
        again = cli("up", "--data", str(tmp_path / "other"), "--port", str(port), "--mqtt-port", str(free_port()))
        assert one_line(again).startswith(f"curvestream up: port {port} on 127.0.0.1, for the page and API, is in "
                                          f"use by a curvestream already running: http://127.0.0.1:{port}")
    finally:
        up.terminate()
        up.wait(30)
        up.stdout.close()
    wait_until(lambda: up.poll() is not None, 10, "the stack to stop")
