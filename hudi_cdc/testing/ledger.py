"""A workload whose every transaction is numbered in a ledger, for tests that must see a cut mix transactions.

Four Postgres tables ``<tag>_ledger``, ``<tag>_acct``, ``<tag>_moves``, ``<tag>_tags``. Transaction ``s``
(``s`` = 1, 2, ... in commit order: one thread commits them) writes all four:

- ``ledger``: the row ``(s, lines, dropped)``;
- ``moves``: ``lines`` rows ``(s, line, account, amount)`` whose amounts sum to zero (2-6 lines, or a big one
  of up to ``max_lines``: with the account updates, hundreds of events in one transaction);
- ``acct``: one update per move line, ``balance += amount, last_seq = s`` (an account may be updated many
  times in one transaction);
- ``tags``: the row ``(s, label)``, and sometimes the delete of an older tag (``dropped``) or an update.

Read as of a consistent cut, each table must show exactly the ledger's transactions (:func:`broken`): the
ledger holds ``1..n`` with no gap, the moves exactly the ledger's lines, every account its opening balance
plus its moves and the last transaction that moved it, the tags the ledger's minus those it dropped, and the
money total is conserved. A cut that holds a transaction in one table and not in another breaks one of them.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ACCOUNTS", "OPENING", "LedgerWorkload", "broken", "source_rows"]

ACCOUNTS = 20
"""Accounts 1..ACCOUNTS take the moves; account 0 (note ``reserve``) is never written after its insert."""
OPENING = 1_000

ROLES = ("ledger", "acct", "moves", "tags")
COLUMNS = {
    "ledger": ("seq", "lines", "dropped"),
    "acct": ("id", "balance", "last_seq", "note"),
    "moves": ("seq", "line", "account", "amount"),
    "tags": ("id", "label"),
}


class LedgerWorkload:
    """The tables (``create``), and a thread committing numbered transactions until ``stop``."""

    def __init__(
        self, tag: str, *, seed: int = 56, pause_s: float = 0.05, big_share: float = 0.08, max_lines: int = 150
    ) -> None:
        self.tag = tag
        self.tables = {role: f"{tag}_{role}" for role in ROLES}
        self._rng = random.Random(seed)
        self._pause_s = pause_s
        self._big_share = big_share
        self._max_lines = max_lines
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live_tags: list[int] = []
        self.seq = 0
        """The last transaction committed."""
        self.events = 0
        """Change events the committed transactions wrote (rows inserted, updated, deleted)."""
        self.biggest = 0
        self.error: BaseException | None = None

    def create(self, conn: Any) -> None:  # noqa: ANN401 - a psycopg connection, autocommit
        t = self.tables
        conn.execute(
            f"create table inventory.{t['ledger']} (seq bigint primary key, lines int not null, dropped bigint)"
        )
        conn.execute(
            f"create table inventory.{t['acct']} "
            "(id int primary key, balance bigint not null, last_seq bigint not null, note text not null)"
        )
        conn.execute(
            f"create table inventory.{t['moves']} (seq bigint, line int, account int not null, amount int not null, "
            "primary key (seq, line))"
        )
        conn.execute(f"create table inventory.{t['tags']} (id bigint primary key, label text not null)")
        with conn.transaction(), conn.cursor() as cur:
            rows = [(i, OPENING, 0, "reserve" if i == 0 else "open") for i in range(ACCOUNTS + 1)]
            cur.executemany(f"insert into inventory.{t['acct']} values (%s, %s, %s, %s)", rows)  # noqa: S608

    def drop(self, conn: Any) -> None:  # noqa: ANN401
        for table in self.tables.values():
            conn.execute(f"drop table if exists inventory.{table}")

    def start(self, conn: Any) -> None:  # noqa: ANN401
        self._thread = threading.Thread(target=self._run, args=(conn,), name="ledger", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.error is not None:
            raise self.error

    def _run(self, conn: Any) -> None:  # noqa: ANN401
        try:
            while not self._stop.wait(self._pause_s):
                seq = self.seq + 1
                with conn.transaction(), conn.cursor() as cur:
                    events = self._transaction(cur, seq)
                self.seq, self.events = seq, self.events + events
                self.biggest = max(self.biggest, events)
        except BaseException as exc:  # noqa: BLE001 - handed to the test by stop()
            self.error = exc

    def _transaction(self, cur: Any, seq: int) -> int:  # noqa: ANN401
        t, rng = self.tables, self._rng
        big = rng.random() < self._big_share
        count = rng.randint(self._max_lines // 2, self._max_lines) if big else rng.randint(2, 6)
        amounts = [rng.randint(-50, 50) for _ in range(count - 1)]
        amounts.append(-sum(amounts))
        moves = [(seq, line, rng.randint(1, ACCOUNTS), amount) for line, amount in enumerate(amounts, 1)]
        cur.executemany(f"insert into inventory.{t['moves']} values (%s, %s, %s, %s)", moves)  # noqa: S608
        for _, _, account, amount in moves:
            cur.execute(
                f"update inventory.{t['acct']} set balance = balance + %s, last_seq = %s where id = %s",  # noqa: S608
                (amount, seq, account),
            )
        events = 2 * count + 2
        dropped = None
        if len(self._live_tags) > 5 and rng.random() < 0.15:
            dropped = self._live_tags.pop(rng.randrange(len(self._live_tags)))
            cur.execute(f"delete from inventory.{t['tags']} where id = %s", (dropped,))  # noqa: S608
            events += 1
        if self._live_tags and rng.random() < 0.2:
            cur.execute(
                f"update inventory.{t['tags']} set label = label || '+' where id = %s",  # noqa: S608
                (rng.choice(self._live_tags),),
            )
            events += 1
        cur.execute(f"insert into inventory.{t['tags']} values (%s, %s)", (seq, f"t{seq}"))  # noqa: S608
        cur.execute(f"insert into inventory.{t['ledger']} values (%s, %s, %s)", (seq, count, dropped))  # noqa: S608
        self._live_tags.append(seq)
        return events


def source_rows(conn: Any, workload: LedgerWorkload) -> dict[str, list[tuple[Any, ...]]]:  # noqa: ANN401
    """Each role's rows in Postgres now, as :func:`broken` takes them."""
    found = {}
    for role, table in workload.tables.items():
        columns = ", ".join(COLUMNS[role])
        found[role] = [tuple(r) for r in conn.execute(f"select {columns} from inventory.{table}").fetchall()]  # noqa: S608
    return found


def rows_of(frames: Mapping[str, Any]) -> dict[str, list[tuple[Any, ...]]]:  # noqa: ANN401 - DataFrames
    """Each role's rows from its DataFrame (``role`` -> DataFrame; a role left out is absent)."""
    return {role: [tuple(r) for r in frame.select(*COLUMNS[role]).collect()] for role, frame in frames.items()}


def broken(rows: Mapping[str, Iterable[tuple[Any, ...]]]) -> tuple[list[str], int]:
    """What ``rows`` (role -> rows as :data:`COLUMNS` orders them; a role left out of the cut is absent) break
    of the workload's invariants ([] when none), and the newest transaction the ledger holds (0: none)."""
    problems: list[str] = []
    ledger = {int(s): (int(n), d) for s, n, d in rows.get("ledger", ())}
    seqs = set(ledger)
    top = max(seqs, default=0)
    if "ledger" in rows and seqs != set(range(1, top + 1)):
        problems.append(
            f"the ledger holds transactions up to {top} without {sorted(set(range(1, top + 1)) - seqs)[:10]}"
        )
    moves = [(int(s), int(line), int(a), int(m)) for s, line, a, m in rows.get("moves", ())]
    lines = Counter(s for s, _, _, _ in moves)
    if "ledger" in rows and "moves" in rows:
        if set(lines) != seqs:
            problems.append(
                f"moves hold transactions the ledger lacks {sorted(set(lines) - seqs)[:10]} and lack ledger "
                f"transactions {sorted(seqs - set(lines))[:10]}"
            )
        wrong = [s for s in seqs & set(lines) if lines[s] != ledger[s][0]]
        if wrong:
            problems.append(
                f"transactions with part of their moves: {[(s, lines[s], ledger[s][0]) for s in wrong[:10]]}"
            )
    if "acct" in rows:
        accounts = {int(i): (int(b), int(last), n) for i, b, last, n in rows["acct"]}
        total = sum(b for b, _, _ in accounts.values())
        if total != (ACCOUNTS + 1) * OPENING:
            problems.append(f"the accounts' total is {total}, not {(ACCOUNTS + 1) * OPENING}")
        if set(accounts) != set(range(ACCOUNTS + 1)):
            problems.append(f"accounts {sorted(accounts)} are not 0..{ACCOUNTS}")
        if "moves" in rows:
            sums: Counter[int] = Counter()
            last: dict[int, int] = {}
            for s, _, account, amount in moves:
                sums[account] += amount
                last[account] = max(last.get(account, 0), s)
            for account, (balance, last_seq, _) in sorted(accounts.items()):
                if (balance, last_seq) != (OPENING + sums[account], last.get(account, 0)):
                    problems.append(
                        f"account {account}: balance {balance}, last transaction {last_seq}; its moves give "
                        f"{OPENING + sums[account]}, {last.get(account, 0)}"
                    )
    if "tags" in rows and "ledger" in rows:
        tags = {int(i) for i, _ in rows["tags"]}
        expected = seqs - {int(d) for _, d in ledger.values() if d is not None}
        if tags != expected:
            problems.append(
                f"tags hold {sorted(tags - expected)[:10]} beyond the ledger's and lack {sorted(expected - tags)[:10]}"
            )
    return problems, top
