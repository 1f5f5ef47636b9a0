"""``hudi-cdc bootstrap``: the first load of a big Postgres table, handed over to Debezium with no gap and no double.

1. A logical replication slot is created with an exported snapshot (the
   replication protocol's ``CREATE_REPLICATION_SLOT ... (SNAPSHOT 'export')``):
   the slot keeps every change that commits after the snapshot.
2. The table is read in parallel key ranges, every task inside that snapshot
   (:class:`hudi_cdc.sources.snapshot.SnapshotSource`), and written with Hudi's
   bulk insert in one commit whose checkpoint starts the table's Kafka topic
   where the new connector will begin writing.
3. The user starts Debezium's connector on that slot with no snapshot of its
   own (``snapshot.mode=no_data``) and runs ``hudi-cdc ingest`` as usual. The
   copied rows carry no LSN and rank below every streamed change, and the slot
   streams exactly the transactions the snapshot did not see.

Killed at any point, the same command finishes the job: before the commit, the
slot it made (named in a claim file beside the table) is dropped and made
again; after it, the command says the table is loaded and changes nothing.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import ConfigError, SourceError
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.catalog import sync_after_round

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.pipeline import IngestResult
    from hudi_cdc.upstream.database import SourceDatabase

__all__ = ["BootstrapResult", "bootstrap", "connector_settings"]

log = logging.getLogger("hudi_cdc")

BOOTSTRAP_KEY = "bootstrap"
"""The checkpoint of a bootstrap's commit holds what it copied under this key."""
_SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")


@dataclass(frozen=True)
class BootstrapResult:
    table: str
    base_path: str
    source_table: str
    slot: str
    consistent_point: str
    """The slot's LSN: the copy holds every transaction that committed before it, the slot every one after."""
    rows: int
    """Rows written (Hudi's count of the commit's inserts)."""
    ranges: int
    commit_time: str | None
    duration_s: float
    checkpoint: dict[str, Any] = field(default_factory=dict)
    already_loaded: bool = False
    """The table was loaded by an earlier run of the same bootstrap: nothing was done."""
    replaced_slot: bool = False
    """A slot left by an earlier, unfinished run was dropped and made again."""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "connector_settings": connector_settings(self.slot)}


def connector_settings(slot: str) -> dict[str, str]:
    """What the Debezium Postgres connector that continues after the copy must be given."""
    return {"slot.name": slot, "snapshot.mode": "no_data", "plugin.name": "pgoutput"}


def _claim_path(config: IngestConfig) -> str:
    return config.target_base_path.rstrip("/") + "_hudi_cdc_bootstrap.json"


class _Claim:
    """A small file beside the table naming the slot a run made, so a rerun knows it may drop it."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        from hudi_cdc._jvm import hadoop_conf, jvm

        self._path = jvm(spark).org.apache.hadoop.fs.Path(path)
        self._fs = self._path.getFileSystem(hadoop_conf(spark))

    def read(self) -> dict[str, Any] | None:
        if not self._fs.exists(self._path):
            return None
        stream = self._fs.open(self._path)
        try:
            data = bytes(stream.readAllBytes())
        finally:
            stream.close()
        return json.loads(data.decode())

    def write(self, claim: dict[str, Any]) -> None:
        stream = self._fs.create(self._path, True)
        try:
            stream.write(bytearray(json.dumps(claim).encode()))
            stream.hflush()
        finally:
            stream.close()

    def remove(self) -> None:
        self._fs.delete(self._path, False)


def _loaded(config: IngestConfig, spark: SparkSession) -> dict[str, Any] | None:
    """The bootstrap part of the table's first commit's checkpoint, if the table has commits."""
    from hudi_cdc.sink.hudi import HudiTable

    table = HudiTable(spark, config.target_base_path)
    if not table.has_commits():
        return None
    first = next((c for c in table.commits(newest_first=False) if opt.CHECKPOINT_KEY in c.extra), None)
    if first is None:
        return {}
    copied = json.loads(first.extra[opt.CHECKPOINT_KEY]).get(BOOTSTRAP_KEY) or {}
    stats = json.loads(first.extra.get(opt.STATS_KEY, "{}"))
    return {**copied, "rows": first.written.get("inserts", 0), "ranges": stats.get("ranges", 0)} if copied else {}


def _kafka_checkpoint(config: IngestConfig) -> dict[str, Any]:
    """Where the table's topic will start: its end now, or its beginning if it does not exist yet."""
    from hudi_cdc.sources.kafka import CHECKPOINT_KIND, client_conf, end_offsets
    from hudi_cdc.sources.kafka_security import KafkaSecurity

    assert config.topic and config.bootstrap_servers  # validated by IngestConfig for the kafka source
    ends = end_offsets(
        config.bootstrap_servers, [config.topic], client_conf(config.hoodie_conf, KafkaSecurity.of(config))
    )
    if not ends:
        return {"kind": CHECKPOINT_KIND, "topic": config.topic, "start": "earliest", "offsets": {}}
    return {"kind": CHECKPOINT_KIND, "topic": config.topic, "offsets": {str(p): o for (_, p), o in ends.items()}}


def _slot_active(database: SourceDatabase, slot: str) -> bool | None:
    """Whether a process holds the slot, or None if there is no such slot."""
    with database.connect() as conn:
        row = conn.execute("select active from pg_replication_slots where slot_name = %s", (slot,)).fetchone()
    return None if row is None else bool(row[0])


def bootstrap(
    config: IngestConfig,
    database: SourceDatabase,
    source_table: str,
    *,
    slot: str,
    ranges: int | None = None,
    fetch_size: int = 10_000,
    spark: SparkSession | None = None,
) -> BootstrapResult:
    """Load ``source_table`` into the (new) Hudi table of ``config`` and leave ``slot`` for Debezium to go on from."""
    from hudi_cdc.spark import spark_session

    started = time.monotonic()
    _check_arguments(config, database, slot)
    spark = spark or spark_session()
    from hudi_cdc.pipeline import writer_lease

    with writer_lease(config, spark):  # one writer per table, from the check of what is loaded to the commit
        return _bootstrap(config, database, source_table, spark, slot, ranges, fetch_size, started)


def _bootstrap(
    config: IngestConfig,
    database: SourceDatabase,
    source_table: str,
    spark: SparkSession,
    slot: str,
    ranges: int | None,
    fetch_size: int,
    started: float,
) -> BootstrapResult:
    done = _already_loaded(config, spark, source_table, slot)
    if done is not None:
        return replace(done, duration_s=time.monotonic() - started)
    claim = _Claim(spark, _claim_path(config))
    replaced = _recover_slot(config, database, claim, slot)
    lsn, copied_ranges, result = _load(config, database, spark, claim, source_table, slot, ranges, fetch_size)
    if result.commit_time is not None:  # an empty table commits too: the commit holds the checkpoint
        claim.remove()
        sync_after_round(spark, config)  # the catalog, as after a round (a metastore that is down: owed to the next)
    return BootstrapResult(
        table=config.target_table,
        base_path=config.target_base_path,
        source_table=source_table,
        slot=slot,
        consistent_point=lsn,
        rows=result.upserts,
        ranges=copied_ranges,
        commit_time=result.commit_time,
        duration_s=time.monotonic() - started,
        checkpoint=dict(result.checkpoint or {}),
        replaced_slot=replaced,
    )


def _check_arguments(config: IngestConfig, database: SourceDatabase, slot: str) -> None:
    """Refuse, before touching anything, what bootstrap cannot hand over: not Postgres to Kafka, a bad slot name."""
    if config.source != "kafka" or config.flavor != "postgres":
        raise ConfigError(
            "bootstrap hands a Postgres table over to its Debezium topic: --source kafka, --flavor postgres"
        )
    if database.kind != "postgres":
        raise ConfigError(f"{database.display}: bootstrap reads Postgres (MySQL/MariaDB: not yet)")
    if not _SLOT_NAME.fullmatch(slot):
        raise ConfigError(f"slot name {slot!r}: Postgres takes lower-case letters, digits and _ (at most 63)")


def _already_loaded(config: IngestConfig, spark: SparkSession, source_table: str, slot: str) -> BootstrapResult | None:
    """What an earlier run of the same bootstrap loaded (None for a new table); a table loaded otherwise is refused."""
    loaded = _loaded(config, spark)
    if loaded is None:
        return None
    if loaded.get("table") != source_table:
        raise ConfigError(
            f"{config.target_base_path} already holds a table (not loaded by a bootstrap of {source_table}); "
            "bootstrap loads a new table"
        )
    log.info("%s: already loaded by bootstrap at %s; nothing to do", config.target_table, loaded.get("lsn"))
    return BootstrapResult(
        table=config.target_table,
        base_path=config.target_base_path,
        source_table=source_table,
        slot=loaded.get("slot", slot),
        consistent_point=loaded.get("lsn", ""),
        rows=int(loaded.get("rows", 0)),
        ranges=int(loaded.get("ranges", 0)),
        commit_time=None,
        duration_s=0.0,
        already_loaded=True,
    )


def _recover_slot(config: IngestConfig, database: SourceDatabase, claim: _Claim, slot: str) -> bool:
    """Drop ``slot`` if an unfinished earlier run of this bootstrap made it (True then); refuse anyone else's."""
    active = _slot_active(database, slot)
    if active is None:
        return False
    claimed = claim.read()
    if not claimed or claimed.get("slot") != slot:
        raise ConfigError(
            f"replication slot {slot} already exists and this table's bootstrap did not make it: "
            "choose another --slot (the copy needs a slot made at the moment of its snapshot)"
        )
    if active:
        raise SourceError(f"replication slot {slot} is in use by a running process: stop it, then run again")
    with database.connect() as conn:  # an unfinished earlier run's: its snapshot is gone with it
        conn.execute("select pg_drop_replication_slot(%s)", (slot,))
    log.warning("%s: dropped slot %s left by an unfinished bootstrap", config.target_table, slot)
    return True


def _first_load_conf(config: IngestConfig, database: SourceDatabase, source_table: str) -> dict[str, str]:
    """The settings of the first load: a bulk insert, and a bucket count sized by the source's rows.

    Only for the bucket default (``options.resolve_index``): not with an index the user set, nor on a
    partitioned table; the user's own count wins, and later rounds reuse the count the commit records.
    """
    conf = {**config.hoodie_conf, opt.OPERATION: "bulk_insert"}
    default_index = not opt.names_index(conf, partitioned=bool(config.partition_path_field))
    if default_index and opt.NUM_BUCKETS not in conf:
        conf[opt.NUM_BUCKETS] = str(opt.bucket_count(_source_rows(database, source_table)))
    return conf


def _source_rows(database: SourceDatabase, source_table: str) -> int:
    """Postgres's estimate of the table's rows (its statistics), or its count if it was never analysed."""
    with database.connect() as conn:
        estimate = conn.execute("select reltuples::bigint from pg_class where oid = %s::regclass", (source_table,))
        rows = int(estimate.fetchone()[0] or 0)
        if rows < 0:
            rows = int(conn.execute(f"select count(*) from {source_table}").fetchone()[0])
    return rows


def _load(
    config: IngestConfig,
    database: SourceDatabase,
    spark: SparkSession,
    claim: _Claim,
    source_table: str,
    slot: str,
    ranges: int | None,
    fetch_size: int,
) -> tuple[str, int, IngestResult]:
    """Make the slot with its exported snapshot, and bulk-insert the table as of that snapshot in one commit.

    Returns the slot's LSN, the key ranges read, and the commit's result. The
    claim is written before the slot exists, so a run killed in between knows
    the slot is its own.
    """
    from hudi_cdc.pipeline import load_first
    from hudi_cdc.sources.snapshot import SnapshotSource

    checkpoint = _kafka_checkpoint(config)
    claim.write({"slot": slot, "table": source_table})
    replication = database.replication_connection()
    try:
        made = replication.execute(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput (SNAPSHOT 'export')").fetchone()
        lsn, snapshot = made[1], made[2]
        log.info("%s: slot %s at %s, exported snapshot %s", config.target_table, slot, lsn, snapshot)
        source = SnapshotSource(
            spark,
            database,
            source_table,
            key_fields=config.record_key_fields,
            snapshot=snapshot,
            ranges=ranges,
            fetch_size=fetch_size,
            snapshot_ts_ms=int(time.time() * 1000),
            next_checkpoint={**checkpoint, BOOTSTRAP_KEY: {"table": source_table, "slot": slot, "lsn": lsn}},
        )
        bulk = replace(config, hoodie_conf=_first_load_conf(config, database, source_table))
        result = load_first(bulk, spark=spark, source=source)
    finally:
        replication.close()  # the snapshot ends with this session; the slot stays for Debezium
    return lsn, len(source.predicates), result
