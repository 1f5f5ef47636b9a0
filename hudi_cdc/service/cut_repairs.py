"""A repair is a cut boundary: no consistent cut spans a table's repair before a transaction after it (pure).

A repair (:mod:`hudi_cdc.ops.repair`) writes the keys it fixes as the source had them in a snapshot ``S`` at
position ``P``, with the table's checkpoint unchanged: every commit of the table from then on shows those keys
as of ``P``, whatever offsets it holds. A cut at a transaction ``T`` that committed before ``S`` would show them
ahead of ``T`` (a transfer repaired in one account and not yet in the other) until the table's ingest passed
``P``. So a repaired table is in a cut at ``T`` only once a transaction known to have committed after ``S`` is
at or before ``T``: every transaction ``S`` holds then precedes ``T`` in commit order, and the table's commit
in the cut holds all their events, the repaired keys' later changes outranking the repair.

The repair's commit, and every later commit of the table, carries what that takes (``REPAIRED_AT_KEY``):

- Postgres, ``lsn``: ``P``, the WAL insert position read as ``S`` was taken. An END id is ``<txid>:<lsn>``; a
  transaction that wrote WAL beyond ``P`` committed after ``S``.
- MariaDB, ``gtid``: ``@@gtid_binlog_pos`` read once ``S`` was taken. An END id is the transaction's GTID
  (``domain-server-seq``); one beyond that position in its domain committed after it.

Until then the table is left out of the cuts (``left_out`` says why), as a paused one is; the other tables are
cut as usual. A cut that already held the table with the same repair passed it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hudi_cdc.sources.transactions import TransactionEnd

__all__ = ["after_repair", "held_by_repairs"]


def _gtids(text: str) -> dict[str, int]:
    """``domain-server-seq[,…]`` -> domain -> seq."""
    found = {}
    for part in text.split(","):
        fields = part.strip().split("-")
        if len(fields) == 3 and fields[2].isdigit():
            found[fields[0]] = int(fields[2])
    return found


def after_repair(end_id: str, repaired: Mapping[str, Any]) -> bool:
    """Whether the transaction of END ``end_id`` committed after the snapshot of the repair ``repaired``; False
    when its id cannot tell (a connector whose ids carry no position)."""
    if "lsn" in repaired:
        _, _, lsn = end_id.partition(":")
        return lsn.isdigit() and int(lsn) > int(repaired["lsn"])
    if "gtid" in repaired:
        ours = _gtids(end_id)
        logged = _gtids(str(repaired["gtid"]))
        return len(ours) == 1 and all(seq > logged.get(domain, -1) for domain, seq in ours.items())
    return False


def held_by_repairs(
    ends: Sequence[TransactionEnd],
    cut_at: TransactionEnd,
    repaired: Mapping[str, Mapping[str, Any] | None],
    previous: Mapping[str, Any] | None,
) -> dict[str, str]:
    """The tables whose newest repair a cut at ``cut_at`` would span, with why: ``repaired`` is table name -> the
    repair its commit carries (None: never repaired), ``ends`` the ENDs read for the plan, ``previous`` the
    newest recorded cut."""
    upto = [e for e in ends if e.offset <= cut_at.offset]
    held = {}
    for name, repair in repaired.items():
        if not repair:
            continue
        before = (previous or {}).get("tables", {}).get(name, {})
        if before.get("repaired") == dict(repair):
            continue  # a recorded cut already held the table past this repair
        if previous is not None and after_repair(str(previous.get("transaction", "")), repair):
            continue
        if any(after_repair(e.id, repair) for e in upto):
            continue
        held[name] = (
            f"repaired at {repair.get('position', '?')}: in cuts from the first transaction known to commit after "
            "the repair's snapshot (docs/consistent-cuts.md#repairs)"
        )
    return held
