# hudi-cdc developer targets. `make help` lists them.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
JARS_DIR := .jars/hudi
INSTALLED := $(VENV)/.installed
JARS := $(JARS_DIR)/.fetched
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help install jars wheel airflow demo demo-files demo-stack test test-setup test-archive test-nostack bench bench-scale bench-freshness bench-verify bench-repair bench-first-load bench-pipeline bench-pipeline-skewed bench-pipeline-cuts bench-formats bench-rounds bench-oneshot bench-commit-cost bench-java-client bench-small-round bench-small-round-wheel bench-history bench-history-size bench-shape bench-index bench-toast bench-pick bench-report bench-all chaos chaos-runners chaos-s3a test-fast lint clean stack-up stack-down stack-reset trino-up trino-down test-trino

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# setup.cfg states ranges (what a user's environment must satisfy); constraints.txt pins what this venv runs.
$(INSTALLED): setup.cfg setup.py pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[test,dev,bench,lineage]'
	touch $@

$(JARS): jars/hudi/pom.xml
	@command -v java >/dev/null || { echo "java (17) is required"; exit 1; }
	@command -v mvn >/dev/null || { echo "maven is required: apt-get install -y maven"; exit 1; }
	mvn -q -B -f jars/hudi/pom.xml dependency:copy-dependencies -DoutputDirectory=$(abspath $(JARS_DIR))
	touch $@

# Hadoop's s3a connector (hadoop-aws and the AWS SDK bundle, 280 MB) for s3a:// tables: its own folder, put on a
# session's classpath by hudi_cdc/jars.py (docs/object-storage.md).
S3A_JARS := .jars/s3a/.fetched
$(S3A_JARS): jars/s3a/pom.xml
	mvn -q -B -f jars/s3a/pom.xml dependency:copy-dependencies -DoutputDirectory=$(abspath .jars/s3a)
	touch $@

# hudi-cdc's own per-key pick (payloads/base.py `_pick`), built from source; tests/payloads/test_pick.py tests it in Spark.
PICK_JAR := $(JARS_DIR)/hudi-cdc-pick-1.jar
$(PICK_JAR): jars/pick/pom.xml $(wildcard jars/pick/src/*/java/io/hudicdc/pick/*.java) $(JARS)
	mvn -q -B -f jars/pick/pom.xml package
	cp jars/pick/target/hudi-cdc-pick-1.jar $@

# hudi-cdc's local file system (io.hudicdc.fs: permissions set in the JVM, no chmod process per file); tests/test_local_fs.py.
LOCALFS_JAR := $(JARS_DIR)/hudi-cdc-localfs-1.jar
$(LOCALFS_JAR): jars/localfs/pom.xml $(wildcard jars/localfs/src/*/java/io/hudicdc/*/*.java)
	mvn -q -B -f jars/localfs/pom.xml package
	cp jars/localfs/target/hudi-cdc-localfs-1.jar $@

# hudi-cdc's small-round writer (hudi_cdc/sink/small_write.py: Hudi's Java write client, no Spark job); tests/sink/test_small_write.py.
WRITER_JAR := $(JARS_DIR)/hudi-cdc-writer-1.jar
$(WRITER_JAR): jars/writer/pom.xml $(wildcard jars/writer/src/*/java/io/hudicdc/writer/*.java) $(JARS)
	mvn -q -B -f jars/writer/pom.xml package
	cp jars/writer/target/hudi-cdc-writer-1.jar $@

# Airflow pins its own dependencies (they clash with ours): its own venv, with hudi-cdc's
# module installed without dependencies; the tasks run hudi-cdc from .venv.
AIRFLOW_VENV := .venv-airflow
AIRFLOW_INSTALLED := $(AIRFLOW_VENV)/.installed
AIRFLOW_PINS := apache-airflow==3.3.2 apache-airflow-providers-apache-spark==6.3.4

# After our venv: two editable installs at once would write the same egg-info in the source tree.
$(AIRFLOW_INSTALLED): setup.cfg | $(INSTALLED)
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install -q --upgrade pip
	$(AIRFLOW_VENV)/bin/python -m pip install -q $(AIRFLOW_PINS)
	$(AIRFLOW_VENV)/bin/python -m pip install -q --no-deps -e .
	touch $@

airflow: $(AIRFLOW_INSTALLED) ## Airflow 3 and its Spark provider in .venv-airflow, for examples/airflow/ and its tests

install: $(INSTALLED) $(JARS) $(S3A_JARS) $(PICK_JAR) $(WRITER_JAR) $(LOCALFS_JAR) ## Create .venv with hudi-cdc (editable), fetch the Spark-side jars, build our own

jars: $(JARS) $(S3A_JARS) $(PICK_JAR) $(WRITER_JAR) $(LOCALFS_JAR) ## Fetch the Hudi bundle, spark-avro and s3a jars into .jars/ (Maven Central), build jars/pick, jars/writer and jars/localfs

# setup.py copies our own jars (and the writer's hudi-java-client) from .jars/hudi into the wheel's hudi_cdc/_jars;
# HUDI_CDC_WHEEL_JARS=required makes a missing one fail the build (a plain `pip wheel .` only warns).
wheel: $(INSTALLED) $(JARS) $(PICK_JAR) $(WRITER_JAR) $(LOCALFS_JAR) ## Build dist/hudi_cdc-*.whl, carrying hudi-cdc's own jars (pip install it anywhere)
	rm -f dist/hudi_cdc-*.whl
	HUDI_CDC_WHEEL_JARS=required $(PY) -m pip wheel -q --no-deps -w dist .
	@$(PY) -c "import glob, zipfile; (w,) = glob.glob('dist/hudi_cdc-*.whl'); \
		print(w, *sorted(n for n in zipfile.ZipFile(w).namelist() if n.endswith('.jar')), sep='\n  ')"

demo: demo-files demo-stack ## Both demos: the embedded default (files), then the real pipeline on the local stack

demo-files: install ## Embedded default: write Debezium Avro files, replicate them into COW and MOR Hudi tables, compare
	$(PY) examples/demo.py

demo-stack: install stack-up ## Real pipeline: Postgres -> Debezium -> Kafka + Apicurio -> hudi-cdc -> Hudi, compared with Postgres
	$(PY) examples/stack_demo.py

# The suite starts about fifty hudi-cdc JVMs: a class-data archive of the driver (hudi-cdc jvm-archive, built
# once per checkout in about 45 s, kept in .cache/) takes about 3 s off each start, and the JIT's first tier
# alone (HUDI_CDC_JIT=quick) almost half the CPU of each short one (the CLI and crash tests: 279 -> 148 CPU
# seconds). The suite's own long-lived session takes it too: less CPU on two shared cores (tests/conftest.py).
# And the parallel collector (HUDI_CDC_GC=parallel): G1's concurrent marking and barriers cost the busy test
# JVMs more than they give (the payload-scenario tests in one session: 242 -> 198 CPU seconds).
TEST_ENV := HUDI_CDC_CACHE_DIR=$(CURDIR)/.cache HUDI_CDC_JIT=quick HUDI_CDC_GC=parallel

test-archive: install
	$(TEST_ENV) $(VENV)/bin/hudi-cdc jvm-archive

# The set-up steps side by side: the stack starts and Airflow installs while the archive trains (about a
# minute less before the first test on a fresh clone).
test-setup: install airflow stack-up test-archive

# The suite in two phases. First every test but the few that stop a stack service, on TEST_WORKERS pytest
# processes (pytest-xdist; a test file stays on one worker, so its module fixtures run once): each has its own
# Spark session, and the tests' names on the stack (topics, schemas, slots, connectors) are their own. Then
# the tests marked `exclusive` (a broker restart, a registry outage), alone. JUNIT_DIR: a JUnit report per phase.
TEST_WORKERS ?= 3
JUNIT_DIR ?=
PYTEST_PHASES = $(TEST_ENV) TEST_WORKERS=$(TEST_WORKERS) JUNIT_DIR=$(JUNIT_DIR) bash tests/phases.sh $(PY) $(PYTEST_ARGS)

test: ## Start the local stack, run the whole test suite (real Spark, Hudi, Postgres, Kafka, Debezium, Airflow)
	$(MAKE) --no-print-directory -j4 --output-sync=target test-setup
	$(PYTEST_PHASES)

test-nostack: install test-archive ## The test suite without the local stack (its tests are skipped)
	$(PYTEST_PHASES)

test-fast: install ## Only the tests that need no Spark
	$(PY) -m pytest -m "not spark" $(PYTEST_ARGS)

test-cuts-long: install ## Consistent cuts' strong stack test, long form: more transactions and runner kills (stack up)
	$(TEST_ENV) HUDI_CDC_LONG_CUTS=1 $(PY) -m pytest -p no:cacheprovider -q tests/stack/test_cuts_strong.py $(PYTEST_ARGS)

lint: install ## ruff and mypy
	$(VENV)/bin/ruff check hudi_cdc payloads tests examples bench chaos
	$(VENV)/bin/mypy hudi_cdc payloads

clean: ## Remove the venv, fetched jars, built wheels and demo output
	rm -rf $(VENV) $(AIRFLOW_VENV) .jars .cache demo-output .pytest_cache .hypothesis build dist

# One writer schema: HoodieStreamer 0.14 converts records of an older writer schema with the newest one
# and fails the round (ArrayIndexOutOfBoundsException).
BENCH_ARGS ?= --events 1000000 --keys 100000 --schema-versions 1
# Every bench target writes one result file per run here (the history), then regenerates the page from them.
BENCH_RESULTS := bench/results
REPORT := $(PY) -m bench.report

HS_DIR := .jars/hoodiestreamer
HS := $(HS_DIR)/.fetched

# HoodieStreamer: no 1.x hudi-utilities is on the Maven mirror this project can reach (only
# 0.14.0), so the benchmark runs HoodieStreamer 0.14.0 on its own Spark 3.4 (jars/hoodiestreamer/).
$(HS): jars/hoodiestreamer/hudi-0.14-fallback/pom.xml $(INSTALLED)
	mvn -q -B -f jars/hoodiestreamer/hudi-0.14-fallback/pom.xml package
	$(PY) -m pip install -q --no-deps --target $(HS_DIR)/pyspark-3.4.4 pyspark==3.4.4
	touch $@

bench: install stack-up $(HS) ## hudi-cdc vs HoodieStreamer on one Debezium stream; results into bench/results/
	$(VENV)/bin/hudi-cdc jvm-archive
	$(PY) -m bench.run --results $(BENCH_RESULTS) $(BENCH_ARGS)
	$(REPORT)

bench-scale: install stack-up ## Cost per event at 100k/1M/5M backlogs, per round as the table grows, memory vs --source-limit
	$(PY) -m bench.scale --results $(BENCH_RESULTS)
	-$(PY) -m bench.scale --table-type MERGE_ON_READ --backlogs 5000000 --skip-unbounded --results $(BENCH_RESULTS)
	$(REPORT)

bench-pipeline: install stack-up ## 50 tables in one process at 5,000 changes/s: freshness per table, an idle table's cost
	$(PY) -m bench.pipeline --results $(BENCH_RESULTS)
	$(REPORT)

bench-pipeline-skewed: install stack-up ## 200 tables at 5,000 changes/s, 10 of them carrying 90%: p99 on the hot and the cold tables against 10 s / 30 s
	$(PY) -m bench.pipeline --tables 200 --hot-tables 10 --hot-share 0.9 --rate 5000 --seconds 300 --warmup 120 \
		--idle-seconds 60 --results $(BENCH_RESULTS)
	$(REPORT)

bench-pipeline-cuts: install stack-up ## The pipeline benchmark's load with consistent cuts off, every 30 s and every 10 s, taking turns: freshness, cut cadence and lag, each cut checked
	$(PY) -m bench.pipeline --series cuts --idle-seconds 10 --repeat 2 --variant "cuts off" \
		--variant "cuts every 30 s:consistent_cut_interval_seconds=30" --variant "cuts every 10 s:consistent_cut_interval_seconds=10" \
		--results $(BENCH_RESULTS)
	$(REPORT)

bench-rounds: install stack-up ## Small rounds: continuous rounds of 1, 100 and 10,000 messages, a one-shot run's fixed cost
	$(PY) -m bench.rounds --results $(BENCH_RESULTS)
	$(REPORT)

bench-oneshot: install ## Where a one-shot round's wall time goes (JVM start, plan, write, exit): JIT quick/full, JVM archive on/off
	$(PY) -m bench.oneshot --results $(BENCH_RESULTS)
	$(REPORT)

bench-commit-cost: install ## 1,000 updates into a 1M-row table under each index, metadata table, markers, timeline server, file size: seconds, Spark jobs, steps
	$(PY) -m bench.commit_cost --results $(BENCH_RESULTS)
	$(REPORT)

bench-java-client: install ## Experiment: the same small MOR round through Hudi's Java write client in the same JVM, against Spark's
	$(PY) -m bench.java_client --results $(BENCH_RESULTS)
	$(REPORT)

bench-small-round: install ## A warm round of 1,000 changes into a 1M-row MOR table through the Python API: Java write client vs Spark's datasource, metadata table on/off
	$(PY) -m bench.small_round --results $(BENCH_RESULTS)

# The same benchmark as a pip user runs it: the wheel in a venv of its own, no checkout on its path (the bench
# package alone, through a folder of its own), its jars the wheel's and Maven's (Spark resolves the coordinates).
WHEEL_BENCH := .bench/wheel
bench-small-round-wheel: wheel ## bench-small-round from a pip-installed wheel (its own venv, jars from the wheel and Maven)
	rm -rf $(WHEEL_BENCH) && mkdir -p $(WHEEL_BENCH)/path && python3 -m venv $(WHEEL_BENCH)/venv
	$(WHEEL_BENCH)/venv/bin/pip install -q -c constraints.txt dist/hudi_cdc-*.whl
	ln -s $(CURDIR)/bench $(WHEEL_BENCH)/path/bench
	cd $(WHEEL_BENCH) && env -u HUDI_CDC_JARS_DIR PYTHONPATH=$(CURDIR)/$(WHEEL_BENCH)/path venv/bin/python -m bench.small_round \
		--name small-round-wheel --work $(CURDIR)/$(WHEEL_BENCH)/work --results $(CURDIR)/$(BENCH_RESULTS) \
		--variants "mor java" "cow java" --floor --placeholder-share 0 --delete-share 0
	$(REPORT)

bench-history: install ## What a history mode costs a round: 1,000 changes into a 200k-row table, none / soft_delete / scd2, MOR and COW
	$(PY) -m bench.small_round --name history-cost --table-rows 200000 --results $(BENCH_RESULTS) --variants \
		"mor none" "mor soft_delete:history=soft_delete" "mor scd2:history=scd2" "cow none" "cow scd2:history=scd2"
	$(REPORT)

bench-history-size: install stack-up ## What a history mode costs the write of the main benchmark's stream (1M events): none / soft_delete / scd2, COW and MOR
	$(PY) -m bench.history_size --results $(BENCH_RESULTS)
	$(REPORT)

bench-formats: install stack-up ## The same stream as Avro, JSON with schemas and JSON without, ingested side by side
	$(PY) -m bench.formats --results $(BENCH_RESULTS)
	$(REPORT)

bench-all: bench bench-scale bench-freshness bench-pipeline bench-rounds bench-commit-cost ## The main benchmarks, results into bench/results/

bench-shape: install stack-up ## What shaping costs on the main benchmark's stream: transforms and masks vs none, COW and MOR
	$(PY) -m bench.shape_cost --results $(BENCH_RESULTS)
	$(REPORT)

.PHONY: bench-catalog
bench-catalog: install stack-up ## What catalog sync costs a round: the check, each kind of sync, a metastore that is down (COW, MOR)
	$(PY) -m bench.catalog_sync --results $(BENCH_RESULTS)

bench-index: install ## An upsert into tables of 1M and 10M rows under each index and record merger, COW and MOR
	$(PY) -m bench.index_cost --table-rows 1000000 --results $(BENCH_RESULTS)
	$(PY) -m bench.index_cost --table-rows 10000000 --pattern recent --rounds 6 --results $(BENCH_RESULTS)
	$(REPORT)

bench-toast: install ## Filling TOAST placeholders from the table: a round's cost at 50k and 200k rows of 4 kB values (MOR)
	$(PY) -m bench.toast_lookup --rows 50000,200000 --results $(BENCH_RESULTS)
	$(REPORT)

bench-pick: install ## A merge policy's per-key pick over 1M events: sort-based against hash-based (jars/pick)
	$(PY) -m bench.pick --results $(BENCH_RESULTS)
	$(REPORT)

bench-verify: install stack-up ## How long hudi-cdc verify takes on a 10M-row table (Postgres against a Hudi COW table)
	$(PY) -m bench.verify --rows 10000000 --results $(BENCH_RESULTS)
	$(REPORT)

bench-repair: install stack-up ## How long hudi-cdc verify --repair takes per 1,000 keys (a 200k-row table, 100 to 5,000 keys)
	$(PY) -m bench.repair --rows 200000 --keys 100,1000,5000 --results $(BENCH_RESULTS)
	$(REPORT)

bench-first-load: install stack-up ## First load of a 10M-row Postgres table by hudi-cdc bootstrap: rows/s, peak memory, COPY as the limit
	$(PY) -m bench.first_load --rows 10000000 --results $(BENCH_RESULTS)
	$(REPORT)

# The bucket index and no metadata table make a round cheaper; on MERGE_ON_READ a compaction every 2nd delta
# commit of only the file group with the most log data keeps a compaction round short.
LOW_LATENCY = hoodie.index.type=BUCKET,hoodie.bucket.index.num.buckets=4,hoodie.metadata.enable=false,hoodie.compact.inline.max.delta.commits=2,hoodie.compaction.target.io=1
bench-freshness: install stack-up ## Postgres commit -> visible in a snapshot query, at 2,000 and 10,000 changes/s, MOR and COW, defaults and low-latency settings
	$(PY) -m bench.freshness --seconds 90 --variant "hudi-cdc defaults" \
		--variant "low latency:$(LOW_LATENCY)" --results $(BENCH_RESULTS)
	$(REPORT)

bench-report: $(INSTALLED) ## Regenerate the benchmark pages' result tables and plots from bench/results/
	$(REPORT)

CHAOS_ARGS ?= --kills 20 --restarts kafka,registry,connect

chaos: install stack-up ## Kill the ingest (COW and MOR) 20 times each and restart Kafka, registry, Connect under a live workload; verify; results into docs/reliability.md
	$(PY) -m chaos.run --markdown docs/reliability.md $(CHAOS_ARGS)

CHAOS_RUNNERS_ARGS ?= --tables 10 --kills 3

chaos-runners: install stack-up ## Two runners on one 10-table pipeline, SIGKILLed by turns (inside commits, during a repair); verify; no table with two writers; results into docs/many-processes.md
	$(PY) -m chaos.runners --markdown docs/many-processes.md $(CHAOS_RUNNERS_ARGS)

CHAOS_S3A_ARGS ?= --kills 5 --table-types cow,mor

chaos-s3a: install stack-up ## Kill hudi-cdc ingest inside commits on s3a tables (COW and MOR, 5 kills each) on the stack's S3 server; read back against the source
	$(PY) -m chaos.object_store $(CHAOS_S3A_ARGS)

stack-up: $(INSTALLED) | $(JARS) ## Start the local CDC stack: PostgreSQL 15, MariaDB, Hive metastore 3.1.3, SeaweedFS (S3), Kafka (KRaft), Apicurio Registry, Kafka Connect + Debezium (state in .stack/)
	bash stack/setup.sh
	bash stack/start.sh

stack-down: ## Stop the local CDC stack
	bash stack/stop.sh

stack-reset: ## Stop the stack and wipe its data (downloaded jars stay)
	bash stack/reset.sh

# Trino 476 with its Hudi connector, a reader of the synced tables that hudi-cdc did not write (docs/catalog.md#reading-them-from-trino).
# Not in stack-up: 783 MiB to fetch once, 20-60 s to start, half a GiB of memory.
trino-up: ## Start Trino 476 (Hudi connector) on 127.0.0.1:58090 against the stack's metastore; fetched once (783 MiB)
	bash stack/trino.sh start

trino-down: ## Stop Trino
	bash stack/trino.sh stop

test-trino: install stack-up trino-up ## Trino reads hudi-cdc's synced tables by name (tests/stack/test_trino.py; required, not skipped)
	HUDI_CDC_TEST_TRINO=required $(TEST_ENV) $(PY) -m pytest -q tests/stack/test_trino.py -p no:cacheprovider $(PYTEST_ARGS)
