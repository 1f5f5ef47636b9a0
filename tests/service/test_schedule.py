"""The runner's scheduling arithmetic: what a table has to do and since when, from watched end offsets."""

from __future__ import annotations

from hudi_cdc.service.schedule import (
    KEPT_SIGHTINGS,
    MIN_WAIT_S,
    UNTARGETED_S,
    Arrivals,
    committed_offsets,
    deadline,
    next_wait,
)


def test_a_table_holding_every_seen_message_has_nothing_pending() -> None:
    arrivals = Arrivals()
    arrivals.observe(1.0, {0: 10})
    assert arrivals.pending_since() == 1.0  # before its first round: everything is pending
    arrivals.apply({0: 10})
    assert arrivals.known and arrivals.pending_since() is None
    arrivals.observe(2.0, {0: 10})  # nothing moved
    assert arrivals.pending_since() is None


def test_the_oldest_unapplied_message_is_dated_by_the_first_sighting_past_the_committed_offsets() -> None:
    arrivals = Arrivals(applied={0: 10, 1: 5})
    arrivals.observe(1.0, {0: 10, 1: 5})
    arrivals.observe(2.0, {0: 12, 1: 5})  # two messages of partition 0 arrive
    arrivals.observe(3.0, {0: 12, 1: 9})
    arrivals.observe(4.0, {0: 15, 1: 9})
    assert arrivals.pending_since() == 2.0
    arrivals.apply({0: 12, 1: 5})  # a round took partition 0's first two: partition 1's are the oldest now
    assert arrivals.pending_since() == 3.0
    arrivals.apply({0: 13, 1: 9})  # 13, 14 of partition 0 were first seen at 4.0
    assert arrivals.pending_since() == 4.0
    arrivals.apply({0: 15, 1: 9})
    assert arrivals.pending_since() is None
    assert len(arrivals.seen) == 1  # covered sightings are forgotten; the newest stays to compare with


def test_a_new_partition_counts_from_offset_zero() -> None:
    arrivals = Arrivals(applied={0: 3})
    arrivals.observe(1.0, {0: 3, 1: 0})
    assert arrivals.pending_since() is None
    arrivals.observe(2.0, {0: 3, 1: 1})
    assert arrivals.pending_since() == 2.0


def test_a_round_behind_what_was_seen_keeps_the_rest_pending() -> None:
    """A round planned before the newest sighting commits less than was seen: the rest stays pending, dated."""
    arrivals = Arrivals(applied={0: 0})
    arrivals.observe(1.0, {0: 4})
    arrivals.observe(2.0, {0: 9})
    arrivals.apply({0: 4})
    assert arrivals.pending_since() == 2.0


def test_committed_offsets_only_from_a_kafka_checkpoint_that_read_its_topic() -> None:
    assert committed_offsets({"kind": "kafka/v1", "topic": "t", "offsets": {"0": 7, "1": 2}}) == {0: 7, 1: 2}
    assert committed_offsets({"kind": "kafka/v1", "topic": "t", "start": "earliest", "offsets": {}}) is None
    assert committed_offsets({"kind": "files/v1", "files": []}) is None
    assert committed_offsets(None) is None


def test_earliest_deadline_ranks_a_cold_change_against_a_hot_table() -> None:
    hot = deadline(100.0, 10.0)  # a hot table whose oldest change arrived at 100, target 10 s
    assert deadline(85.0, 30.0) > hot  # a cold change 15 s older has more time left: the hot table first
    assert deadline(75.0, 30.0) < hot  # 25 s older: its 30 s end first, it goes first
    assert deadline(5.0, None) == 5.0 + UNTARGETED_S


def test_a_table_that_runs_no_rounds_keeps_a_bounded_history_with_its_oldest_sighting() -> None:
    arrivals = Arrivals(applied={0: 0})
    for n in range(1, 3 * KEPT_SIGHTINGS):
        arrivals.observe(float(n), {0: n})
    assert len(arrivals.seen) == KEPT_SIGHTINGS
    assert arrivals.pending_since() == 1.0  # the oldest unapplied message's date is kept exactly
    arrivals.apply({0: 3 * KEPT_SIGHTINGS - 2})
    assert arrivals.pending_since() == float(3 * KEPT_SIGHTINGS - 1)


def test_with_every_slot_busy_an_overdue_table_does_not_shorten_the_loops_wait() -> None:
    overdue = [-3.0, -0.5, 2.0]
    assert next_wait(overdue, free_slots=1, others=[30.0], idle_s=1.0) == MIN_WAIT_S  # one can start now
    assert next_wait(overdue, free_slots=0, others=[30.0], idle_s=1.0) == 1.0  # none can: a round's end wakes it
    assert next_wait([], free_slots=0, others=[0.2], idle_s=1.0) == 0.2  # discovery is due sooner
    assert next_wait([0.3], free_slots=2, others=[], idle_s=1.0) == 0.3
