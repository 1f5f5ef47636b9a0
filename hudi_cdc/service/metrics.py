"""Prometheus metrics of a pipeline, fed by the round results the runner already has.

Served over HTTP in continuous mode (``[run] metrics_port``), pushed to a
Pushgateway after a one-shot run (``[run] pushgateway_url``). Per table:

- ``hudi_cdc_events_total{table}``: change events read, and
  ``hudi_cdc_events_by_op_total{table,op}`` by Debezium op (c, u, d, r, t);
  ``hudi_cdc_changes_total{table,outcome}``: what they became (upsert, delete,
  stale: older than the table's row or tombstone, superseded: a newer event
  of the same key in the round); ``hudi_cdc_quarantined_total{table}``: bad
  events set aside (``on_bad_event = quarantine``);
- ``hudi_cdc_rounds_total{table,result}`` (committed, empty, failed) and
  ``hudi_cdc_failures_total{table,kind}`` (transient, terminal);
- ``hudi_cdc_round_duration_seconds{table}`` (histogram);
- ``hudi_cdc_freshness_seconds{table}`` (histogram, one observation per
  committed round): from the source commit of the round's *oldest* change to
  the moment its commit completed, so every change of the round was visible
  within it; "99% of rounds within N s" is an SLO on all changes;
- ``hudi_cdc_behind{table}``: messages (Kafka: the topic's end offsets minus
  the table's committed checkpoint) or files not in the table yet, and
  ``hudi_cdc_lag_seconds{table}``: 0 when nothing is behind, else now minus the
  newest source commit time the table holds. Both are what ``hudi-cdc status``
  shows (:mod:`hudi_cdc.service.backlog` computes both), measured every
  ``[run] backlog_interval_seconds`` and after each round, whatever the table's
  state (running, waiting, paused, failed): not what its last round left. A
  table whose figure is unknown (the broker unreachable, a JDBC source's
  backlog) has no sample;
- ``hudi_cdc_table_state{table,state}``: 1 for the table's current state;
  ``hudi_cdc_tombstones_held{table}``;
- continuous Kafka runs (the runner watches the topics' end offsets):
  ``hudi_cdc_pending_seconds{table}``: how long the oldest message the table
  does not hold has been waiting since the runner first saw it (0: none);
  ``hudi_cdc_change_age_seconds{table}`` (histogram, one observation per
  committed round): that age when the round's commit completed, the figure
  ``max_freshness_seconds`` is a target for; ``hudi_cdc_freshness_target_seconds{table}``
  and ``hudi_cdc_freshness_missed_total{table,cause}``: rounds past the target,
  by where most of the time went (``waiting for a slot``, or the round's step:
  ``open``, ``read``, ``plan``, ``quarantine``, ``tombstones``, ``commit``);
- ``hudi_cdc_round_step_seconds_total{table,step}``: the rounds' seconds per step.
- ``hudi_cdc_schema_changes_total{table,kind}``: schema changes the rounds took (column_added,
  column_dropped, type_widened, type_changed, column_renamed; envelope.evolution).
- ``hudi_cdc_java_writer_fallbacks_total{table}``: rounds Hudi's Java write client failed before its
  commit and Spark's datasource wrote instead (sink.small_write; the round's ``java_failed`` says why).
- ``hudi_cdc_round_plans_total{table,by}``: committed rounds by who planned them: ``driver`` (a small
  round planned without a Spark job, hudi_cdc.small_plan), ``spark``, or ``driver_failed`` (the driver's
  plan failed and Spark's planned the round; its ``driver_failed`` says why; a decline is ``spark``, its
  ``driver_declined`` says why).

Per pipeline, with consistent cuts on (docs/consistent-cuts.md): ``hudi_cdc_cuts_total{result}`` (recorded,
partial: recorded with quarantined events missing, no_cut: a plan found no boundary or was abandoned, error:
a plan failed), ``hudi_cdc_cut_failed_plans``: plans in a row that made no cut (0 after a cut; status.json's
``cut_blocked`` says why), and ``hudi_cdc_cut_plan_seconds``: the runner's loop planning a cut, when it starts no
round (a bound round's wait from the plan to its start is its ``cut_wait_s``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from hudi_cdc.errors import ConfigError, TransientError
from hudi_cdc.service.states import STATES

if TYPE_CHECKING:
    from hudi_cdc.pipeline import IngestResult
    from hudi_cdc.service.backlog import Backlog
    from hudi_cdc.service.states import TableState

__all__ = ["PipelineMetrics"]

_SECONDS = (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800)


class PipelineMetrics:
    def __init__(self, pipeline: str) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.pipeline = pipeline
        self.registry = CollectorRegistry()
        labels = ["table"]
        r = self.registry
        self.events = Counter("hudi_cdc_events", "Change events read", labels, registry=r)
        self.by_op = Counter("hudi_cdc_events_by_op", "Change events read, by Debezium op", [*labels, "op"], registry=r)
        self.changes = Counter("hudi_cdc_changes", "What the events became", [*labels, "outcome"], registry=r)
        self.quarantined = Counter("hudi_cdc_quarantined", "Bad events set aside", labels, registry=r)
        self.rounds = Counter("hudi_cdc_rounds", "Rounds by result", [*labels, "result"], registry=r)
        self.failures = Counter("hudi_cdc_failures", "Failed rounds by kind", [*labels, "kind"], registry=r)
        self.duration = Histogram(
            "hudi_cdc_round_duration_seconds", "Round duration", labels, buckets=_SECONDS, registry=r
        )
        self.freshness = Histogram(
            "hudi_cdc_freshness_seconds",
            "Source commit of a round's oldest change to its Hudi commit",
            labels,
            buckets=_SECONDS,
            registry=r,
        )
        self.lag = Gauge(
            "hudi_cdc_lag_seconds", "Now minus the newest source commit time held; 0 when caught up", labels, registry=r
        )
        self.behind = Gauge(
            "hudi_cdc_behind", "Messages or files past the table's committed checkpoint", labels, registry=r
        )
        self.state = Gauge("hudi_cdc_table_state", "1 for the table's current state", [*labels, "state"], registry=r)
        self.tombstones = Gauge("hudi_cdc_tombstones_held", "Delete tombstones held", labels, registry=r)
        self.pending = Gauge(
            "hudi_cdc_pending_seconds", "Age of the oldest message the table does not hold; 0: none", labels, registry=r
        )
        self.age = Histogram(
            "hudi_cdc_change_age_seconds",
            "A round's oldest change, first seen to committed",
            labels,
            buckets=_SECONDS,
            registry=r,
        )
        self.target = Gauge(
            "hudi_cdc_freshness_target_seconds", "The table's max_freshness_seconds", labels, registry=r
        )
        self.missed_rounds = Counter(
            "hudi_cdc_freshness_missed", "Committed rounds past the freshness target", [*labels, "cause"], registry=r
        )
        self.steps = Counter("hudi_cdc_round_step_seconds", "Seconds of rounds per step", [*labels, "step"], registry=r)
        self.schema_changes = Counter(
            "hudi_cdc_schema_changes", "Schema changes the commits took, by kind", [*labels, "kind"], registry=r
        )
        self.java_fallbacks = Counter(
            "hudi_cdc_java_writer_fallbacks",
            "Rounds the Java write client failed before its commit, written by Spark's datasource instead",
            labels,
            registry=r,
        )
        self.plans = Counter("hudi_cdc_round_plans", "Rounds by who planned them", [*labels, "by"], registry=r)

        self.cuts = Counter("hudi_cdc_cuts", "Consistent cuts planned, by result", ["result"], registry=r)
        self.cut_failed_plans = Gauge(
            "hudi_cdc_cut_failed_plans", "Consistent-cut plans in a row that made no cut", registry=r
        )
        self.cut_plan = Histogram(
            "hudi_cdc_cut_plan_seconds",
            "The runner's loop planning a consistent cut (no round starts meanwhile)",
            buckets=_SECONDS,
            registry=r,
        )

    def cut_planned(self, seconds: float) -> None:
        self.cut_plan.observe(seconds)

    def cut_recorded(self, *, partial: bool) -> None:
        self.cuts.labels("partial" if partial else "recorded").inc()
        self.cut_failed_plans.set(0)

    def cut_missed(self, *, error: bool, in_a_row: int) -> None:
        self.cuts.labels("error" if error else "no_cut").inc()
        self.cut_failed_plans.set(in_a_row)

    def observe(self, table: TableState, result: IngestResult | None, *, now: float | None = None) -> None:
        """Record one finished round (``result`` None: it failed, ``table.last_error_kind`` says how)."""
        now = time.time() if now is None else now
        name = table.name
        self.set_state(table)
        if result is None:
            self.rounds.labels(name, "failed").inc()
            self.failures.labels(name, table.last_error_kind or "terminal").inc()
            return
        self.rounds.labels(name, "committed" if result.committed else "empty").inc()
        self.duration.labels(name).observe(result.duration_s)
        for step, seconds in result.steps_s.items():
            self.steps.labels(name, step).inc(seconds)
        self.tombstones.labels(name).set(result.tombstones_held)
        if result.events:
            self.events.labels(name).inc(result.events)
            for outcome in ("upserts", "deletes", "stale", "superseded"):
                self.changes.labels(name, outcome.rstrip("s")).inc(getattr(result, outcome))
        for op, n in result.ops.items():
            self.by_op.labels(name, op).inc(n)
        if result.quarantined:
            self.quarantined.labels(name).inc(result.quarantined)
        for kind, n in (result.details.get("schema_changes") or {}).items():
            self.schema_changes.labels(name, kind).inc(n)
        if result.details.get("java_failed"):
            self.java_fallbacks.labels(name).inc()
        if "plan" in result.details:
            planner = "driver_failed" if result.details.get("driver_failed") else result.details["plan"]
            self.plans.labels(name, planner).inc()
        if result.committed and result.source_ts_ms_min is not None:
            self.freshness.labels(name).observe(max(0.0, now - result.source_ts_ms_min / 1000))

    def set_backlog(self, table: str, backlog: Backlog) -> None:
        """The table's backlog as measured now; an unknown figure removes its sample rather than keep a stale one."""
        for gauge, value in ((self.behind, backlog.behind), (self.lag, backlog.lag_s)):
            if value is None:
                gauge.remove(table)
            else:
                gauge.labels(table).set(value)

    def set_state(self, table: TableState) -> None:
        for state in STATES:
            self.state.labels(table.name, state).set(1 if table.state == state else 0)
        if table.freshness_target_s is not None:
            self.target.labels(table.name).set(table.freshness_target_s)

    def set_pending(self, table: str, seconds: float) -> None:
        self.pending.labels(table).set(seconds)

    def observe_age(self, table: str, seconds: float) -> None:
        self.age.labels(table).observe(seconds)

    def missed(self, table: str, cause: str) -> None:
        self.missed_rounds.labels(table, cause).inc()

    def serve(self, port: int, address: str = "127.0.0.1") -> Callable[[], None]:
        """Serve ``/metrics`` on a daemon thread; returns what stops it."""
        from prometheus_client import start_http_server

        try:
            server, _ = start_http_server(port, addr=address, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"cannot serve metrics on {address}:{port}: {exc}") from None
        return server.shutdown

    def push(self, gateway: str) -> None:
        from prometheus_client import push_to_gateway

        try:
            push_to_gateway(gateway, job=f"hudi-cdc-{self.pipeline}", registry=self.registry)
        except OSError as exc:
            raise TransientError(f"cannot push metrics to {gateway}: {exc}") from None
