"""compose/: the stack's file is valid Compose, and its parts are wired to each
other and to the code (the bridge's settings, the InfluxDB schema it writes, the
provisioning, the panel plugin). No Docker engine runs here: the file is checked
against the Compose Specification's JSON schema, the configs by the real
programs where this machine has them (Mosquitto 2, sh)."""

from __future__ import annotations

import copy
import importlib.resources
import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import urllib.parse
from typing import Any

import pytest
import tomllib
import yaml

from curvestream_bridge.settings import BridgeSettings, parse_addr
from grafana_kit import COMPOSE_DIR, PROVISIONING_DIR, REPO, compose_interpolate, compose_variables, read_env_file
from servers import ServerProcess, require_binary, wait_until

COMPOSE_FILE = COMPOSE_DIR / "docker-compose.yml"
ENV_EXAMPLE = COMPOSE_DIR / ".env.example"
PANEL_DIR = REPO / "panels" / "echarts-plugin"


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return read_env_file(ENV_EXAMPLE)


@pytest.fixture(scope="module")
def raw_compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compose(raw_compose: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    return compose_interpolate(raw_compose, env)


@pytest.fixture(scope="module")
def compose_schema() -> Any:
    """The Compose Specification's JSON schema, as vendored by check-jsonschema (PyPI)."""
    try:
        import jsonschema

        vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    except ImportError as exc:
        raise RuntimeError(
            f"{exc}: pip install -c constraints.txt -r requirements-dev.txt (check-jsonschema)"
        ) from None
    schema = json.loads((vendor / "compose-spec.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def service_env(compose: dict[str, Any], service: str) -> dict[str, str]:
    environment = compose["services"][service].get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {k: "" if v is None else str(v) for k, v in environment.items()}


def published(compose: dict[str, Any], service: str) -> dict[int, int]:
    """Container port -> host port of a service's published ports."""
    out = {}
    for spec in compose["services"][service].get("ports", []):
        host_port, container_port = str(spec).rsplit(":", 2)[-2:]
        out[int(container_port)] = int(host_port)
    return out


def mounts(compose: dict[str, Any], service: str) -> list[tuple[str, str]]:
    """(source, target) of a service's volumes; a bind's source made absolute."""
    out = []
    for spec in compose["services"][service].get("volumes", []):
        if isinstance(spec, dict):
            source, target = spec["source"], spec["target"]
        else:
            source, target = spec.split(":")[:2]
        if source.startswith("."):
            source = str((COMPOSE_DIR / source).resolve())
        out.append((source, target))
    return out


def to_repo(compose: dict[str, Any], service: str, container_path: str) -> pathlib.Path:
    """Where a path inside a container comes from in this repository (through a bind mount)."""
    for source, target in sorted(mounts(compose, service), key=lambda m: -len(m[1])):
        if os.path.isabs(source) and (container_path == target or container_path.startswith(target + "/")):
            return pathlib.Path(source) / container_path[len(target):].lstrip("/")
    raise AssertionError(f"{container_path} is not bind-mounted into {service}")


# --------------------------------------------------------------------------- the file itself
def test_compose_file_is_valid_against_the_compose_specification(compose, compose_schema) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in compose_schema.iter_errors(compose)]
    assert errors == []


def test_the_schema_check_rejects_a_broken_compose_file(compose, compose_schema) -> None:
    broken = copy.deepcopy(compose)
    broken["services"]["bridge"]["depends_on"]["influxdb"]["condition"] = "when_ready"
    broken["services"]["grafana"]["helthcheck"] = broken["services"]["grafana"].pop("healthcheck")
    messages = " ".join(e.message for e in compose_schema.iter_errors(broken))
    assert "when_ready" in messages and "helthcheck" in messages


def test_every_variable_of_the_compose_file_is_in_env_example_and_secrets_are_required(raw_compose, env) -> None:
    used = compose_variables(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert used - set(env) == set()
    with pytest.raises(ValueError, match="INFLUXDB_TOKEN"):
        compose_interpolate(raw_compose, {k: v for k, v in env.items() if k != "INFLUXDB_TOKEN"})


def test_images_are_pinned_to_a_version(compose) -> None:
    images = {name: s["image"] for name, s in compose["services"].items() if "image" in s}
    assert images["grafana"].startswith("grafana/grafana:12.")
    assert images["influxdb"].startswith("influxdb:2.")
    assert images["mosquitto"].startswith("eclipse-mosquitto:2")
    assert all(":" in image and not image.endswith(":latest") for image in images.values())


def test_every_service_has_a_healthcheck_and_dependencies_wait_for_it(compose) -> None:
    services = compose["services"]
    for name in ("mosquitto", "influxdb", "grafana", "bridge"):
        assert services[name]["healthcheck"]["test"], name
    for name, service in services.items():
        for dep, spec in service.get("depends_on", {}).items():
            if spec["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep}'s health, which it never reports"
    assert services["bridge"]["depends_on"] == {"mosquitto": {"condition": "service_healthy"},
                                                "influxdb": {"condition": "service_healthy"}}
    assert services["grafana"]["depends_on"]["influxdb"]["condition"] == "service_healthy"


def test_telegraf_is_optional_behind_a_profile(compose) -> None:
    assert compose["services"]["telegraf"]["profiles"] == ["telegraf"]
    assert all("profiles" not in s for n, s in compose["services"].items() if n != "telegraf")


# --------------------------------------------------------------------------- the bridge
def bridge_env_names_read_outside_settings() -> set[str]:
    """CURVESTREAM_* variables the bridge reads itself (os.environ), besides BridgeSettings."""
    names = set()
    for path in (REPO / "bridge" / "src").rglob("*.py"):
        names |= set(re.findall(r"os\.environ\.get\(\s*[\"'](CURVESTREAM_[A-Z0-9_]+)", path.read_text()))
    return names


def test_every_bridge_variable_is_a_setting_the_bridge_reads(compose) -> None:
    fields = {f"CURVESTREAM_{name.upper()}" for name in BridgeSettings.model_fields}
    extra = bridge_env_names_read_outside_settings()
    unknown = set(service_env(compose, "bridge")) - fields - extra
    assert unknown == set(), f"the bridge never reads {sorted(unknown)}"
    assert "CURVESTREAM_GRAFANA_LIVE_URL" in fields and "CURVESTREAM_GRAFANA_LIVE_TOKEN" in fields


def test_the_bridges_settings_load_and_it_would_serve_with_tokens_on_all_interfaces(compose) -> None:
    values = {k.removeprefix("CURVESTREAM_").lower(): v for k, v in service_env(compose, "bridge").items()
              if k.removeprefix("CURVESTREAM_").lower() in BridgeSettings.model_fields}
    settings = BridgeSettings(**values)
    settings.check_exposure()  # raises SystemExit without read and write tokens on 0.0.0.0
    assert parse_addr(settings.http_addr) == ("0.0.0.0", 8080)
    assert settings.read_token and settings.write_token and settings.read_token != settings.write_token
    assert published(compose, "bridge") == {8080: 8080}
    assert "8080/readyz" in " ".join(compose["services"]["bridge"]["healthcheck"]["test"])
    assert settings.mqtt_client_id == "curvestream-bridge-compose"  # stable: the broker keeps its session


def test_the_bridges_store_url_reaches_influxdb_with_the_token_and_the_mapped_database(compose, env) -> None:
    store = urllib.parse.urlsplit(service_env(compose, "bridge")["CURVESTREAM_STORE"])
    influx = service_env(compose, "influxdb")
    assert store.scheme == "influxdb" and store.hostname == "influxdb" and store.port == 8086
    assert store.hostname in compose["services"] and 8086 in published(compose, "influxdb")
    # InfluxStore: no user and a password -> "Authorization: Token <password>"
    assert store.username in ("", None)
    assert urllib.parse.unquote(store.password) == env["INFLUXDB_TOKEN"] == influx["DOCKER_INFLUXDB_INIT_ADMIN_TOKEN"]
    assert store.path.strip("/") == env["INFLUXDB_DB"] == influx["CURVESTREAM_INFLUXDB_DB"]


def test_the_bridge_subscribes_to_the_mosquitto_service(compose) -> None:
    mqtt = urllib.parse.urlsplit(service_env(compose, "bridge")["CURVESTREAM_MQTT_URL"])
    assert (mqtt.scheme, mqtt.hostname, mqtt.port) == ("mqtt", "mosquitto", 1883)
    assert 1883 in published(compose, "mosquitto")
    conf = (COMPOSE_DIR / "mosquitto" / "mosquitto.conf").read_text()
    assert re.search(r"^listener 1883$", conf, re.M)


# --------------------------------------------------------------------------- the Dockerfile
def test_the_dockerfile_builds_from_the_repository_and_runs_the_bridges_command(compose) -> None:
    build = compose["services"]["bridge"]["build"]
    context = (COMPOSE_DIR / build["context"]).resolve()
    dockerfile = context / build["dockerfile"]
    assert context == REPO and dockerfile == COMPOSE_DIR / "Dockerfile"
    text = dockerfile.read_text()
    sources = [src for line in re.findall(r"^COPY (?!--from)(.+)$", text, re.M) for src in line.split()[:-1]]
    assert sources and all((REPO / s).exists() for s in sources), sources
    ignore = (COMPOSE_DIR / "Dockerfile.dockerignore").read_text().splitlines()
    kept = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert all(any(s.rstrip("/") == k or s.startswith(k + "/") for k in kept) for s in sources)
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (.+)$", text, re.M).group(1))
    scripts = tomllib.loads((REPO / "bridge" / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint[0] in scripts
    # the page is built into the image where the bridge package serves it from
    assert "OUT_DIR=/out/static npm run build" in text
    assert "process.env.OUT_DIR" in (PANEL_DIR / "build.mjs").read_text()
    assert "COPY --from=page /out/static/ bridge/src/curvestream_bridge/static/" in text


# --------------------------------------------------------------------------- InfluxDB 2 and its DBRP mapping
def test_the_influxdb_init_script_maps_the_bridges_database_to_the_bucket(compose, tmp_path) -> None:
    init_dir = to_repo(compose, "influxdb", "/docker-entrypoint-initdb.d")
    script = init_dir / "create-dbrp.sh"
    assert script.stat().st_mode & stat.S_IXUSR
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    calls = tmp_path / "influx-calls"
    (fake_bin / "influx").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {calls}\necho ---- >> {calls}\n')
    (fake_bin / "influx").chmod(0o755)
    influx_env = service_env(compose, "influxdb")
    run_env = {**influx_env, "PATH": f"{fake_bin}:/usr/bin:/bin", "DOCKER_INFLUXDB_INIT_BUCKET_ID": "0123abcd"}
    subprocess.run(["sh", str(script)], env=run_env, check=True, timeout=30)
    default, meta = [c.strip().splitlines() for c in calls.read_text().split("----") if c.strip()]
    for args in (default, meta):
        assert args[:3] == ["v1", "dbrp", "create"]
        option = {args[i]: args[i + 1] for i in range(3, len(args) - 1) if args[i].startswith("--")}
        assert option["--bucket-id"] == "0123abcd"
        assert option["--org"] == influx_env["DOCKER_INFLUXDB_INIT_ORG"]
        assert option["--db"] == influx_env["CURVESTREAM_INFLUXDB_DB"]
    assert "--rp" in default and default[default.index("--rp") + 1] == "autogen" and "--default" in default
    # the bridge's meta policy, which the alert rule names: mapped to the same bucket, not the default
    store = urllib.parse.urlsplit(service_env(compose, "bridge")["CURVESTREAM_STORE"])
    assert urllib.parse.parse_qs(store.query)["meta_rp"] == [meta[meta.index("--rp") + 1]] == ["curvestream_meta"]
    assert "--default" not in meta
    assert influx_env["DOCKER_INFLUXDB_INIT_MODE"] == "setup"


# --------------------------------------------------------------------------- Grafana
def test_grafana_loads_the_unsigned_curvestream_panel_from_its_build_output(compose) -> None:
    plugin = json.loads((PANEL_DIR / "src" / "grafana" / "plugin.json").read_text())
    assert service_env(compose, "grafana")["GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS"] == plugin["id"]
    (dist, target), = [(s, t) for s, t in mounts(compose, "grafana") if t.startswith("/var/lib/grafana/plugins/")]
    assert target == f"/var/lib/grafana/plugins/{plugin['id']}"
    # dist/ is not committed: `npm run build:grafana` writes it (build-grafana.mjs, default OUT_DIR)
    assert pathlib.Path(dist) == PANEL_DIR / "dist"
    assert "build:grafana" in json.loads((PANEL_DIR / "package.json").read_text())["scripts"]
    assert "resolve(here, 'dist')" in (PANEL_DIR / "build-grafana.mjs").read_text()
    volume = next(v for v in compose["services"]["grafana"]["volumes"] if isinstance(v, dict))
    assert volume["bind"]["create_host_path"] is False  # an unbuilt plugin fails loudly, not as an empty folder


def test_grafanas_provisioning_is_mounted_where_its_providers_look(compose) -> None:
    assert to_repo(compose, "grafana", "/etc/grafana/provisioning") == PROVISIONING_DIR
    provider = yaml.safe_load((PROVISIONING_DIR / "dashboards" / "curvestream.yaml").read_text())["providers"][0]
    dashboards_dir = to_repo(compose, "grafana", provider["options"]["path"])
    assert sorted(p.name for p in dashboards_dir.glob("*.json")) == ["curvestream-flux.json",
                                                                      "curvestream-influxql.json"]
    home = service_env(compose, "grafana")["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert to_repo(compose, "grafana", home).is_file()


def test_the_data_sources_get_their_settings_from_grafanas_environment(compose, env) -> None:
    text = (PROVISIONING_DIR / "datasources" / "curvestream.yaml").read_text()
    grafana_env = service_env(compose, "grafana")
    assert compose_variables(text) - set(grafana_env) == set()
    sources = {d["uid"]: d for d in yaml.safe_load(compose_interpolate(text, grafana_env))["datasources"]}
    flux, influxql = sources["curvestream-influxdb-flux"], sources["curvestream-influxdb-influxql"]
    for source in (flux, influxql):
        url = urllib.parse.urlsplit(source["url"])
        assert url.hostname in compose["services"] and url.port in published(compose, url.hostname)
    assert flux["jsonData"]["version"] == "Flux"
    assert flux["jsonData"]["defaultBucket"] == env["INFLUXDB_BUCKET"]
    assert flux["jsonData"]["organization"] == env["INFLUXDB_ORG"]
    assert flux["secureJsonData"]["token"] == env["INFLUXDB_TOKEN"]
    assert influxql["jsonData"]["version"] == "InfluxQL"
    assert influxql["jsonData"]["dbName"] == env["INFLUXDB_DB"]  # the DBRP mapping's database
    assert influxql["jsonData"]["httpHeaderName1"] == "Authorization"
    assert influxql["secureJsonData"]["httpHeaderValue1"] == f"Token {env['INFLUXDB_TOKEN']}"


def test_published_ports_are_the_ones_the_services_listen_on(compose, env) -> None:
    assert published(compose, "mosquitto") == {1883: int(env["MQTT_PORT"])}
    assert published(compose, "influxdb") == {8086: int(env["INFLUXDB_PORT"])}
    assert published(compose, "grafana") == {3000: int(env["GRAFANA_PORT"])}
    assert published(compose, "bridge") == {8080: int(env["BRIDGE_PORT"])}
    for service in ("mosquitto", "influxdb", "grafana", "bridge"):
        assert all(str(p).startswith(f"{env['PUBLISH_ADDR']}:") for p in compose["services"][service]["ports"])


# --------------------------------------------------------------------------- Telegraf
def test_telegraf_reads_the_stack_and_writes_to_the_bucket(compose) -> None:
    text = (COMPOSE_DIR / "telegraf" / "telegraf.conf").read_text()
    conf = tomllib.loads(text)
    assert set(re.findall(r"\$\{([A-Z_]+)\}", text)) <= set(service_env(compose, "telegraf"))
    output = conf["outputs"]["influxdb_v2"][0]
    assert urllib.parse.urlsplit(output["urls"][0]).hostname == "influxdb"
    assert output["bucket"] == "${INFLUXDB_BUCKET}" and output["token"] == "${INFLUXDB_TOKEN}"
    scrape = urllib.parse.urlsplit(conf["inputs"]["prometheus"][0]["urls"][0])
    assert (scrape.hostname, scrape.port, scrape.path) == ("bridge", 8080, "/metrics")
    assert urllib.parse.urlsplit(conf["inputs"]["mqtt_consumer"][0]["servers"][0]).hostname == "mosquitto"


# --------------------------------------------------------------------------- Mosquitto 2
class MosquittoWithKitConfig(ServerProcess):
    """The kit's mosquitto/ folder on the real Mosquitto 2, started by its start.sh as in the container, with a
    free port and temporary data and account folders."""

    name = "mosquitto-kit"

    def __init__(self, workdir: pathlib.Path, env: dict[str, str], trainers: dict[str, str] | None = None) -> None:
        super().__init__(workdir)
        require_binary("mosquitto", "mosquitto")
        self.secrets = {k: env[k] for k in ("MQTT_BRIDGE_PASSWORD", "MQTT_MONITOR_PASSWORD")}
        self.config_dir = workdir / "config"
        self.auth_dir = workdir / "auth"
        data = workdir / "data"
        shutil.copytree(COMPOSE_DIR / "mosquitto", self.config_dir)
        for name, text in (trainers or {}).items():
            (self.config_dir / name).write_text(text)
        data.mkdir()
        if os.geteuid() == 0:  # mosquitto drops to its own user when started as root
            for d in (workdir, data):
                os.chmod(d, 0o777)
        conf = (COMPOSE_DIR / "mosquitto" / "mosquitto.conf").read_text()
        conf = conf.replace("listener 1883", f"listener {self.port} 127.0.0.1")
        conf = conf.replace("persistence_location /mosquitto/data/", f"persistence_location {data}/")
        conf = conf.replace("/mosquitto/auth/", f"{self.auth_dir}/")
        (self.config_dir / "mosquitto.conf").write_text(conf)

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.secrets, "MOSQUITTO_CONFIG_DIR": str(self.config_dir),
                "MOSQUITTO_AUTH_DIR": str(self.auth_dir),
                "PATH": f"{os.environ.get('PATH', '')}:/usr/sbin"}

    def command(self) -> list[str]:
        return ["sh", str(self.config_dir / "start.sh")]


def test_the_mosquitto_config_runs_on_mosquitto_2_with_persistence_and_a_deep_queue(compose, env) -> None:
    conf = (COMPOSE_DIR / "mosquitto" / "mosquitto.conf").read_text()
    settings = dict(line.split(None, 1) for line in conf.splitlines() if line.strip() and not line.startswith("#"))
    assert settings["persistence"] == "true"
    assert int(settings["max_queued_messages"]) >= 100_000  # Mosquitto's default of 1000 drops a bridge's backlog
    # outside pytest's private tmp folders: run as root, Mosquitto drops to its own user
    with tempfile.TemporaryDirectory(prefix="curvestream-mosquitto-") as workdir:
        os.chmod(workdir, 0o777)
        healthcheck = compose["services"]["mosquitto"]["healthcheck"]["test"]
        _publish_through_kit_broker(pathlib.Path(workdir), healthcheck, env)


def _publish_through_kit_broker(workdir: pathlib.Path, healthcheck: list[str], env: dict[str, str]) -> None:
    server = MosquittoWithKitConfig(workdir / "mosquitto", env)
    server.start()
    try:
        assert healthcheck[0] == "CMD"
        # the compose healthcheck, pointed at this broker, reports it healthy
        subprocess.run([*healthcheck[1:], "-h", "127.0.0.1", "-p", str(server.port)], check=True, timeout=30,
                       stdout=subprocess.DEVNULL)
        import paho.mqtt.client as mqtt

        got: list[bytes] = []
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="kit-check", protocol=mqtt.MQTTv5)
        client.username_pw_set("curvestream-bridge", env["MQTT_BRIDGE_PASSWORD"])
        client.on_message = lambda c, u, msg: got.append(msg.payload)
        client.connect("127.0.0.1", server.port)
        client.loop_start()
        try:
            client.subscribe("curvestream/v1/kit/check/points", qos=1)
            wait_until(lambda: client.publish("curvestream/v1/kit/check/points", b"hello", qos=1) and got, 20,
                       "a message through the broker", interval=0.5)
        finally:
            client.loop_stop()
            client.disconnect()
        assert got[0] == b"hello"
    finally:
        server.stop()
    log = server.log_tail()
    assert "Error" not in log and "Warning" not in log, log
    assert (workdir / "mosquitto" / "data" / "mosquitto.db").is_file()  # persistence saved on shutdown


def test_the_grafana_live_token_helper_is_valid_shell() -> None:
    subprocess.run(["sh", "-n", str(COMPOSE_DIR / "scripts" / "grafana-live-token.sh")], check=True, timeout=30)


def test_the_kit_broker_refuses_anonymous_clients_and_takes_the_accounts_add_user_writes(env) -> None:
    with tempfile.TemporaryDirectory(prefix="curvestream-mosquitto-") as tmp:
        os.chmod(tmp, 0o777)
        made = pathlib.Path(tmp) / "made"
        made.mkdir()
        subprocess.run([sys.executable, "-m", "curvestream.cli", "mqtt", "add-user", "mnist", "--password", "pw",
                        "--passwd-file", str(made / "trainers.passwd"), "--acl-file", str(made / "trainers.acl")],
                       check=True, timeout=60, stdout=subprocess.DEVNULL)
        trainers = {name: (made / name).read_text() for name in ("trainers.passwd", "trainers.acl")}
        server = MosquittoWithKitConfig(pathlib.Path(tmp) / "mosquitto", env, trainers)
        server.start()
        try:
            pub = [require_binary("mosquitto_pub", "mosquitto-clients"), "-h", "127.0.0.1", "-p", str(server.port),
                   "-V", "mqttv5", "-q", "1", "-t", "curvestream/v1/mnist/r1/points", "-m", "x"]
            anonymous = subprocess.run(pub, timeout=30, capture_output=True, text=True)
            assert anonymous.returncode != 0 and "not authori" in anonymous.stderr.lower(), anonymous
            subprocess.run([*pub, "-u", "trainer-mnist", "-P", "pw"], check=True, timeout=30)
        finally:
            server.stop()
