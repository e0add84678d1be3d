# backfill_platform developer entry points (GNU make). Every target runs from the repository root.
#
#   make setup       system packages (only the missing ones), .venv, editable install, the JVM jars (Maven)
#   make jars        the JVM jars of lakehouse/jvm/pom.xml, by Maven coordinates, verified (make jars-lock after a version change)
#   make demo        run the end-to-end demo
#   make test        run the test suite (what CI runs, via .ci/run); TEST_ORDER=random or reverse
#   make test-other-spark  the end-to-end subset on the other Spark line (4.1), in .venv-spark-4.1 (CI runs it too)
#   make test-fast   the unit layer (the tests under unit/: no Spark, server or run): the edit loop
#   make lint        ruff check + ruff format --check + the import contracts (CI runs it first)
#   make docs        the documentation site (docs/, mkdocs.yml) into data/site, strictly: a broken link fails
#   make ui          Dagster webserver + daemon on http://127.0.0.1:3000
#   make rest-catalog  Iceberg's REST catalog server on :8181 (REST_WAREHOUSE=s3://… for an S3 warehouse)
#   make kafka       a single-node Kafka broker on 127.0.0.1:9092 (KAFKA_PORT), for a replay to Kafka
#   make kafka-connect TOPIC=… TABLE=ns.table  Iceberg's Kafka Connect sink landing TOPIC in TABLE (a table archive)
#   make bench       run the benchmark (both Spark lines); make bench-scale adds the big day and the year of small files
#   make clean-data  remove runtime state under data/ (keeps data/.gitkeep)

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Python 3.11 for the virtual environment (pyproject.toml requires >=3.11,<3.12).
PYTHON ?= $(shell command -v python3.11 2>/dev/null || echo python3)
# The Spark lines (pyproject's extras spark35/spark41, lakehouse/jvm/pom.xml's profiles): the default one
# lives in .venv; another in .venv-spark-<line>, e.g. `make bench SPARK_LINE=4.1`. Its jars follow its
# pyspark. `make test-other-spark` runs the end-to-end subset (marker `both_spark_lines`) on the other.
DEFAULT_SPARK_LINE := 3.5
OTHER_SPARK_LINE := 4.1
SPARK_LINE ?= $(DEFAULT_SPARK_LINE)
VENV := $(if $(filter $(DEFAULT_SPARK_LINE),$(SPARK_LINE)),.venv,.venv-spark-$(SPARK_LINE))
SPARK_EXTRA := spark$(subst .,,$(SPARK_LINE))
BIN := $(VENV)/bin
# Touched after a successful `pip install`; pyproject.toml newer than it triggers a reinstall.
INSTALL_STAMP := $(VENV)/.install-stamp

# What `setup` probes for; each missing one is installed from its Debian package.
# Spark 3.5 runs on Java 8/11/17 only, and a machine may export another JAVA_HOME (ours have a Temurin 25
# beside Java 17): every recipe (Maven, Spark, the tests) gets the JAVA_HOME of a Java 17, the first of:
# JAVA_HOME if it is a JDK 17, the JDK of `java` on PATH if it is one, any JDK 17 under /usr/lib/jvm; failing
# those, the path where Debian's openjdk-17-jdk-headless installs, which system-deps then installs (a JDK:
# `make jars` compiles the platform's JVM functions with its javac).
ifndef JAVA17_HOME
JAVA17_HOME := $(shell for home in "$${JAVA_HOME:-}" \
	"$$(readlink -f "$$(command -v java)" 2>/dev/null | sed 's:/bin/java$$::')" /usr/lib/jvm/*; do \
	if grep -qs '^JAVA_VERSION="17[."]' "$$home/release" && [ -x "$$home/bin/javac" ]; then \
	echo "$$home"; break; fi; done)
endif
ifeq ($(strip $(JAVA17_HOME)),)
JAVA17_HOME := /usr/lib/jvm/java-17-openjdk-$(shell dpkg --print-architecture 2>/dev/null || echo amd64)
endif
export JAVA_HOME := $(JAVA17_HOME)
# Maven resolves the jars declared in backfill_platform/lakehouse/jvm/pom.xml (`make jars`).
MVN ?= mvn
# Team tier: PostgreSQL's server binaries (the team-tier test starts a throwaway server with them).
POSTGRES_INITDB_GLOB ?= /usr/lib/postgresql/*/bin/initdb
# Headless browser of the UI tests (driven by the `playwright` package, which downloads no browser).
CHROMIUM ?= /usr/bin/chromium
# Override to dry-run the install branch, e.g. `make system-deps APT_GET='echo apt-get' MVN=nomvn`.
APT_GET ?= apt-get

UI_HOST ?= 127.0.0.1
UI_PORT ?= 3000
REST_PORT ?= 8181
KAFKA_PORT ?= 9092
# make kafka-connect: the topic and landing table (required), the broker (default: BACKFILL_PLATFORM_KAFKA_BOOTSTRAP,
# else 127.0.0.1:9092), a named landing catalog (default: the platform's), the worker's REST port.
TOPIC ?=
TABLE ?=
KAFKA_BOOTSTRAP ?=
CATALOG ?=
CONNECT_PORT ?= 8083
REST_WAREHOUSE ?=
PYTEST_ARGS ?=
# The order of `make test`: file order by default (pyproject.toml's addopts keep pytest-randomly off);
# random: pytest-randomly shuffles modules and tests and prints its seed (repeat an order with
# PYTEST_ARGS=--randomly-seed=N); reverse: the file order reversed (the tests' conftest `--reverse`).
TEST_ORDER ?= file
TEST_ORDER_ARGS_file :=
TEST_ORDER_ARGS_random := -p randomly
TEST_ORDER_ARGS_reverse := --reverse
# Processes that share the tests (pytest-xdist; the tests' support/workers.py groups them so that module and
# `dagster dev` fixtures are built once). Most of a test's time is spent waiting on a JVM or a daemon tick, so
# two workers overlap on two cores; 0 runs the whole suite in this one process.
TEST_WORKERS ?= 2
BENCH_ARGS ?=
# The Spark line `make bench` runs beside SPARK_LINE's (the other of the two); empty: none.
BENCH_OTHER_LINE ?= $(if $(filter $(DEFAULT_SPARK_LINE),$(SPARK_LINE)),$(OTHER_SPARK_LINE),$(DEFAULT_SPARK_LINE))
BENCH_OTHER_VENV := $(if $(filter $(DEFAULT_SPARK_LINE),$(BENCH_OTHER_LINE)),.venv,.venv-spark-$(BENCH_OTHER_LINE))
# Arguments of `make jars` (backfill_platform.devtools.jvm_jars), e.g. JARS_ARGS=--offline, or
# JARS_ARGS='--force --maven-arg=-Dmaven.repo.local=/tmp/m2' to resolve from an empty local repository.
JARS_ARGS ?=

# Spark binds to loopback.
export SPARK_LOCAL_IP := 127.0.0.1
# The Dagster instance follows the data directory. A DAGSTER_HOME the user set is kept. Otherwise, with
# BACKFILL_PLATFORM_DATA set: <data>/dagster, whose dagster.yaml is this repository's with its storage
# folders moved there (the same file `backfill-platform backfill` writes); without it: the repository
# root, whose dagster.yaml keeps the storage under data/dagster (relative to make's working directory).
ifndef DAGSTER_HOME
ifdef BACKFILL_PLATFORM_DATA
DAGSTER_HOME := $(abspath $(BACKFILL_PLATFORM_DATA))/dagster
$(shell $(PYTHON) -m backfill_platform.orchestration.dagster_home '$(DAGSTER_HOME)')
else
DAGSTER_HOME := $(CURDIR)
endif
endif
export DAGSTER_HOME
# dagster.yaml turns telemetry off, but the daemon's upload thread still creates logs/ and .logs_queue/
# in DAGSTER_HOME (the repository root) unless this is set.
export DAGSTER_DISABLE_TELEMETRY := 1

.PHONY: help setup system-deps venv jars jars-lock rest-catalog kafka kafka-connect demo test test-fast test-other-spark lint docs ui bench bench-scale clean-data

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

setup: system-deps venv jars

# Install only what is missing, after one `apt-get update`.
system-deps:
	@missing=(); \
	[ -x '$(JAVA17_HOME)/bin/javac' ] || missing+=(openjdk-17-jdk-headless); \
	command -v $(MVN) >/dev/null 2>&1 || missing+=(maven); \
	compgen -G '$(POSTGRES_INITDB_GLOB)' >/dev/null || missing+=(postgresql); \
	[ -e $(CHROMIUM) ] || missing+=(chromium); \
	if [ $${#missing[@]} -eq 0 ]; then exit 0; fi; \
	echo "setup: missing system packages: $${missing[*]}"; \
	if ! command -v $(firstword $(APT_GET)) >/dev/null 2>&1; then \
		echo "setup: error: apt-get is not available; install the equivalent of: $${missing[*]}" >&2; \
		exit 1; \
	fi; \
	if [ "$$(id -u)" -ne 0 ]; then \
		echo "setup: error: installing system packages needs root; run as root, or first:" >&2; \
		echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y $${missing[*]}" >&2; \
		exit 1; \
	fi; \
	$(APT_GET) update; \
	DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y $${missing[*]}

venv: $(INSTALL_STAMP)

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null || { \
		echo "setup: error: '$(PYTHON)' is not Python 3.11; run 'make setup PYTHON=/path/to/python3.11'" >&2; \
		exit 1; }
	$(PYTHON) -m venv $(VENV)

$(INSTALL_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -e '.[test,$(SPARK_EXTRA)]'
	touch $@

# Copies the jars declared by Maven coordinates (backfill_platform/lakehouse/jvm/pom.xml) from the local
# Maven repository, downloading what it lacks, into .venv/share/backfill_platform/jars, and checks them
# against jvm/jars.sha256; a no-op (no Maven start) once that folder verifies. Then the platform's own JVM
# functions (lakehouse/jvm/functions/*.java, e.g. the events' strict parse), compiled by javac against this
# environment's pyspark (~5 s; a no-op while the sources and pyspark are unchanged). Then the local driver JVM's
# class-data archive (lakehouse/class_archive.py: seconds off every run's start), built by a one-day backfill
# (~1 min) unless the one there was built from this JDK, pyspark and jar lock. Optional: a failure to build
# it is a warning (runs start without it, slower), and test_jvm_jars fails on its absence. Last, the jars of
# Iceberg's REST catalog server, Apache Kafka's broker, and Kafka Connect's worker with Iceberg's sink
# plugin (devtools/rest_catalog/, kafka_broker/ and kafka_connect/ pom.xml, transitive, each checked against
# its jars.sha256): the tests, `make rest-catalog`, `make kafka` and `make kafka-connect` run them; Spark never loads them.
jars: system-deps venv
	$(BIN)/python -m backfill_platform.devtools.jvm_jars $(JARS_ARGS)
	$(BIN)/python -m backfill_platform.devtools.jvm_functions
	$(BIN)/python -m backfill_platform.devtools.class_archive --optional
	$(BIN)/python -m backfill_platform.devtools.rest_catalog.classpath
	$(BIN)/python -m backfill_platform.devtools.kafka_broker.classpath
	$(BIN)/python -m backfill_platform.devtools.kafka_connect.classpath

# After changing a version in the pom: resolve, and rewrite jvm/jars.sha256 from what Maven downloaded
# (with its checksums against Maven Central enforced). Commit both files.
jars-lock: system-deps venv
	$(BIN)/python -m backfill_platform.devtools.jvm_jars --lock $(JARS_ARGS)
	$(BIN)/python -m backfill_platform.devtools.rest_catalog.classpath --lock
	$(BIN)/python -m backfill_platform.devtools.kafka_broker.classpath --lock
	$(BIN)/python -m backfill_platform.devtools.kafka_connect.classpath --lock

# Apache Iceberg's REST catalog server in the foreground (Ctrl-C stops it), on 127.0.0.1:REST_PORT (it is
# unauthenticated: REST_HOST=0.0.0.0 for every interface, on a network you trust),
# its catalog and log under data/rest-catalog. The warehouse: REST_WAREHOUSE (default a local folder under
# data/; s3://bucket/prefix with the standard AWS variables). It prints the variables that point the platform
# at it (docs/deployment.md, "Where things run").
rest-catalog: setup
	$(BIN)/python -m backfill_platform.devtools.rest_catalog --port $(REST_PORT) $(if $(REST_HOST),--host $(REST_HOST)) $(if $(REST_WAREHOUSE),--warehouse $(REST_WAREHOUSE))

# A single-node Apache Kafka broker (KRaft) in the foreground on 127.0.0.1:KAFKA_PORT, formatted afresh under
# data/kafka at each start; it prints the variable that points a replay at it (docs/s3-and-replay.md, "Online replay to Kafka").
kafka: setup
	$(BIN)/python -m backfill_platform.devtools.kafka_broker --port $(KAFKA_PORT)

# A Kafka Connect worker in the foreground running Apache Iceberg's sink from TOPIC into TABLE (namespace.table)
# of the platform's REST catalog (or CATALOG=NAME's, BACKFILL_PLATFORM_ARCHIVE_CATALOG_<NAME>_URI…), state and log
# under data/kafka-connect. It creates what is missing (the topic, the sink's control topic, the namespace and the
# landing table) and prints the `archive:` spec that reads the table (docs/your-own-archive.md, "Archives that
# are Iceberg tables"). Start `make kafka` and `make rest-catalog` first.
kafka-connect: setup
	@if [ -z '$(TOPIC)' ] || [ -z '$(TABLE)' ]; then \
		echo "kafka-connect: error: give TOPIC=<topic> TABLE=<namespace.table>" >&2; exit 2; fi
	$(BIN)/python -m backfill_platform.devtools.kafka_connect --topic '$(TOPIC)' --table '$(TABLE)' --port $(CONNECT_PORT) $(if $(KAFKA_BOOTSTRAP),--bootstrap '$(KAFKA_BOOTSTRAP)') $(if $(CATALOG),--catalog '$(CATALOG)')

demo: setup
	$(BIN)/backfill-platform demo

test: setup
	@case '$(TEST_ORDER)' in file|random|reverse) ;; \
		*) echo "test: error: TEST_ORDER must be file, random or reverse, not '$(TEST_ORDER)'" >&2; exit 2;; esac
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadscope $(TEST_ORDER_ARGS_$(TEST_ORDER)) $(PYTEST_ARGS)

# The unit layer: the tests under backfill_platform_tests/unit/ (pure logic; conftest marks them `unit` by
# their folder), in one process. A test of it that asks for Spark, `dagster dev`, moto or Kafka fails, naming
# what it asked for (conftest's `refuse_in_unit_layer`): the layer stays fast.
test-fast: setup
	BACKFILL_PLATFORM_TEST_LAYER=fast $(BIN)/pytest backfill_platform_tests/unit $(PYTEST_ARGS)

# The other Spark line: its own environment (.venv-spark-4.1, built on first use), its runtime jar, and the
# end-to-end subset marked `both_spark_lines` (a validated backfill with promotion and revert, the bad-input
# corpus, a join with lookback, Spark and PyIceberg reading each other's tables). CI runs it after `test`.
test-other-spark:
	$(MAKE) test SPARK_LINE=$(OTHER_SPARK_LINE) PYTEST_ARGS='-m both_spark_lines $(PYTEST_ARGS)'

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The documentation site: `--strict` turns mkdocs' warnings (a link to a missing page or anchor, a page
# outside the nav) into a failure. Open data/site/index.html, or `$(BIN)/mkdocs serve` while writing.
docs: venv
	$(BIN)/python -c 'import material' 2>/dev/null || \
		$(BIN)/python -m pip install --disable-pip-version-check -e '.[test,docs,$(SPARK_EXTRA)]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir data/site

# A shell started in the background (`make ui &`) ignores SIGINT, and `dagster dev` maps SIGTERM to its
# SIGINT handler, so it could then not be stopped cleanly; restore the default SIGINT before exec.
ui: setup
	$(BIN)/python -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); \
		os.execv(sys.argv[1], sys.argv[1:])' $(BIN)/dagster dev -h $(UI_HOST) -p $(UI_PORT) -w workspace.yaml

# The bench extra (DuckDB) is installed on first use; sizes: `make bench BENCH_ARGS='--days 1 ...'`. The
# comparison and the big day run on the other Spark line too, in its environment (set up first, as for
# test-other-spark): BENCH_OTHER_LINE= leaves it out.
bench: setup
	$(BIN)/python -c 'import duckdb' 2>/dev/null || \
		$(BIN)/python -m pip install --disable-pip-version-check -e '.[test,bench,$(SPARK_EXTRA)]'
	$(if $(BENCH_OTHER_LINE),$(MAKE) setup SPARK_LINE=$(BENCH_OTHER_LINE))
	$(BIN)/backfill-platform bench $(if $(BENCH_OTHER_LINE),--other-line $(CURDIR)/$(BENCH_OTHER_VENV)/bin/python) $(BENCH_ARGS)

# `make bench` plus (f) 2 days x 1.5M events and (g) a year of small files (make would take `--scale`
# as its own option, hence a target); sizes as for bench, e.g. BENCH_ARGS='--big-events-per-day 500000'.
bench-scale:
	$(MAKE) bench BENCH_ARGS='--scale $(BENCH_ARGS)'

clean-data:
	mkdir -p data
	find data -mindepth 1 -maxdepth 1 ! -name .gitkeep -exec rm -rf -- {} +
	touch data/.gitkeep
