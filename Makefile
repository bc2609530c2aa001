# curvestream: the two commands are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PANEL := panels/echarts-plugin
STATIC := bridge/src/curvestream_bridge/static/index.html
GRAFANA_PLUGIN := $(PANEL)/dist/module.js
GRAFANA_CHECKS := tests/grafana

.PHONY: demo up test lint test-python test-panel venv venv-demo page grafana-plugin dashboards proto api-types bench clean

demo: venv-demo page  ## set up, start the embedded stack and stream a real training loop into it
	$(VENV)/bin/curvestream demo

up: venv-demo page  ## the embedded stack alone on http://127.0.0.1:8080
	$(VENV)/bin/curvestream up

test: venv page lint test-panel test-python  ## set up and run every test

lint: venv  ## ruff and mypy over the Python code (tsc runs in test-panel)
	$(PY) -m ruff check .
	$(PY) -m mypy

test-python: venv page grafana-plugin $(GRAFANA_CHECKS)/node_modules
	$(PY) -m pytest

test-panel: $(PANEL)/node_modules
	cd $(PANEL) && npm run typecheck && npm test

venv: $(VENV)/.installed  ## what the tests need: the packages, the test stack, the drop-ins' frameworks

venv-demo: $(VENV)/.installed-demo  ## what the demo needs: the three packages and their dependencies only

$(VENV)/.installed-demo: proto/pyproject.toml client/pyproject.toml bridge/pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt -e ./proto -e ./client -e ./bridge
	touch $@

$(VENV)/.installed: $(VENV)/.installed-demo requirements-dev.txt requirements-integrations.txt
	$(PIP) install --quiet -c constraints.txt -r requirements-dev.txt
	$(PIP) install --quiet -c constraints.txt -r requirements-integrations.txt  # the drop-ins' frameworks (CPU torch)
	# grafana-client's urllib3-future would replace urllib3 for every package: built from source with this
	# variable it installs beside it instead
	URLLIB3_NO_OVERRIDE=1 $(PIP) install --quiet -c constraints.txt --no-binary urllib3-future -e './bridge[grafana]'
	touch $@

page: $(STATIC)

$(PANEL)/node_modules: $(PANEL)/package.json $(PANEL)/package-lock.json
	cd $(PANEL) && npm ci --no-audit --no-fund
	touch $@

$(STATIC): $(PANEL)/node_modules $(shell find $(PANEL)/src -type f 2>/dev/null) $(PANEL)/package.json
	cd $(PANEL) && npm run build

grafana-plugin: $(GRAFANA_PLUGIN)  ## the Grafana panel plugin in panels/echarts-plugin/dist/

$(GRAFANA_PLUGIN): $(PANEL)/node_modules $(shell find $(PANEL)/src -type f 2>/dev/null) $(PANEL)/package.json $(PANEL)/build-grafana.mjs
	cd $(PANEL) && npm run build:grafana

$(GRAFANA_CHECKS)/node_modules: $(GRAFANA_CHECKS)/package.json $(GRAFANA_CHECKS)/package-lock.json
	cd $(GRAFANA_CHECKS) && npm ci --no-audit --no-fund
	touch $@

dashboards: venv  ## regenerate the provisioned Grafana dashboards from grafana/queries
	$(PY) grafana/dashboards/generate.py

proto: venv  ## regenerate the protobuf modules after editing proto/
	$(PY) scripts/gen_proto.py

api-types: venv  ## regenerate the page's TypeScript API types after editing the bridge's api/models.py
	$(PY) scripts/gen_api_types.py

BENCHES := log_latency client_throughput ingest_e2e query_m4 page_live_latency page_overlay_10x10m series_http alerts alerts_quality many_runs shared_bridges

bench: venv page  ## print the benchmark figures (bench/README.md: what each measures; about an hour)
	for b in $(BENCHES); do nice $(PY) bench/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) $(PANEL)/node_modules $(GRAFANA_CHECKS)/node_modules $(PANEL)/dist bridge/src/curvestream_bridge/static test-output
