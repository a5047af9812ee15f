"""Manifest files decoded and encoded fast, exactly as :mod:`tableformat.codec.avro_codec` (fastavro) does.

Every manifest tablefmt and pypaimon 2.1.0 write has one writer schema, ``avro_codec.MANIFEST_ENTRY_SCHEMA`` (the
same schema text in the file header). For that schema this module has a decoder, an encoder and a container writer
written for it by hand, so no per-record dicts, schema dispatch or generic union resolution is paid:

* ``read_entries`` = ``avro_codec.read_manifest``; ``read_entry_records`` = the entries reduced to an
  :class:`EntryRecord` (what partition-level maintenance needs, plus the entry's encoded body);
* ``write_entries`` = ``avro_codec.write_manifest``, byte for byte (given the same sync marker); ``write_copies``
  writes entries again under another kind from their encoded bodies, without re-encoding them.

Anything else (another writer schema, codec or shape, an encoding that is valid Avro but not the one fastavro
writes, a value the fast path does not handle, corrupt or truncated data) goes to avro_codec, so results and errors
are always the reference's (tests/codec/test_entry_codec.py holds the module to that).

Decoding (:mod:`tableformat.codec.entry_decoder`) parses an entry field by field, and matches entries laid out
like ones seen before with a regular expression (the ``re`` engine in C) instead.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, repeat
from operator import add, attrgetter
from typing import Any

import fastavro

from tableformat.codec import avro_codec
from tableformat.codec.avro_projection import container_blocks
from tableformat.codec.entry_decoder import EntryRecord, Fallback, Learner, decode_block, long_bytes
from tableformat.model.manifest import FileKind, ManifestEntry, ManifestFileMeta, SimpleStats

__all__ = [
    "EntryRecord",
    "entry_record",
    "read_entries",
    "read_entry_records",
    "write_copies",
    "write_entries",
    "write_manifest_list",
]

_zstd: Any
try:  # the zstd library fastavro uses for the "zstandard" codec
    if sys.version_info >= (3, 14):
        from compression import zstd as _zstd
    else:
        from backports import zstd as _zstd
except ImportError:  # pragma: no cover - fastavro cannot write zstandard either then
    _zstd = None
_LOCAL = threading.local()


def _compress(data: bytes, level: int | None) -> bytes:
    """``zstd.compress(data[, level=level])`` as fastavro calls it (the function makes a ZstdCompressor and ends one
    frame with it), with one reused compressor per thread and level: the same frames, without setting up a
    compressor per block."""
    if _zstd is None:
        raise Fallback("no zstd library")
    compressors = getattr(_LOCAL, "compressors", None)
    if compressors is None:
        compressors = _LOCAL.compressors = {}
    compressor = compressors.get(level)
    if compressor is None:
        compressor = compressors[level] = _zstd.ZstdCompressor() if level is None else _zstd.ZstdCompressor(level)
    try:
        result: bytes = compressor.compress(data, mode=_zstd.ZstdCompressor.FLUSH_FRAME)
    except BaseException:
        del compressors[level]  # its state is unknown now
        raise
    return result

_HEADERS: dict[str, tuple[bytes, bytes]] = {}
"""By record name: (the schema text in the header, the header up to the sync marker), as fastavro writes them."""
_SYNC_SIZE = 16
_SYNC_INTERVAL = 1000 * _SYNC_SIZE
"""fastavro's default: a block is written once its uncompressed records reach this many bytes."""
_KIND_BYTES = {FileKind.ADD: b"\x04\x00", FileKind.DELETE: b"\x04\x02"}
"""The encoded ``_VERSION`` (2) and ``_KIND`` fields that start every entry."""


def _header(schema: dict[str, Any]) -> tuple[bytes, bytes]:
    """(schema text, header) of a file avro_codec writes with ``schema``."""
    found = _HEADERS.get(schema["name"])
    if found is None:
        # Taken from fastavro itself: an empty file is the header and the sync marker.
        empty = io.BytesIO()
        fastavro.writer(empty, schema, [], codec=avro_codec.CODEC, sync_marker=bytes(_SYNC_SIZE))
        text = fastavro.reader(io.BytesIO(empty.getvalue())).metadata["avro.schema"].encode()
        found = _HEADERS[schema["name"]] = (text, empty.getvalue()[:-_SYNC_SIZE])
    return found


def _schema_text() -> bytes:
    return _header(avro_codec.MANIFEST_ENTRY_SCHEMA)[0]


def _fast_decode(data: bytes, full: bool) -> list[Any] | None:
    """The entries of a manifest through the walk, or None when the reference decoder must decide."""
    try:
        ours = _schema_text()
        found = container_blocks(data, lambda text: text == ours)
        if found is None:
            return None
        out: list[Any] = []
        learner = Learner(full)
        for count, block in found[1]:
            if decode_block(block, count, out, learner) != len(block):
                return None
        learner.done()
        return out
    except Exception:  # corrupt, truncated or unusual: the reference decides (and names the file)
        return None


def read_entries(data: bytes, path: str) -> list[ManifestEntry]:
    """Exactly ``avro_codec.read_manifest(data, path)``, faster for manifests of the usual writer schema."""
    entries = _fast_decode(data, True)
    return avro_codec.read_manifest(data, path) if entries is None else entries


def read_entry_records(data: bytes, path: str) -> list[EntryRecord]:
    """``[entry_record(e) for e in avro_codec.read_manifest(data, path)]``, without building the full entries."""
    records = _fast_decode(data, False)
    if records is None:
        return [entry_record(e) for e in avro_codec.read_manifest(data, path)]
    return records


# --- encoding ------------------------------------------------------------------------------------------------------
_SMALL_LONGS = tuple(bytes([((v << 1) ^ (v >> 63)) & 0xFF]) for v in range(-64, 64))
_INT64 = 1 << 63


def _long_bytes(value: int) -> bytes:
    """A long as fastavro writes it (zigzag varint); beyond 64 bits the reference decides."""
    if -64 <= value < 64:
        return _SMALL_LONGS[value + 64]
    if not -_INT64 <= value < _INT64:
        raise Fallback("long beyond 64 bits")
    return long_bytes(value)


def _blob_bytes(value: bytes) -> bytes:
    if type(value) is not bytes:
        raise Fallback("not bytes")
    return _long_bytes(len(value)) + value


def _string_bytes(value: str) -> bytes:
    if type(value) is not str:
        raise Fallback("not a string")
    return _blob_bytes(value.encode())


def _strings_bytes(values: Sequence[str]) -> bytes:
    if not values:
        return b"\x00"
    return b"".join([_long_bytes(len(values)), *(_string_bytes(v) for v in values), b"\x00"])


def _stats_bytes(stats: SimpleStats) -> bytes:
    counts = stats.null_counts
    if counts is None:
        tail = b"\x00"
    elif not counts:
        tail = b"\x02\x00"
    else:
        items = [b"\x00" if c is None else b"\x02" + _long_bytes(c) for c in counts]
        tail = b"".join([b"\x02", _long_bytes(len(counts)), *items, b"\x00"])
    return _blob_bytes(stats.min_values) + _blob_bytes(stats.max_values) + tail


def _opt(value: Any, encode: Callable[[Any], bytes]) -> bytes:
    return b"\x00" if value is None else b"\x02" + encode(value)


def _body(entry: ManifestEntry) -> bytes:
    """An entry's encoding after ``_VERSION`` and ``_KIND`` (EntryRecord.body), as fastavro encodes its record."""
    f = entry.file
    return b"".join(
        (
            _blob_bytes(entry.partition),
            _long_bytes(entry.bucket),
            _long_bytes(entry.total_buckets),
            _string_bytes(f.file_name),
            _long_bytes(f.file_size),
            _long_bytes(f.row_count),
            _blob_bytes(f.min_key),
            _blob_bytes(f.max_key),
            _stats_bytes(f.key_stats),
            _stats_bytes(f.value_stats),
            _long_bytes(f.min_sequence_number),
            _long_bytes(f.max_sequence_number),
            _long_bytes(f.schema_id),
            _long_bytes(f.level),
            _strings_bytes(f.extra_files),
            _opt(f.creation_time_ms, _long_bytes),
            _opt(f.delete_row_count, _long_bytes),
            _opt(f.embedded_index, _blob_bytes),
            _opt(f.file_source, _long_bytes),
            _opt(f.value_stats_cols, _strings_bytes),
            _opt(f.external_path, _string_bytes),
            _opt(f.first_row_id, _long_bytes),
            _opt(f.write_cols, _strings_bytes),
            b"\x00",  # _WRITE_COLS_SEQUENCES: avro_codec always writes null
        )
    )


def entry_record(entry: ManifestEntry) -> EntryRecord:
    """The EntryRecord of a full entry (its body encoded here)."""
    f = entry.file
    return EntryRecord(
        entry.kind,
        entry.partition,
        entry.bucket,
        f.file_name,
        f.file_size,
        f.row_count,
        f.level,
        f.extra_files,
        f.embedded_index,
        f.external_path,
        None if f.creation_time_ms is None else _long_bytes(f.creation_time_ms),
        _body(entry),
    )


def _container(
    records: Sequence[bytes],
    sync_marker: bytes | None,
    prefix: bytes = b"",
    schema: dict[str, Any] = avro_codec.MANIFEST_ENTRY_SCHEMA,
    level: int | None = None,
) -> bytes:
    """An Avro container file of encoded records (each ``prefix + record``), laid out as fastavro lays it out: the
    same header, blocks cut after the same records, compressed by the same zstd call."""
    sync = sync_marker or os.urandom(_SYNC_SIZE)
    out = [_header(schema)[1], sync]
    extra = len(prefix)
    # fastavro ends a block after the record that brings it to _SYNC_INTERVAL bytes: with the running total of the
    # record sizes, the end of the block starting at record ``start`` is found by bisection.
    ends = list(accumulate(map(add, map(len, records), repeat(extra))))
    start = 0
    while start < len(records):
        before = ends[start - 1] if start else 0
        end = min(bisect_left(ends, before + _SYNC_INTERVAL, start), len(records) - 1) + 1
        block = records[start:end]
        data = _compress(prefix + prefix.join(block) if extra else b"".join(block), level)
        out += (_long_bytes(end - start), _long_bytes(len(data)), data, sync)
        start = end
    return b"".join(out)


def write_entries(
    entries: Iterable[ManifestEntry], *, sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    """Exactly ``avro_codec.write_manifest(entries, level=level)`` (byte for byte with the same sync marker),
    faster."""
    entries = list(entries)
    try:
        return _container([_KIND_BYTES[e.kind] + _body(e) for e in entries], sync_marker, level=level)
    except Exception:  # a value the fast path does not handle: the reference writes it or raises its error
        return avro_codec.write_manifest(entries, sync_marker=sync_marker, level=level)


def write_copies(
    kind: FileKind, records: Sequence[EntryRecord], *, sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    """The manifest of ``records`` as entries of ``kind``: exactly ``write_entries`` of their full entries with that
    kind, written from their bodies."""
    return _container(list(map(attrgetter("body"), records)), sync_marker, _KIND_BYTES[kind], level=level)


def _meta_bytes(meta: ManifestFileMeta) -> bytes:
    """A manifest-list row as fastavro encodes ``avro_codec.manifest_meta_to_record(meta)``."""
    return b"".join(
        (
            b"\x04",  # _VERSION 2
            _string_bytes(meta.file_name),
            _long_bytes(meta.file_size),
            _long_bytes(meta.num_added_files),
            _long_bytes(meta.num_deleted_files),
            _stats_bytes(meta.partition_stats),
            _long_bytes(meta.schema_id),
            _opt(meta.min_bucket, _long_bytes),
            _opt(meta.max_bucket, _long_bytes),
            _opt(meta.min_level, _long_bytes),
            _opt(meta.max_level, _long_bytes),
            _opt(meta.min_row_id, _long_bytes),
            _opt(meta.max_row_id, _long_bytes),
            b"\x00\x00",  # _TOTAL_BUCKETS and _EXTRA_FILES: avro_codec always writes null
        )
    )


def write_manifest_list(
    metas: Iterable[ManifestFileMeta], *, sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    """Exactly ``avro_codec.write_manifest_list(metas, level=level)`` (byte for byte with the same sync marker),
    faster."""
    metas = list(metas)
    try:
        return _container(
            [_meta_bytes(m) for m in metas], sync_marker, schema=avro_codec.MANIFEST_FILE_META_SCHEMA, level=level
        )
    except Exception:  # a value the fast path does not handle: the reference writes it or raises its error
        return avro_codec.write_manifest_list(metas, sync_marker=sync_marker, level=level)
