"""Model-based property test: random histories of append / overwrite / drop / tag / consumer / expire.

After every expiration every retained snapshot and tag reads exactly the rows the model recorded for it, and the
files on disk are exactly those reachable from retained snapshots and tags (plus schema, hints, tags, consumers).
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS, files_under, reachable_files, rows_of

from tableformat.model.snapshot import Consumer

PARTS = (0, 1, 2)

append = st.tuples(st.just("append"), st.lists(st.sampled_from(PARTS), min_size=1, max_size=3))
overwrite = st.tuples(st.just("overwrite"), st.one_of(st.none(), st.sampled_from(PARTS)))
drop = st.tuples(st.just("drop"), st.sampled_from(PARTS))
tag = st.tuples(st.just("tag"), st.integers(0, 20), st.booleans())
consumer = st.tuples(st.just("consumer"), st.sampled_from(["c0", "c1"]), st.integers(0, 20))
expire = st.tuples(
    st.just("expire"),
    st.integers(1, 4),  # retain min
    st.one_of(st.none(), st.integers(0, 3)),  # retain max - retain min
    st.integers(1, 6),  # limit
    st.booleans(),  # far future (everything old, TTL tags expire) or now with a 1 day retention
)
operation = st.one_of(append, append, overwrite, drop, tag, consumer, expire)


class Model:
    def __init__(self, kit: Any) -> None:
        self.kit = kit
        self.table = kit.table(**{"manifest.merge-min-count": "3"})
        self.rows: list[tuple[int, int]] = []
        self.by_snapshot: dict[int, list[tuple[int, int]]] = {}
        self.tags: dict[str, list[tuple[int, int]]] = {}
        self.tag_count = 0

    def committed(self, snapshot: Any, rows: list[tuple[int, int]]) -> None:
        if snapshot is not None:
            self.rows = rows
            self.by_snapshot[snapshot.id] = sorted(rows)

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        table, kit = self.table, self.kit
        if kind == "append":
            data = kit.rows(len(op[1]), parts=op[1])
            self.committed(table.append(data), self.rows + rows_of(data))
        elif kind == "overwrite":
            parts = PARTS if op[1] is None else (op[1],)
            data = kit.rows(2, parts=parts)
            kept = [r for r in self.rows if op[1] is not None and r[1] != op[1]]
            spec = None if op[1] is None else {"part": op[1]}
            self.committed(table.overwrite(data, spec), kept + rows_of(data))
        elif kind == "drop":
            self.committed(table.drop_partitions([{"part": op[1]}]), [r for r in self.rows if r[1] != op[1]])
        elif kind in ("tag", "consumer"):
            ids = [s.id for s in table.snapshots()]
            if not ids:
                return
            chosen = ids[op[2] % len(ids)]
            if kind == "consumer":
                table.context.store.write_consumer(Consumer(consumer_id=op[1], next_snapshot=chosen))
                return
            name = f"t{self.tag_count}"
            self.tag_count += 1
            table.create_tag(name, chosen, time_retained=dt.timedelta(minutes=10) if op[2] % 2 else None)
            self.tags[name] = self.by_snapshot[chosen]
        else:
            self.expire(*op[1:])

    def expire(self, retain_min: int, extra: int | None, limit: int, far: bool) -> None:
        table = self.table
        before = [s.id for s in table.snapshots()]
        now = FAR_FUTURE_MS if far else int(time.time() * 1000) + 1
        retained = 0 if far else 86_400_000
        result = expire_snapshots(
            table.context,
            retain_min=retain_min,
            retain_max=None if extra is None else retain_min + extra,
            time_retained=retained,
            limit=limit,
            now_ms=now,
        )
        self.check(before, retain_min, result)

    def check(self, before: list[int], retain_min: int, result: Any) -> None:
        table, kit = self.table, self.kit
        after = [s.id for s in table.snapshots()]
        if before:
            assert after[-1] == before[-1]
            assert len(after) >= min(retain_min, len(before))
            assert after == before[len(before) - len(after) :]
            assert result.earliest_snapshot == after[0]
            assert (kit.root(table) / "snapshot" / "EARLIEST").read_text() == str(after[0])
        for snapshot_id in after:
            assert rows_of(table.to_arrow(snapshot_id=snapshot_id)) == self.by_snapshot[snapshot_id]
        present = {t.name for t in table.tags()}
        assert present <= set(self.tags)
        assert set(result.expired_tags) == set(self.tags) - present
        for name in set(self.tags) - present:
            del self.tags[name]
        for name, rows in self.tags.items():
            assert rows_of(table.to_arrow(tag=name)) == rows
        assert files_under(kit.root(table)) == reachable_files(table.context)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(operation, min_size=2, max_size=16))
def test_random_histories_keep_exactly_what_is_reachable(kit: Any, ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:  # a fresh table per example (the fixture is per test)
        model = Model(type(kit)(Path(directory)))
        for op in ops:
            model.apply(op)
        model.expire(1, None, 100, True)  # always end with a full expiration
