"""Shared helpers of the reliability tests: tiny tables with a known history, readers that check every snapshot and
tag against a row model, sentinel files around a table root, and the CLI run in-process. Files on disk, ageing them
and the independent reachability oracle live in tests/support/tables.py.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner, Result
from support.tables import DAY_S, age_path, row_counts

from tableformat.cli.main import COMMANDS, cli
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string())])


def batch(pairs: Iterable[tuple[int, str]]) -> pa.Table:
    items = list(pairs)
    return pa.table({"id": [i for i, _ in items], "part": [p for _, p in items]}, schema=SCHEMA)


@dataclass
class History:
    """Rows of every snapshot a table ever had (by id), and which snapshot each tag holds."""

    rows: dict[int, Counter[tuple[int, str]]] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)

    def record(self, snapshot_id: int, rows: Counter[tuple[int, str]]) -> None:
        self.rows[snapshot_id] = Counter(rows)

    def copy(self) -> History:
        return History({k: Counter(v) for k, v in self.rows.items()}, dict(self.tags))


class Model:
    """The expected rows of a table as operations are applied (append / static overwrite / drop)."""

    def __init__(self) -> None:
        self.current: Counter[tuple[int, str]] = Counter()

    def append(self, pairs: Iterable[tuple[int, str]]) -> Counter[tuple[int, str]]:
        self.current = self.current + Counter(pairs)
        return Counter(self.current)

    def overwrite(self, part: str, pairs: Iterable[tuple[int, str]]) -> Counter[tuple[int, str]]:
        kept = Counter({row: n for row, n in self.current.items() if row[1] != part})
        self.current = kept + Counter(pairs)
        return Counter(self.current)

    def drop(self, part: str) -> Counter[tuple[int, str]]:
        self.current = Counter({row: n for row, n in self.current.items() if row[1] != part})
        return Counter(self.current)


def build_history(root: Path, options: Mapping[str, str]) -> History:
    """Six snapshots over partitions p0..p3 (appends, a static overwrite, a drop) and a tag on snapshot 2."""
    table = Table.create(str(root), SCHEMA, partition_keys=["part"], options=dict(options))
    model = Model()
    history = History()

    def commit(snapshot: Any, rows: Counter[tuple[int, str]]) -> None:
        assert snapshot is not None
        history.record(snapshot.id, rows)

    first = [(0, "p0"), (1, "p1"), (2, "p0"), (3, "p1")]
    commit(table.append(batch(first)), model.append(first))
    second = [(4, "p1"), (5, "p2")]
    commit(table.append(batch(second)), model.append(second))
    table.create_tag("t2", 2)
    history.tags["t2"] = 2
    third = [(6, "p1")]
    commit(table.overwrite(batch(third), {"part": "p1"}), model.overwrite("p1", third))
    fourth = [(7, "p0"), (8, "p2")]
    commit(table.append(batch(fourth)), model.append(fourth))
    commit(table.drop_partitions([{"part": "p2"}]), model.drop("p2"))
    sixth = [(9, "p3")]
    commit(table.append(batch(sixth)), model.append(sixth))
    return history


# --- reads against the history ------------------------------------------------------------------------------------
def check_reads(root: Path | str, history: History) -> list[int]:
    """Read every present snapshot and tag fully and compare with the history; returns the snapshot ids present.

    Raises AssertionError naming the snapshot or tag whose rows differ, or that the history does not know
    (a commit applied twice shows up as an unknown snapshot id or as doubled rows).
    """
    table = Table.open(str(root))
    ids = [s.id for s in table.snapshots()]
    for snapshot_id in ids:
        assert snapshot_id in history.rows, f"unexpected snapshot {snapshot_id} (present: {ids})"
        got = row_counts(table.to_arrow(snapshot_id=snapshot_id))
        assert got == history.rows[snapshot_id], f"snapshot {snapshot_id}: {sorted(got)} != expected"
    tags = {t.name: t.snapshot.id for t in table.tags()}
    assert tags == history.tags, f"tags {tags} != {history.tags}"
    for name, snapshot_id in tags.items():
        got = row_counts(table.to_arrow(tag=name))
        assert got == history.rows[snapshot_id], f"tag {name}: {sorted(got)} != expected"
    return ids


def copy_table(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, copy_function=shutil.copy2)
    return target


# --- sentinels: files that no maintenance call may ever touch ------------------------------------------------------
OUTSIDE_SENTINELS = (
    "outside.parquet",  # next to the table root ('../../../outside.parquet' from a bucket directory)
    "x.parquet",
    "abs-sentinel.parquet",  # named by absolute path in crafted manifests
    "{name}-sibling/part=p0/bucket-0/data-00000000-0000-4000-8000-000000000000-0.parquet",  # a root sharing a prefix
    "{name}2/manifest/manifest-00000000-0000-4000-8000-000000000000-0",
    "{name}2/snapshot/snapshot-1",
)
INSIDE_SENTINELS = (
    "outside.parquet",  # what '../../outside.parquet' resolves to from a bucket directory: inside, but not ours
    "part=p0/x.parquet",  # what '../x.parquet' resolves to
)


def plant_sentinels(root: Path) -> dict[Path, bytes]:
    """Files around the table root and unknown files inside it, named like table files and two days old."""
    planted: dict[Path, bytes] = {}
    targets = [root.parent / t.format(name=root.name) for t in OUTSIDE_SENTINELS]
    targets += [root / t for t in INSIDE_SENTINELS]
    for path in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        content = f"sentinel {path.name}".encode()
        path.write_bytes(content)
        planted[path] = content
    for path in planted:
        age_path(path, 2 * DAY_S)
    return planted


def assert_sentinels(planted: Mapping[Path, bytes]) -> None:
    touched = [str(p) for p, content in planted.items() if not p.is_file() or p.read_bytes() != content]
    assert not touched, f"files that are not the table's were touched: {touched}"


def chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


# --- the command line -----------------------------------------------------------------------------------------------
def run_cli(name: str, *args: str) -> Result:
    """``tablefmt NAME ARGS`` through the command group (every command named here must be registered there)."""
    assert name in COMMANDS, f"tablefmt has no command {name!r}"
    result = CliRunner().invoke(cli, [name, *args])
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not crashed, f"tablefmt {name} crashed with a traceback: {result.exception!r}\n{result.output}"
    return result


def assert_one_line_error(result: Result, *needles: str) -> str:
    """Non-zero exit, exactly one line starting with 'error:' (click's own usage errors: 'Error:'), no traceback."""
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1, f"expected one error line:\n{result.output}"
    for needle in needles:
        assert needle in errors[0], f"{needle!r} not in {errors[0]!r}"
    return errors[0]
