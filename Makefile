# prefix-guard — the two commands a new user needs are `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PNPM_VERSION := 10.34.9
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: help install proto build run up down status test test-unit test-int lint format bench bench-quick kafka-start kafka-stop mariadb clean docs-providers docs-capacity proto-baseline

help:
	@echo "make run     whole system in one process (SQLite + embedded transport), Ctrl-C stops"
	@echo "make test    install, generate code, start Kafka, use MariaDB, run every suite"
	@echo "make up      local Kafka + MariaDB + each service as its own process; make down stops them"
	@echo "make lint    biome + tsc + import graph + buf breaking;  make bench  benchmarks (bench/)"
	@echo "make build   compile every service and prefixctl to dist/ (what the images run)"

# pnpm comes from npm when missing (pnpm 11 does not run on Node 20, hence the pin).
node_modules/.install-stamp: package.json pnpm-lock.yaml pnpm-workspace.yaml $(wildcard patches/*.patch) $(wildcard libs/*/package.json services/*/package.json proto/package.json migrations/package.json bench/package.json deploy/package.json)
	@command -v node >/dev/null || { echo "node (>= 20) is required: apt-get install nodejs npm"; exit 1; }
	@if ! command -v pnpm >/dev/null || [ "$$(pnpm --version)" != "$(PNPM_VERSION)" ]; then \
	  echo "installing pnpm $(PNPM_VERSION) with npm"; npm install -g pnpm@$(PNPM_VERSION) >/dev/null; fi
	pnpm install --frozen-lockfile
	@touch $@

install: node_modules/.install-stamp

proto/gen/.stamp: node_modules/.install-stamp $(shell find proto/prefixguard -name '*.proto') proto/buf.gen.yaml proto/buf.yaml
	pnpm --filter @prefix-guard/proto run gen
	@touch $@

proto: proto/gen/.stamp

# Compiled JavaScript (esbuild) into services/*/dist and libs/prefixctl/dist; deploy/docker/Dockerfile runs the same.
build: proto
	node --import tsx deploy/build/build.ts

run: proto
	node --import tsx deploy/embedded/run-all.ts

up: proto kafka-start mariadb
	bash deploy/scripts/stack.sh up

down:
	-bash deploy/scripts/stack.sh down
	bash deploy/kafka/kafka.sh stop

status:
	bash deploy/scripts/stack.sh status

kafka-start:
	bash deploy/kafka/kafka.sh start

kafka-stop:
	bash deploy/kafka/kafka.sh stop

mariadb:
	bash deploy/scripts/mariadb.sh ensure

test: proto
	bash deploy/scripts/run-tests.sh all

test-unit: proto
	bash deploy/scripts/run-tests.sh unit

lint: proto
	biome check .
	tsc -p tsconfig.json --noEmit
	node --import tsx deploy/scripts/import-graph.ts
	node --import tsx proto/src/contract-check.ts

# Freezes the .proto files as released contract N (proto/baseline/vN.binpb), once proto/CHANGELOG.md
# has its "## Contract N" section: make proto-baseline CONTRACT=3 (CONTRIBUTING, "Change the event or service contract").
proto-baseline: install
	node --import tsx proto/src/contract-check.ts release $(CONTRACT)

# The provider tables in README.md and docs/ are rendered from libs/providers/catalogue.json.
docs-providers: install
	node --import tsx libs/providers/src/write-doc-tables.ts

format: install
	biome check --write .

# The bench runs its own broker on 39092 (bench/src/speed/bench.sh); BENCH_ARGS=--quick for a short run,
# BENCH_ONLY=speed|replay|gateway for one part. Both rewrite docs/capacity.md from the new results.
bench: proto mariadb
	bash bench/src/speed/bench.sh $(BENCH_ARGS)
	node --import tsx bench/src/capacity/write-capacity-doc.ts

bench-quick: proto mariadb
	bash bench/src/speed/bench.sh --quick $(BENCH_ARGS)
	node --import tsx bench/src/capacity/write-capacity-doc.ts

# docs/capacity.md is rendered from bench/results/speed.json and gateway.json (a unit test checks it).
docs-capacity: install
	node --import tsx bench/src/capacity/write-capacity-doc.ts

clean:
	rm -rf .run .data proto/gen libs/client/build libs/client/dist services/*/dist libs/prefixctl/dist deploy/examples/java-consumer/target
