"""Fast projected reading of manifests and manifest lists (for expiration planning over many files).

A purpose-built decoder, generated per writer schema, that decodes only the fields a caller needs. Anything it
does not handle (other codecs or schema shapes, corrupt or truncated data, failed checks) falls back to the full
fastavro decoder in :mod:`tableformat.codec.avro_codec`, so it returns exactly what that decoder returns, or raises
exactly where it raises (tests/unit/test_codec_projection.py holds it to that).
"""

from __future__ import annotations

import sys
import threading
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import zstandard

from tableformat.codec.avro_codec import read_manifest, read_manifest_list
from tableformat.codec.avro_decoder_compiler import Decoder, Field, compile_decoder, varint
from tableformat.model.manifest import FileKind, ManifestEntry, ManifestFileMeta, SimpleStats

# --- fast projected reading ----------------------------------------------------------------------------------------
# Expiration reads hundreds of manifest lists and up to millions of manifest entries but needs only a few fields of
# each. fastavro parses the writer schema of every file and builds nested dicts for every record (and resolving
# against a smaller reader schema is slower still), so the readers below parse the container themselves, compile
# one decoder per distinct writer schema (generated Python that skips what is not wanted), and build only the
# projected values. They accept only writer schemas whose every field the full decoder reads has the type that
# decoder expects; anything else (an unknown schema shape or codec, corrupt or truncated data, a failed check)
# falls back to the full decoder above and projects its result. So they return exactly what the full decoder
# returns for those fields, and raise exactly when it raises (tests/unit/test_codec_projection.py).


class EntryRef(NamedTuple):
    """A manifest entry reduced to what names its data file and identifies it (see ManifestEntry.identifier)."""

    kind: FileKind
    partition: bytes
    bucket: int
    file_name: str
    file_size: int
    level: int
    extra_files: tuple[str, ...]
    embedded_index: bytes | None
    external_path: str | None

    def identifier(self) -> tuple[object, ...]:
        """The same tuple as ``ManifestEntry.identifier()`` of the full entry."""
        return (
            self.partition,
            self.bucket,
            self.level,
            self.file_name,
            self.extra_files,
            self.embedded_index,
            self.external_path,
        )


def entry_ref(entry: ManifestEntry) -> EntryRef:
    """The projection of a fully decoded entry."""
    f = entry.file
    return EntryRef(
        entry.kind,
        entry.partition,
        entry.bucket,
        f.file_name,
        f.file_size,
        f.level,
        f.extra_files,
        f.embedded_index,
        f.external_path,
    )


class ScanRef(NamedTuple):
    """A manifest entry reduced to what a read of its file needs: its identity (see ManifestEntry.identifier), where
    the file is, its size, rows and schema. Shaped like a ManifestEntry for those fields: ``ref.file`` is the ref
    itself, so ``ref.file.file_name`` and ``ref.file.schema_id`` read as they do on a full entry."""

    kind: FileKind
    partition: bytes
    bucket: int
    file_name: str
    file_size: int
    row_count: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...]
    embedded_index: bytes | None
    external_path: str | None

    @property
    def file(self) -> ScanRef:
        return self

    def identifier(self) -> tuple[object, ...]:
        """The same tuple as ``ManifestEntry.identifier()`` of the full entry."""
        return (self[1], self[2], self[7], self[3], self[8], self[9], self[10])


ScanEntry = ManifestEntry | ScanRef
"""A live file as a read takes it: a full manifest entry (with statistics, for pruning) or a ScanRef."""


def scan_ref(entry: ManifestEntry) -> ScanRef:
    """The projection of a fully decoded entry."""
    f = entry.file
    return ScanRef(
        entry.kind,
        entry.partition,
        entry.bucket,
        f.file_name,
        f.file_size,
        f.row_count,
        f.schema_id,
        f.level,
        f.extra_files,
        f.embedded_index,
        f.external_path,
    )


_STATS: list[Field] = [
    ("_MIN_VALUES", "bytes", None, True),
    ("_MAX_VALUES", "bytes", None, True),
    ("_NULL_COUNTS", "opt_array", None, False),
]


def _entry_projection(slots: dict[str, int]) -> list[Field]:
    """Every field the full decoder reads, each checked as it checks it; those named in ``slots`` are kept there."""
    file_fields: list[tuple[str, Any, bool]] = [
        ("_FILE_NAME", "string", True),
        ("_FILE_SIZE", "int", True),
        ("_ROW_COUNT", "int", True),
        ("_MIN_KEY", "bytes", True),
        ("_MAX_KEY", "bytes", True),
        ("_KEY_STATS", _STATS, True),
        ("_VALUE_STATS", _STATS, True),
        ("_MIN_SEQUENCE_NUMBER", "int", True),
        ("_MAX_SEQUENCE_NUMBER", "int", True),
        ("_SCHEMA_ID", "int", True),
        ("_LEVEL", "int", True),
        ("_EXTRA_FILES", "strings", False),
        ("_CREATION_TIME", "opt_time", False),
        ("_DELETE_ROW_COUNT", "opt_any", False),
        ("_EMBEDDED_FILE_INDEX", "opt_bytes", False),
        ("_FILE_SOURCE", "opt_any", False),
        ("_VALUE_STATS_COLS", "opt_array", False),
        ("_EXTERNAL_PATH", "opt_string", False),
        ("_FIRST_ROW_ID", "opt_any", False),
        ("_WRITE_COLS", "opt_array", False),
    ]
    return [
        ("_KIND", "kind", slots.get("_KIND"), True),
        ("_PARTITION", "bytes", slots.get("_PARTITION"), True),
        ("_BUCKET", "int", slots.get("_BUCKET"), True),
        ("_TOTAL_BUCKETS", "int", None, False),
        ("_FILE", [(name, kind, slots.get(name), required) for name, kind, required in file_fields], None, True),
    ]


_ENTRY_PROJECTION = _entry_projection(
    {name: slot for slot, name in enumerate(
        ("_KIND", "_PARTITION", "_BUCKET", "_FILE_NAME", "_FILE_SIZE", "_LEVEL", "_EXTRA_FILES",
         "_EMBEDDED_FILE_INDEX", "_EXTERNAL_PATH")
    )}
)  # fmt: skip
_SCAN_PROJECTION = _entry_projection(
    {name: slot for slot, name in enumerate(
        ("_KIND", "_PARTITION", "_BUCKET", "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_SCHEMA_ID", "_LEVEL",
         "_EXTRA_FILES", "_EMBEDDED_FILE_INDEX", "_EXTERNAL_PATH")
    )}
)  # fmt: skip
_ENTRY_DEFAULTS: dict[int, Any] = {6: (), 7: None, 8: None}

_LIST_PROJECTION: list[Field] = [
    ("_FILE_NAME", "string", 0, True),
    ("_FILE_SIZE", "int", 1, True),
    ("_NUM_ADDED_FILES", "int", 2, True),
    ("_NUM_DELETED_FILES", "int", 3, True),
    (
        "_PARTITION_STATS",
        [("_MIN_VALUES", "bytes", 4, True), ("_MAX_VALUES", "bytes", 5, True), ("_NULL_COUNTS", "opt_array", 6, False)],
        None,
        True,
    ),
    ("_SCHEMA_ID", "int", 7, True),
    ("_MIN_BUCKET", "opt_int", 8, False),
    ("_MAX_BUCKET", "opt_int", 9, False),
    ("_MIN_LEVEL", "opt_int", 10, False),
    ("_MAX_LEVEL", "opt_int", 11, False),
    ("_MIN_ROW_ID", "opt_int", 12, False),
    ("_MAX_ROW_ID", "opt_int", 13, False),
]
_LIST_DEFAULTS: dict[int, Any] = {6: None, 8: None, 9: None, 10: None, 11: None, 12: None, 13: None}


_DECODERS: dict[tuple[bytes, str], Decoder | None] = {}
_PROJECTIONS: dict[str, tuple[list[Field], dict[int, Any], int, Any]] = {}


def _compile(schema_text: bytes, projection: str) -> Decoder | None:
    """The decoder of one writer schema for a projection (cached); None if the schema is not handled."""
    key = (schema_text, projection)
    if key not in _DECODERS:
        fields, defaults, n_slots, make = _PROJECTIONS[projection]
        _DECODERS[key] = compile_decoder(schema_text, fields, defaults, n_slots, make, projection)
    return _DECODERS[key]


def _entry_ref_from_tuple(values: tuple[Any, ...]) -> EntryRef:
    return tuple.__new__(EntryRef, values)


def _scan_ref_from_tuple(values: tuple[Any, ...]) -> ScanRef:
    return tuple.__new__(ScanRef, values)


_PROJECTIONS["entry"] = (_ENTRY_PROJECTION, _ENTRY_DEFAULTS, 9, _entry_ref_from_tuple)
_PROJECTIONS["scan"] = (_SCAN_PROJECTION, {8: (), 9: None, 10: None}, 11, _scan_ref_from_tuple)
_PROJECTIONS["list"] = (_LIST_PROJECTION, _LIST_DEFAULTS, 14, tuple)


def _inflate(data: bytes) -> bytes:
    return zlib.decompressobj(-15).decompress(data)


_BLOCK_CODECS: dict[bytes, Callable[[bytes], bytes]] = {b"null": bytes, b"deflate": _inflate}
_LOCAL = threading.local()


def _unzstd(data: bytes) -> bytes:
    """``zstd.decompress(data)`` as fastavro calls it, faster for the usual block: one frame that states its size
    (python-zstandard with a reused per-thread context). Anything else goes to fastavro's own function."""
    try:
        context = _LOCAL.zstd
    except AttributeError:
        context = _LOCAL.zstd = zstandard.ZstdDecompressor()
    try:
        # The header's content size is allocated up front: never trust a corrupt one with a huge buffer.
        if 0 <= zstandard.frame_content_size(data) <= max(1 << 20, 256 * len(data)):
            result: bytes = context.decompress(data, allow_extra_data=False)
            return result
    except Exception:  # no content size, several frames, corrupt, ...: the reference decides
        pass
    return _zstd.decompress(data)


try:  # the zstd library fastavro uses
    if sys.version_info >= (3, 14):
        from compression import zstd as _zstd
    else:
        from backports import zstd as _zstd
    _BLOCK_CODECS[b"zstandard"] = _unzstd
except ImportError:  # pragma: no cover - then zstandard files go through fastavro (which needs it too)
    pass

_MAGIC = b"Obj\x01"
_HEADERS: tuple[tuple[bytes, bytes, bytes], ...] = ()
"""Recently parsed file metadata (the bytes between magic and sync marker) with its schema and codec."""


def container_blocks(data: bytes, wanted: Callable[[bytes], bool]) -> tuple[bytes, list[tuple[int, bytes]]] | None:
    """The writer schema text of an Avro container file and its (record count, decompressed block) pairs; None when
    the full decoder must decide (an unknown codec, or ``wanted(schema_text)`` false: then no block is decompressed).
    Raises on malformed data (callers treat that as None)."""
    if data[:4] != _MAGIC:
        return None
    global _HEADERS
    end = len(data)
    for header in _HEADERS:  # the same metadata bytes parse to the same metadata
        if data.startswith(header[0], 4):
            pos = 4 + len(header[0])
            schema_text, codec = header[1], header[2]
            break
    else:
        pos = 4
        meta: dict[str, bytes] = {}
        while True:
            count, pos = varint(data, pos)
            if count == 0:
                break
            if count < 0:
                count = -count
                _, pos = varint(data, pos)
            for _ in range(count):
                size, pos = varint(data, pos)
                if size < 0 or pos + size > end:
                    return None
                key = data[pos : pos + size].decode()
                pos += size
                size, pos = varint(data, pos)
                if size < 0 or pos + size > end:
                    return None
                meta[key] = data[pos : pos + size]
                meta[key].decode()  # fastavro decodes every metadata value
                pos += size
        if "avro.schema" not in meta:
            return None
        schema_text, codec = meta["avro.schema"], meta.get("avro.codec", b"null")
        _HEADERS = ((data[4:pos], schema_text, codec), *_HEADERS[:7])
    sync = data[pos : pos + 16]
    pos += 16
    if pos > end:
        return None
    decompress = _BLOCK_CODECS.get(codec)
    if decompress is None or not wanted(schema_text):
        return None
    blocks: list[tuple[int, bytes]] = []
    while pos < end:
        count, pos = varint(data, pos)
        size, pos = varint(data, pos)
        if count < 0 or size < 0 or pos + size + 16 > end:
            return None
        blocks.append((count, decompress(data[pos : pos + size])))
        pos += size
        if data[pos : pos + 16] != sync:
            return None
        pos += 16
    return schema_text, blocks


def _blocks(data: bytes, projection: str) -> tuple[Decoder, list[tuple[int, bytes]]] | None:
    """The compiled decoder for the file's writer schema and its (record count, decompressed block) pairs; None
    when the full decoder must decide. Raises on malformed data (callers treat that as None)."""
    found = container_blocks(data, lambda schema_text: _compile(schema_text, projection) is not None)
    if found is None:
        return None
    decoder = _compile(found[0], projection)  # cached: ``wanted`` compiled it
    return None if decoder is None else (decoder, found[1])


def _fast_read(data: bytes, projection: str) -> list[Any] | None:
    """Projected records of an Avro container file, or None when the full decoder must decide."""
    try:
        found = _blocks(data, projection)
        if found is None:
            return None
        decoder, blocks = found
        records: list[Any] = []
        for count, block in blocks:
            if decoder(block, count, records.append, 0) != len(block):
                return None
        return records
    except Exception:  # corrupt, truncated or unexpected data: the full decoder decides (and names the file)
        return None


def read_manifest_refs(data: bytes, path: str) -> list[EntryRef]:
    """``[entry_ref(e) for e in read_manifest(data, path)]``, without building the full entries."""
    refs = _fast_read(data, "entry")
    if refs is None:
        return [entry_ref(e) for e in read_manifest(data, path)]
    return refs


def read_manifest_scan_refs(data: bytes, path: str) -> list[ScanRef]:
    """``[scan_ref(e) for e in read_manifest(data, path)]``, without building the full entries."""
    refs = _fast_read(data, "scan")
    if refs is None:
        return [scan_ref(e) for e in read_manifest(data, path)]
    return refs


def _manifest_meta(r: tuple[Any, ...]) -> ManifestFileMeta:
    return ManifestFileMeta(
        file_name=r[0],
        file_size=r[1],
        num_added_files=r[2],
        num_deleted_files=r[3],
        partition_stats=SimpleStats(min_values=r[4], max_values=r[5], null_counts=r[6]),
        schema_id=r[7],
        min_bucket=r[8],
        max_bucket=r[9],
        min_level=r[10],
        max_level=r[11],
        min_row_id=r[12],
        max_row_id=r[13],
    )


def read_manifest_list_fast(data: bytes, path: str) -> list[ManifestFileMeta]:
    """Exactly ``read_manifest_list(data, path)``, faster (no per-file schema parsing, no record dicts)."""
    rows = _fast_read(data, "list")
    if rows is None:
        return read_manifest_list(data, path)
    return [_manifest_meta(r) for r in rows]


class ManifestListReader:
    """``read_manifest_list_fast`` for many lists of one table, sharing work between them (thread-safe).

    A base manifest list usually extends the previous snapshot's one (Paimon appends the previous delta's
    manifests until it merges them), so the decompressed block of one list often starts with the whole block of a
    list read shortly before. Avro decoding is a left-to-right parse, so the rows of that prefix are exactly the
    rows decoded from it then: they are reused (the same immutable ManifestFileMeta objects) and only the rest is
    decoded. The last ``keep`` blocks are remembered.
    """

    def __init__(self, keep: int = 8) -> None:
        self._keep = keep
        self._recent: list[tuple[Decoder, bytes, int, list[ManifestFileMeta]]] = []
        self._lock = threading.Lock()

    def read(self, data: bytes, path: str) -> list[ManifestFileMeta]:
        result = self._fast(data)
        return read_manifest_list(data, path) if result is None else result

    def _fast(self, data: bytes) -> list[ManifestFileMeta] | None:
        try:
            found = _blocks(data, "list")
            if found is None:
                return None
            decoder, blocks = found
            metas: list[ManifestFileMeta] = []
            for count, block in blocks:
                rows = self._decode_block(decoder, count, block)
                if rows is None:
                    return None
                metas.extend(rows)
            return metas
        except Exception:  # corrupt, truncated or unexpected data: the full decoder decides (and names the file)
            return None

    def _decode_block(self, decoder: Decoder, count: int, block: bytes) -> list[ManifestFileMeta] | None:
        start, reused = 0, []
        with self._lock:
            for known_decoder, known, known_count, known_rows in self._recent:
                if known_decoder is decoder and len(known) > start and known_count <= count and block.startswith(known):
                    start, reused = len(known), known_rows
        rows: list[tuple[Any, ...]] = []
        if decoder(block, count - len(reused), rows.append, start) != len(block):
            return None
        result = [*reused, *(_manifest_meta(r) for r in rows)]
        with self._lock:
            self._recent.append((decoder, block, count, result))
            del self._recent[: -self._keep]
        return result
