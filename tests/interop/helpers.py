"""Helpers shared by the interop tests: a pypaimon 2.1.0 driver, row comparison, an independent reader of the
on-disk metadata (fastavro + json), sample data and a reference model of a table's history. Files on disk, ageing
them and rows as sorted tuples come from tests/support/tables.py, like in every other suite.

Nothing here imports pypaimon at module level: the modules skip cleanly where it is not installed.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from support.tables import rows_of

# --- row comparison ------------------------------------------------------------------------------------------------


def diff_rows(actual: Sequence[tuple[Any, ...]], expected: Sequence[tuple[Any, ...]]) -> str:
    """A readable description of how two sorted row lists differ ('' when equal)."""
    if list(actual) == list(expected):
        return ""
    missing = [r for r in expected if r not in actual]
    extra = [r for r in actual if r not in expected]
    lines = [f"{len(actual)} rows, expected {len(expected)}"]
    lines += [f"  missing {r!r}" for r in missing[:5]]
    lines += [f"  extra   {r!r}" for r in extra[:5]]
    if not missing and not extra:
        lines.append("  same rows, different multiplicities")
    return "\n".join(lines)


# --- pypaimon driver -----------------------------------------------------------------------------------------------


class Paimon:
    """pypaimon 2.1.0 on a filesystem catalog at ``warehouse`` (database ``db``), used as the tested recipe says."""

    def __init__(self, warehouse: Path) -> None:
        from pypaimon import CatalogFactory

        self.warehouse = warehouse
        warehouse.mkdir(parents=True, exist_ok=True)
        self.catalog = CatalogFactory.create({"warehouse": str(warehouse)})
        self.catalog.create_database("db", ignore_if_exists=True)

    # paths
    def path(self, name: str) -> str:
        """Where table ``name`` lives (tablefmt creates its tables here so the catalog finds them)."""
        return str(self.warehouse / "db.db" / name)

    # tables
    def create_table(
        self,
        name: str,
        schema: pa.Schema,
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
    ) -> Any:
        from pypaimon import Schema

        self.catalog.create_table(
            f"db.{name}",
            Schema.from_pyarrow_schema(schema, partition_keys=list(partition_keys), options=dict(options or {})),
            False,
        )
        return self.table(name)

    def table(self, name: str) -> Any:
        """A fresh table object (a stale one keeps writing with the schema it was loaded with)."""
        return self.catalog.get_table(f"db.{name}")

    # writes: one call = one snapshot (or none for an empty commit)
    def _write(self, name: str, data: pa.Table, overwrite: Mapping[str, Any] | None) -> None:
        table = self.table(name)
        builder = table.new_batch_write_builder()
        if overwrite is not None:
            builder = builder.overwrite(dict(overwrite))
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()

    def append(self, name: str, data: pa.Table) -> None:
        self._write(name, data, None)

    def overwrite(self, name: str, data: pa.Table, spec: Mapping[str, Any]) -> None:
        """Static overwrite of ``spec`` (``{}`` = the whole table) on tables with dynamic-partition-overwrite=false."""
        self._write(name, data, spec)

    def uncommitted_write(self, name: str, data: pa.Table) -> None:
        """Write data files and prepare the commit, then never commit: the files stay behind as leftovers."""
        table = self.table(name)
        builder = table.new_batch_write_builder()
        write = builder.new_write()
        try:
            write.write_arrow(data)
            messages = write.prepare_commit()
            assert messages, "the uncommitted write produced no files"
        finally:
            write.close()

    def drop_partitions(self, name: str, specs: Sequence[Mapping[str, Any]]) -> None:
        self.catalog.drop_partitions(f"db.{name}", [dict(s) for s in specs])

    def add_column(self, name: str, column: str, type_name: str) -> None:
        from pypaimon.schema.data_types import AtomicType
        from pypaimon.schema.schema_change import SchemaChange

        self.catalog.alter_table(f"db.{name}", [SchemaChange.add_column(column, AtomicType(type_name))])

    def create_tag(self, name: str, tag: str, snapshot_id: int | None = None) -> None:
        self.table(name).create_tag(tag, snapshot_id=snapshot_id)

    def rollback_to(self, name: str, target: int | str) -> None:
        self.table(name).rollback_to(target)

    def delete_tag(self, name: str, tag: str) -> None:
        assert self.table(name).delete_tag(tag), f"pypaimon found no tag {tag!r}"

    # branches: read and write branch ``b`` of ``t`` as the table ``t$branch_b`` (every method here takes it)
    @staticmethod
    def branch(name: str, branch: str) -> str:
        return f"{name}$branch_{branch}"

    def create_branch(self, name: str, branch: str, tag: str | None = None) -> None:
        """From a tag: pypaimon copies the tag, its snapshot and the schemas into ``branch/branch-<b>/``. Without a
        tag ("from the current state") pypaimon 2.1.0 copies only the schemas: the branch has no snapshot."""
        self.table(name).branch_manager().create_branch(branch, tag)

    def branch_from_snapshot(self, name: str, branch: str, snapshot_id: int) -> None:
        """pypaimon 2.1.0 cannot branch from a snapshot (create_branch takes a tag name only); this writes what Paimon
        Java's ``createBranch(branch, snapshotId)`` writes: the schemas and a copy of ``snapshot-<id>``."""
        self.create_branch(name, branch)
        source = Path(self.path(name)) / "snapshot" / f"snapshot-{snapshot_id}"
        target = Path(self.path(name)) / "branch" / f"branch-{branch}" / "snapshot" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)

    def drop_branch(self, name: str, branch: str) -> None:
        self.table(name).branch_manager().drop_branch(branch)

    # reads
    def latest_id(self, name: str) -> int | None:
        snapshot = self.table(name).snapshot_manager().get_latest_snapshot()
        return None if snapshot is None else snapshot.id

    def earliest_id(self, name: str) -> int | None:
        snapshot = self.table(name).snapshot_manager().try_get_earliest_snapshot()
        return None if snapshot is None else snapshot.id

    def read(
        self,
        name: str,
        snapshot_id: int | None = None,
        tag: str | None = None,
        predicate: Callable[[Any], Any] | None = None,
    ) -> pa.Table:
        """The rows pypaimon reads (latest, a snapshot id or a tag), optionally through a value predicate built by
        ``predicate(predicate_builder)`` (pypaimon prunes files with the manifests' value stats)."""
        table = self.table(name)
        options = {}
        if snapshot_id is not None:
            options["scan.snapshot-id"] = str(snapshot_id)
        if tag is not None:
            options["scan.tag-name"] = tag
        if options:
            table = table.copy(options)
        builder = table.new_read_builder()
        if predicate is not None:
            builder = builder.with_filter(predicate(builder.new_predicate_builder()))
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())

    def planned_files(self, name: str, predicate: Callable[[Any], Any] | None = None) -> list[str]:
        """Names of the data files pypaimon plans to read for the latest snapshot (after stats pruning)."""
        builder = self.table(name).new_read_builder()
        if predicate is not None:
            builder = builder.with_filter(predicate(builder.new_predicate_builder()))
        return sorted(f.file_name for split in builder.new_scan().plan().splits() for f in split.files)


# --- on-disk helpers -----------------------------------------------------------------------------------------------


def read_avro(path: str | Path) -> list[dict[str, Any]]:
    import fastavro

    with open(path, "rb") as handle:
        return list(fastavro.reader(handle))


def read_json(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def snapshot_json(table_root: str | Path, snapshot_id: int) -> dict[str, Any]:
    return read_json(Path(table_root) / "snapshot" / f"snapshot-{snapshot_id}")


def manifest_entries(table_root: str | Path, manifest_list: str) -> list[dict[str, Any]]:
    """Every entry of every manifest a manifest list names, in order (decoded independently with fastavro)."""
    root = Path(table_root) / "manifest"
    entries = []
    for meta in read_avro(root / manifest_list):
        entries.extend(read_avro(root / meta["_FILE_NAME"]))
    return entries


def delta_entries(table_root: str | Path, snapshot_id: int) -> list[dict[str, Any]]:
    return manifest_entries(table_root, snapshot_json(table_root, snapshot_id)["deltaManifestList"])


def live_file_entries(table_root: str | Path, snapshot_id: int) -> dict[tuple[bytes, int, str], dict[str, Any]]:
    """Live ADD entries of a snapshot, merged independently of tablefmt (see live_entries_of)."""
    return live_entries_of(table_root, snapshot_json(table_root, snapshot_id))


def live_entries_of(
    table_root: str | Path, metadata: Mapping[str, Any]
) -> dict[tuple[bytes, int, str], dict[str, Any]]:
    """Live ADD entries of a snapshot or tag JSON: base ++ delta merged by (partition, bucket, file name); asserts
    the Paimon invariants on the way (no double ADD, every DELETE matches a live ADD)."""
    live: dict[tuple[bytes, int, str], dict[str, Any]] = {}
    for name in (metadata["baseManifestList"], metadata["deltaManifestList"]):
        for entry in manifest_entries(table_root, name):
            key = (entry["_PARTITION"], entry["_BUCKET"], entry["_FILE"]["_FILE_NAME"])
            if entry["_KIND"] == 0:
                assert key not in live, f"file {key} added twice"
                live[key] = entry
            else:
                assert key in live, f"DELETE of {key} matches no live ADD"
                del live[key]
    return live


def backdate_tag(table_root: str | Path, tag: str, seconds: int) -> None:
    """Move a tag's ``tagCreateTime`` (local wall-clock fields, as pypaimon writes them) ``seconds`` into the past:
    a tag whose time-retained has passed, without sleeping."""
    path = Path(table_root) / "tag" / f"tag-{tag}"
    document = read_json(path)
    assert "tagCreateTime" in document, f"tag {tag} has no create time"
    created = dt.datetime.now() - dt.timedelta(seconds=seconds)
    document["tagCreateTime"] = [*created.timetuple()[:6], created.microsecond * 1000]
    path.write_text(json.dumps(document), encoding="utf-8")


def metadata_roots(table_root: str | Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every snapshot and tag of the main table and of every branch: label ('snapshot 3', 'tag t', 'branch b
    snapshot 2', 'branch b tag t') -> (path relative to the table root, JSON). Read independently of tablefmt."""
    base = Path(table_root)
    homes = [("", base)] + [
        (f"branch {d.name[len('branch-') :]} ", d) for d in sorted((base / "branch").glob("branch-*")) if d.is_dir()
    ]
    roots = {}
    for prefix, home in homes:
        for kind, directory, file_prefix in (("snapshot", "snapshot", "snapshot-"), ("tag", "tag", "tag-")):
            for path in sorted((home / directory).glob(f"{file_prefix}*")):
                key = path.name[len(file_prefix) :]
                roots[f"{prefix}{kind} {key}"] = (path.relative_to(base).as_posix(), read_json(path))
    return roots


def referenced_files(table_root: str | Path, metadata: Mapping[str, Any], *, named: bool = False) -> set[str]:
    """Every file a snapshot or tag JSON needs (manifest lists, manifests, live data files), relative to the root,
    found independently (fastavro; data files located by their unique names wherever they are under the root).

    ``named``: data files named by ANY entry (ADD or DELETE) of its manifests that are still on disk instead of the
    live ones: what orphan cleanup must keep (Paimon's rule, which tablefmt follows)."""
    base = Path(table_root)
    names = {p.name: p.relative_to(base).as_posix() for p in base.rglob("*.parquet")}
    needed = set()
    for key in ("baseManifestList", "deltaManifestList"):
        needed.add(f"manifest/{metadata[key]}")
        for meta in read_avro(base / "manifest" / metadata[key]):
            needed.add(f"manifest/{meta['_FILE_NAME']}")
    if named:
        for key in ("baseManifestList", "deltaManifestList"):
            found = (e["_FILE"]["_FILE_NAME"] for e in manifest_entries(base, metadata[key]))
            needed |= {names[n] for n in found if n in names}
        return needed
    for _, _, file_name in live_entries_of(base, metadata):
        assert file_name in names, f"data file {file_name} is missing"
        needed.add(names[file_name])
    return needed


def unreferenced_without(
    table_root: str | Path,
    roots: Mapping[str, tuple[str, Mapping[str, Any]]],
    gone: Iterable[str],
    *,
    named: bool = False,
) -> set[str]:
    """Files the ``gone`` roots reference and no other root does (see referenced_files for ``named``): what
    removing them frees for expiration (live references) or for orphan cleanup (``named``)."""
    gone = set(gone)
    assert gone <= roots.keys(), f"unknown roots {sorted(gone - roots.keys())}"
    dead = set().union(*(referenced_files(table_root, roots[label][1], named=named) for label in gone))
    alive = set().union(*(referenced_files(table_root, roots[label][1], named=named) for label in roots.keys() - gone))
    return dead - alive


# --- tablefmt on the command line ----------------------------------------------------------------------------------


def tablefmt_cli(*args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    """Run the installed ``tablefmt`` entry point (the console script next to this interpreter)."""
    exe = Path(sys.executable).with_name("tablefmt")
    assert exe.is_file(), f"no tablefmt entry point next to {sys.executable}: install tablefmt in this environment"
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == expect, (
        f"tablefmt {' '.join(args)}: exit {proc.returncode}, expected {expect}\n{proc.stdout}\n{proc.stderr}"
    )
    return proc


def tablefmt_json(*args: str, expect: int = 0) -> Any:
    """``tablefmt ARGS --json``, parsed."""
    return json.loads(tablefmt_cli(*args, "--json", expect=expect).stdout)


# --- sample data ---------------------------------------------------------------------------------------------------

D1 = dt.date(2024, 1, 1)  # 19723
D2 = dt.date(2024, 3, 15)  # 19797
D3 = dt.date(1969, 12, 31)  # -1: a negative day number

# (d DATE, i INT, s STRING): a null and an empty-string partition (both named __DEFAULT_PARTITION__ on disk), a
# negative INT, a long value, characters that must be escaped in the directory name, and non-ASCII text.
PARTITIONS: list[tuple[dt.date, int, str | None]] = [
    (D1, 1, "a"),
    (D1, 1, None),
    (D1, 1, ""),
    (D2, -5, "long-partition-value"),
    (D2, 7, "a b/c:d=e%f#?"),
    (D3, 0, "éé"),
]

WIDE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("c_bool", pa.bool_()),
        pa.field("c_tinyint", pa.int8()),
        pa.field("c_smallint", pa.int16()),
        pa.field("c_int", pa.int32(), nullable=False),
        pa.field("c_float", pa.float32()),
        pa.field("c_double", pa.float64()),
        pa.field("c_dec", pa.decimal128(10, 2)),
        pa.field("c_dec38", pa.decimal128(38, 10)),
        pa.field("c_string", pa.string()),
        pa.field("c_bytes", pa.binary()),
        pa.field("c_date", pa.date32()),
        pa.field("c_ts0", pa.timestamp("s")),
        pa.field("c_ts3", pa.timestamp("ms")),
        pa.field("c_ts6", pa.timestamp("us")),
        pa.field("c_ts9", pa.timestamp("ns")),
        pa.field("c_ltz6", pa.timestamp("us", tz="UTC")),
        pa.field("d", pa.date32()),
        pa.field("i", pa.int32()),
        pa.field("s", pa.string()),
    ]
)


def wide_row(row_id: int, partition: tuple[dt.date, int, str | None]) -> dict[str, Any]:
    """A deterministic row of WIDE_SCHEMA; every third row has nulls in the nullable value columns."""
    nulls = row_id % 3 == 0
    base = dt.datetime(2024, 1, 2, 3, 4, 5) + dt.timedelta(seconds=row_id)
    d, i, s = partition
    row: dict[str, Any] = {
        "id": row_id,
        "c_bool": None if nulls else row_id % 2 == 0,
        "c_tinyint": None if nulls else (row_id % 200) - 100,
        "c_smallint": -300 - row_id,
        "c_int": -100000 + row_id,
        "c_float": None if nulls else 1.5 + row_id,
        "c_double": -2.25 - row_id,
        "c_dec": decimal.Decimal("12345.67") + row_id,
        "c_dec38": None if nulls else decimal.Decimal("-1234567890.0123456789") - row_id,
        "c_string": None if nulls else ("short" if row_id % 2 else f"a-string-longer-than-16-bytes-{row_id}"),
        "c_bytes": None if nulls else (b"\x00\x01\xff" if row_id % 2 else b"0123456789abcdef" + bytes([row_id % 256])),
        "c_date": D1 + dt.timedelta(days=row_id),
        "c_ts0": base,
        "c_ts3": base + dt.timedelta(milliseconds=row_id % 1000),
        "c_ts6": None if nulls else base + dt.timedelta(microseconds=123456 + row_id),
        "c_ts9": base + dt.timedelta(microseconds=654321),  # nanoseconds are added in wide_table
        "c_ltz6": (base + dt.timedelta(microseconds=row_id)).replace(tzinfo=dt.timezone.utc),
        "d": d,
        "i": i,
        "s": s,
    }
    return row


def wide_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Arrow table of WIDE_SCHEMA rows; c_ts9 gets sub-microsecond digits (id % 1000 ns)."""
    arrays = []
    for field in WIDE_SCHEMA:
        if field.name == "c_ts9":
            values = [None if r["c_ts9"] is None else _ns(r["c_ts9"]) + r["id"] % 1000 for r in rows]
            arrays.append(pa.array(values, pa.int64()).cast(field.type))
        else:
            arrays.append(pa.array([r[field.name] for r in rows], field.type))
    return pa.Table.from_arrays(arrays, schema=WIDE_SCHEMA)


def _ns(value: dt.datetime) -> int:
    delta = value - dt.datetime(1970, 1, 1)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


# --- a reference model of an append table's history ----------------------------------------------------------------


class Model:
    """The rows every snapshot and tag must hold, maintained independently of both implementations."""

    def __init__(self, partition_keys: Sequence[str], build: Callable[[list[dict[str, Any]]], pa.Table]) -> None:
        """``build`` turns model rows into the Arrow table a writer is given (and a reader must return)."""
        self.partition_keys = tuple(partition_keys)
        self.build = build
        self.live: list[dict[str, Any]] = []
        self.by_snapshot: dict[int, list[dict[str, Any]]] = {}
        self.by_tag: dict[str, list[dict[str, Any]]] = {}
        self.next_id = 1

    def _matches(self, row: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
        return all(row[k] == v and (row[k] is None) == (v is None) for k, v in spec.items())

    def _key(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.partition_keys)

    def new_rows(self, partitions: Sequence[Any], make: Callable[[int, Any], dict[str, Any]]) -> list[dict[str, Any]]:
        rows = []
        for partition in partitions:
            rows.append(make(self.next_id, partition))
            self.next_id += 1
        return rows

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.live = self.live + [dict(r) for r in rows]

    def overwrite(self, rows: Sequence[Mapping[str, Any]], spec: Mapping[str, Any]) -> None:
        """Static overwrite; ``{}`` = the whole table."""
        self.live = [r for r in self.live if not self._matches(r, spec)] + [dict(r) for r in rows]

    def overwrite_dynamic(self, rows: Sequence[Mapping[str, Any]]) -> None:
        touched = {self._key(r) for r in rows}
        self.live = [r for r in self.live if self._key(r) not in touched] + [dict(r) for r in rows]

    def drop(self, specs: Sequence[Mapping[str, Any]]) -> None:
        self.live = [r for r in self.live if not any(self._matches(r, s) for s in specs)]

    def commit(self, snapshot_id: int) -> None:
        assert snapshot_id not in self.by_snapshot, f"snapshot {snapshot_id} recorded twice"
        self.by_snapshot[snapshot_id] = list(self.live)

    def tag(self, name: str, snapshot_id: int) -> None:
        self.by_tag[name] = list(self.by_snapshot[snapshot_id])

    def matches(self, row: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
        return self._matches(row, spec)

    def expect(self, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        """Sorted row tuples a reader must return for ``rows``."""
        return rows_of(self.build([dict(r) for r in rows]), columns)

    def at(self, snapshot_id: int, columns: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        return self.expect(self.by_snapshot[snapshot_id], columns)

    def at_tag(self, tag: str, columns: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        return self.expect(self.by_tag[tag], columns)


def assert_rows(
    actual: pa.Table, expected: Sequence[tuple[Any, ...]], label: str, columns: Sequence[str] | None = None
) -> None:
    """``actual``'s rows (sorted, compared whole) are exactly ``expected``."""
    got = rows_of(actual, columns)
    assert got == list(expected), f"{label}: {diff_rows(got, expected)}"


def check_history(pp: Paimon, name: str, model: Model, columns: Sequence[str] | None = None) -> Any:
    """tablefmt == pypaimon == model at every snapshot, every tag and the latest; snapshot ids and tag names agree.

    Returns the tablefmt Table.
    """
    from tableformat import Table

    table = Table.open(pp.path(name))
    assert [s.id for s in table.snapshots()] == sorted(model.by_snapshot)
    assert sorted(t.name for t in table.tags()) == sorted(model.by_tag)
    for snapshot_id in sorted(model.by_snapshot):
        expected = model.at(snapshot_id, columns)
        assert_rows(pp.read(name, snapshot_id=snapshot_id), expected, f"pypaimon, snapshot {snapshot_id}", columns)
        assert_rows(table.to_arrow(snapshot_id=snapshot_id), expected, f"tablefmt, snapshot {snapshot_id}", columns)
    for tag in sorted(model.by_tag):
        expected = model.at_tag(tag, columns)
        assert_rows(pp.read(name, tag=tag), expected, f"pypaimon, tag {tag}", columns)
        assert_rows(table.to_arrow(tag=tag), expected, f"tablefmt, tag {tag}", columns)
    latest = model.at(max(model.by_snapshot), columns)
    assert_rows(pp.read(name), latest, "pypaimon, latest", columns)
    assert_rows(table.to_arrow(), latest, "tablefmt, latest", columns)
    return table
