"""Primary-key tables pypaimon 2.1.0 keeps upserting into, for tests in which tablefmt maintains them meanwhile.

* ``PK_SCHEMA`` / ``pk_options``: ``primary_keys=[id, dt]``, partitioned by ``dt``, ``bucket=3``,
  ``changelog-producer=input`` (every commit also writes changelog files) and ``rowkind.field=op``: a row whose
  ``op`` is ``-D`` deletes its key (pypaimon 2.1.0 writes deletes this way), ``+I`` upserts it.
* ``UpsertModel``: the reference (the rows every round leaves); ``next_round(seed, round)`` makes the deterministic
  batch of one round on its state (upserts and deletes over a few keys of every partition in ``PARTITIONS``).
* ``Upserter``: pypaimon in a subprocess (``python -m interop.pk_upserts``) committing rounds ``first..`` (the
  rounds before ``first`` already committed), one snapshot each, recording ``{"round": r, "snapshot": id}`` per
  commit as a JSON line; the test process runs tablefmt's maintenance meanwhile.
* ``assert_exact_drop``: a partition drop wrote what Paimon's dropPartitions writes.
* ``missing_references(root)``: every file a snapshot or tag names (manifest lists (changelog too), the index
  manifest, manifests, live data files and changelog files) that is not on disk, found independently of tablefmt
  (fastavro and json).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from interop.helpers import (
    Paimon,
    delta_entries,
    live_file_entries,
    manifest_entries,
    metadata_roots,
    read_avro,
    snapshot_json,
)

PK_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("op", pa.string()),
    ]
)
PARTITIONS = ("2020-01-01", "2020-01-02", "2099-01-01")
"""Two partitions a 30-day partition expiration drops, one it keeps."""
KEYS = 24
"""Keys per partition the rounds draw from."""
EXPIRING = {
    "partition.expiration-time": "30 d",
    "partition.timestamp-formatter": "yyyy-MM-dd",
}

Row = tuple[int, str, str | None, str]


def pk_options(**more: str) -> dict[str, str]:
    return {"bucket": "3", "changelog-producer": "input", "rowkind.field": "op", **EXPIRING, **more}


def create_pk_table(pp: Paimon, name: str, options: Mapping[str, str] | None = None) -> str:
    """Create the table with pypaimon; its path."""
    from pypaimon import Schema

    schema = Schema.from_pyarrow_schema(
        PK_SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options=dict(options or pk_options())
    )
    pp.catalog.create_table(f"db.{name}", schema, False)
    return pp.path(name)


def upsert_rows(
    seed: int, round_number: int, live: Collection[tuple[int, str]], partitions: Sequence[str] = PARTITIONS
) -> list[Row]:
    """One round: 6 distinct keys of each partition; about one in three of those ``live`` (key, partition) pairs
    is deleted, the others upserted. Only live keys are deleted: pypaimon 2.1.0 returns a delete of an absent key as
    a row when it is alone in its bucket (it reads a single-file bucket without merging)."""
    rng = random.Random(f"{seed}-{round_number}")
    rows: list[Row] = []
    for dt in partitions:
        for key in sorted(rng.sample(range(KEYS), 6)):
            if rng.random() < 0.35 and (key, dt) in live:
                rows.append((key, dt, None, "-D"))
            else:
                rows.append((key, dt, f"r{round_number}-{key}", "+I"))
    return rows


def arrow_rows(rows: Sequence[Row]) -> pa.Table:
    columns = list(zip(*rows)) if rows else [[], [], [], []]
    return pa.Table.from_arrays([pa.array(list(c), f.type) for c, f in zip(columns, PK_SCHEMA)], schema=PK_SCHEMA)


def upsert(pp: Paimon, name: str, rows: Sequence[Row]) -> None:
    """One pypaimon commit of ``rows`` (one snapshot)."""
    pp.append(name, arrow_rows(rows))


class UpsertModel:
    """The rows of the table after each round: the newest version of every key not deleted since."""

    def __init__(self) -> None:
        self.live: dict[tuple[int, str], Row] = {}
        self.by_round: dict[int, list[Row]] = {}

    def apply(self, round_number: int, rows: Sequence[Row]) -> None:
        for row in rows:
            key = (row[0], row[1])
            if row[3] == "-D":
                self.live.pop(key, None)
            else:
                self.live[key] = row
        self.by_round[round_number] = self.rows()

    def next_round(self, seed: int, round_number: int) -> list[Row]:
        """The rows of round ``round_number`` on the current state, applied to the model."""
        rows = upsert_rows(seed, round_number, self.live.keys())
        self.apply(round_number, rows)
        return rows

    def drop(self, dt: str) -> None:
        self.live = {k: r for k, r in self.live.items() if k[1] != dt}

    def rows(self) -> list[Row]:
        return sorted(self.live.values(), key=lambda r: (r[0], r[1]))


def model_of(seed: int, rounds: Sequence[int]) -> UpsertModel:
    """The model after ``rounds`` from an empty table."""
    model = UpsertModel()
    for number in rounds:
        model.next_round(seed, number)
    return model


# --- pypaimon in a subprocess ---------------------------------------------------------------------------------------
class Upserter:
    """``rounds`` pypaimon commits into ``name`` in a child process (rounds ``first .. first + rounds - 1``)."""

    def __init__(self, warehouse: Path, name: str, seed: int, first: int, rounds: int, log: Path) -> None:
        self.log = log
        tests = Path(__file__).resolve().parents[1]
        command = [sys.executable, "-m", "interop.pk_upserts", str(warehouse), name, str(seed), str(first), str(rounds)]
        self.process = subprocess.Popen(
            [*command, str(log)],
            cwd=str(tests),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def running(self) -> bool:
        return self.process.poll() is None

    def finish(self, timeout_s: float = 300) -> dict[int, int]:
        """Wait for the child; {round: snapshot id} of its commits (fails with its stderr if it failed)."""
        try:
            _, err = self.process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise AssertionError(f"the pypaimon upserter still ran after {timeout_s} s") from None
        assert self.process.returncode == 0, f"the pypaimon upserter failed:\n{err[-4000:]}"
        return self.commits()

    def commits(self) -> dict[int, int]:
        if not self.log.exists():
            return {}
        lines = [json.loads(line) for line in self.log.read_text().splitlines() if line]
        return {line["round"]: line["snapshot"] for line in lines}


def _child(argv: Sequence[str]) -> None:
    warehouse, name, seed, first, rounds, log = argv
    pp = Paimon(Path(warehouse))
    model = model_of(int(seed), range(1, int(first)))  # the rounds committed before this process started
    with open(log, "a", encoding="utf-8") as out:
        for number in range(int(first), int(first) + int(rounds)):
            upsert(pp, name, model.next_round(int(seed), number))
            _record(out, number, pp.latest_id(name))


def _record(out: IO[str], number: int, snapshot_id: int | None) -> None:
    out.write(json.dumps({"round": number, "snapshot": snapshot_id}) + "\n")
    out.flush()


# --- what a drop wrote ----------------------------------------------------------------------------------------------
def partition_of(entry: dict[str, Any]) -> str:
    raw: bytes = entry["_PARTITION"]
    return next(p for p in PARTITIONS if p.encode() in raw)


def assert_exact_drop(root: str | Path, drop_id: int, dropped: Sequence[str], levels: Collection[int] = (0,)) -> None:
    """The drop snapshot's delta is DELETE copies of exactly the dropped partitions' live ADD entries (every field:
    bucket, total buckets, level, keys, key statistics, sequence numbers), decoded independently."""
    snapshot = snapshot_json(root, drop_id)
    assert snapshot["commitKind"] == "OVERWRITE" and "changelogManifestList" not in snapshot
    before = live_file_entries(root, drop_id - 1)
    expected = {key: entry for key, entry in before.items() if partition_of(entry) in dropped}
    assert {e["_FILE"]["_LEVEL"] for e in expected.values()} == set(levels)  # pypaimon 2.1.0 writes level 0 only
    delta = delta_entries(root, drop_id)
    assert {e["_KIND"] for e in delta} == {1}
    by_key = {(e["_PARTITION"], e["_BUCKET"], e["_FILE"]["_FILE_NAME"]): e for e in delta}
    assert len(by_key) == len(delta) and by_key.keys() == expected.keys()
    for key, entry in by_key.items():
        assert {**entry, "_KIND": 0} == expected[key], f"the DELETE of {key[2]} is not a copy of its ADD"
    assert snapshot["deltaRecordCount"] == -sum(e["_FILE"]["_ROW_COUNT"] for e in expected.values())


# --- what every snapshot and tag names ------------------------------------------------------------------------------
def named_files(root: Path, metadata: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """(metadata files, data file names) a snapshot or tag JSON needs: its manifest lists (base, delta,
    changelog), index manifest and manifests; its live data files and its changelog files."""
    lists = [metadata["baseManifestList"], metadata["deltaManifestList"]]
    changelog = metadata.get("changelogManifestList")
    meta = {f"manifest/{name}" for name in [*lists, *([changelog] if changelog else [])]}
    if metadata.get("indexManifest"):
        meta.add(f"manifest/{metadata['indexManifest']}")
    for name in [*lists, *([changelog] if changelog else [])]:
        path = root / "manifest" / name
        if path.exists():
            meta |= {f"manifest/{m['_FILE_NAME']}" for m in read_avro(path)}
    if any(not (root / m).exists() for m in meta):
        return meta, set()  # the data files cannot be listed; the missing metadata is reported
    live: dict[tuple[bytes, int, int, str], None] = {}
    for name in lists:
        for entry in manifest_entries(root, name):
            key = (entry["_PARTITION"], entry["_BUCKET"], entry["_FILE"]["_LEVEL"], entry["_FILE"]["_FILE_NAME"])
            if entry["_KIND"] == 0:
                live[key] = None
            else:
                live.pop(key, None)
    data = {key[3] for key in live}
    if changelog:
        data |= {e["_FILE"]["_FILE_NAME"] for e in manifest_entries(root, changelog) if e["_KIND"] == 0}
    return meta, data


def missing_references(root: str | Path) -> list[str]:
    """'<root label>: <file>' for every file a present snapshot or tag names that is not on disk."""
    base = Path(root)
    on_disk = {p.name for p in base.rglob("*") if p.is_file()}
    missing = []
    for label, (_, metadata) in metadata_roots(base).items():
        meta, data = named_files(base, metadata)
        missing += [f"{label}: {m}" for m in sorted(meta) if not (base / m).exists()]
        missing += [f"{label}: {name}" for name in sorted(data) if name not in on_disk]
    return missing


if __name__ == "__main__":
    _child(sys.argv[1:])
