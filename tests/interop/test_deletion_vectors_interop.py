"""Deletion vectors pypaimon 2.1.0 writes, read by tablefmt's store and codecs.

pypaimon 2.1.0 writes deletion vectors for data-evolution tables (``data-evolution.enabled``,
``row-tracking.enabled``, ``deletion-vectors.enabled``; ``BatchTableUpdate.delete_by_row_id``): one 32-bit
deletion-vector file per partition and bucket in ``index/``, and a new index manifest. tablefmt must decode the same
index manifest entries and deleted row positions pypaimon reads, and the rows left after applying them must be the
rows pypaimon returns.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from support.tables import rows_of

from interop.helpers import Paimon
from tableformat.codec import index_manifest_codec
from tableformat.data_paths import DataPaths
from tableformat.model.index import DELETION_VECTORS_INDEX
from tableformat.model.manifest import FileKind
from tableformat.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.int32())])
OPTIONS = {"data-evolution.enabled": "true", "row-tracking.enabled": "true", "deletion-vectors.enabled": "true"}


def dv_table(pp: Paimon, deletes: list[list[int]]) -> tuple[Table, Path]:
    """Two appends of six rows over partitions 0 and 1, then one pypaimon delete by row id per list."""
    pp.create_table("t", SCHEMA, partition_keys=["part"], options=OPTIONS)
    for start in (0, 10):
        pp.append("t", pa.table({"id": list(range(start, start + 6)), "part": [0, 1] * 3}, schema=SCHEMA))
    for row_ids in deletes:
        builder = pp.table("t").new_batch_write_builder()
        commit = builder.new_commit()
        try:
            commit.commit(builder.new_update().delete_by_row_id(row_ids))
        finally:
            commit.close()
    return Table.open(pp.path("t")), Path(pp.path("t"))


def pypaimon_rows(pp: Paimon) -> list[tuple[object, ...]]:
    table = pp.table("t")
    builder = table.new_read_builder()
    return rows_of(builder.new_read().to_arrow(builder.new_scan().plan().splits()))


def pypaimon_vectors(pp: Paimon, index_manifest: str) -> dict[str, list[int]]:
    """Data file name -> deleted positions, as pypaimon reads them (its IndexManifestFile, DeletionVector.read)."""
    from pypaimon.deletionvectors.deletion_vector import DeletionVector
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.table.source.deletion_file import DeletionFile

    table = pp.table("t")
    vectors = {}
    for entry in IndexManifestFile(table).read(index_manifest):
        path = table.path_factory().bucket_index_path(tuple(entry.partition.values), entry.bucket, entry.index_file)
        for name, meta in (entry.index_file.dv_ranges or {}).items():
            deletion_file = DeletionFile(dv_index_path=path, offset=meta.offset, length=meta.length, cardinality=None)
            vectors[name] = sorted(DeletionVector.read(table.file_io, deletion_file).bit_map())
    return vectors


def test_tablefmt_decodes_the_deletion_vectors_pypaimon_writes(pp: Paimon) -> None:
    table, root = dv_table(pp, [[0, 2, 7], [11, 4]])
    store = table.context.store
    snapshot = store.latest_snapshot()
    assert snapshot is not None and snapshot.index_manifest is not None
    entries = store.read_index_manifest(snapshot.index_manifest)
    assert entries == store.read_index_manifest_entries(snapshot.index_manifest)  # ADD entries only
    assert {e.kind for e in entries} == {FileKind.ADD}
    assert {e.index_file.index_type for e in entries} == {DELETION_VECTORS_INDEX}
    on_disk = {p.name for p in (root / "index").iterdir()}
    latest_files = {e.index_file.file_name for e in entries}
    first_files = {e.index_file.file_name for e in store.read_index_manifest(_first_index_manifest(table))}
    assert latest_files <= on_disk and on_disk == latest_files | first_files and latest_files != first_files

    ours = {
        name: positions.tolist()
        for e in entries
        for name, positions in store.read_deletion_vectors(e.index_file).items()
    }
    assert ours == pypaimon_vectors(pp, snapshot.index_manifest)
    assert sum(len(p) for p in ours.values()) == 5
    for e in entries:
        assert e.index_file.file_size == (root / "index" / e.index_file.file_name).stat().st_size
        for dv_range in e.index_file.dv_ranges or ():
            one = store.read_deletion_vector(e.index_file, dv_range.data_file_name)
            assert one is not None and one.tolist() == ours[dv_range.data_file_name]
            assert dv_range.cardinality == len(ours[dv_range.data_file_name])

    # the rows left after applying our vectors are the rows pypaimon reads
    live = {e.file.file_name: e for e in _live_entries(table)}
    kept, paths = [], DataPaths(table.context.schema)
    for name, entry in live.items():
        bucket_dir = paths.bucket_dir(entry.partition, entry.bucket)
        data = pq.ParquetFile(root / bucket_dir / name).read()
        deleted = set(ours.get(name, []))
        kept.append(data.take([i for i in range(data.num_rows) if i not in deleted]).select(["id", "part"]))
    assert rows_of(pa.concat_tables(kept)) == pypaimon_rows(pp)


def test_the_index_manifest_pypaimon_writes_round_trips_byte_for_byte(pp: Paimon) -> None:
    table, root = dv_table(pp, [[1, 3]])
    name = table.context.store.latest_snapshot().index_manifest  # type: ignore[union-attr]
    data = (root / "manifest" / str(name)).read_bytes()
    reader = fastavro.reader(io.BytesIO(data))
    assert json.loads(reader.metadata["avro.schema"]) == index_manifest_codec.INDEX_MANIFEST_ENTRY_SCHEMA
    assert reader.codec == "zstandard"
    entries = index_manifest_codec.read_index_manifest(data, str(name))
    sync = data[-16:]  # a single-block file ends with its sync marker
    again = index_manifest_codec.write_index_manifest(entries, sync_marker=sync)
    assert again == data


def _first_index_manifest(table: Table) -> str:
    """The index manifest of the first snapshot that has one (the earlier delete's, before the later one)."""
    store = table.context.store
    return next(s.index_manifest for i in store.snapshot_ids() if (s := store.read_snapshot(i)).index_manifest)


def _live_entries(table: Table) -> list:  # type: ignore[type-arg]
    from tableformat.live_set import merge_entries

    store = table.context.store
    snapshot = store.latest_snapshot()
    assert snapshot is not None
    return list(merge_entries(store.read_manifest(m.file_name) for m in store.manifests_of(snapshot)).values())
