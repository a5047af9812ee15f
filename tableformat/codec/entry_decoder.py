"""The decoder behind :mod:`tableformat.codec.entry_codec`: manifest entries of the usual writer schema.

The writer schema is ``avro_codec.MANIFEST_ENTRY_SCHEMA`` (entry_codec checks the file header), so the field order
and types are known here. Two ways to decode one entry:

* ``_parse``: field by field, in Python;
* a **layout**: entries of one manifest are mostly laid out alike (partition rows, file names and statistics rows of
  the same widths; the same key statistics, schema id, level and optional trailing fields). Once ``_parse`` has
  seen a layout twice in a file (or once, if an earlier file had it), the layout becomes a regular expression that
  matches exactly the entries laid out that way: the same bytes where the entry had length prefixes, union
  indexes, array counts and the constant runs, any bytes where contents may differ (``.{n}`` for a blob of the
  entry's length, any minimal varint for a number), with a group per varying value. The ``re`` engine matches the
  following entries in C, the layouts of the previous file first. A match is a proof that parsing the entry field
  by field would take the same path (Avro values are self-delimiting and decoding is deterministic): the groups are
  its varying values, the constant runs decode to what they decoded to.

Only the encodings fastavro itself writes are accepted (minimal varints, every non-empty array one block followed
by the end marker, ``_VERSION`` 2 and a null ``_WRITE_COLS_SEQUENCES``, which avro_codec always writes): so an entry's
bytes are exactly what ``avro_codec.write_manifest`` writes for the decoded entry, which ``EntryRecord.body``
relies on. Anything else raises :class:`Fallback` (or another exception on corrupt data): the caller then uses the
reference decoder for the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import repeat
from typing import Any, NamedTuple

from tableformat.codec.varint_column import decode_column
from tableformat.codec.varint_column import varint_value as _value  # the name the decoder uses throughout
from tableformat.model.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats

_TIME_SAFE_MS = 30_000_000_000_000
"""Creation times within +-30e12 ms of 1970 always convert to a datetime; beyond, the reference decides."""
_ADD, _DELETE = FileKind.ADD, FileKind.DELETE
_MAX_LAYOUTS = 8
"""Layouts matched per file (a matched layout moves one place ahead); entries of others are parsed field by field."""
_SEEN_LIMIT = 64
"""Distinct layouts counted per file while looking for repeated ones; after this many entries parsed field by field,
layouts are given up in the file unless they matched four times as many."""


class Fallback(Exception):
    """The fast path does not handle this input: the reference decoder decides."""


class EntryRecord(NamedTuple):
    """A manifest entry as partition-level maintenance uses it, with its encoded body.

    ``body`` is the entry's encoding after ``_VERSION`` and ``_KIND`` (partition, bucket, total buckets, file) under
    ``avro_codec.MANIFEST_ENTRY_SCHEMA``, exactly as ``avro_codec.write_manifest`` encodes the entry: with it the
    same entry is written again under another kind (a DELETE is a full copy of its ADD) without being re-encoded.
    """

    kind: FileKind
    partition: bytes
    bucket: int
    file_name: str
    file_size: int
    row_count: int
    level: int
    extra_files: tuple[str, ...]
    embedded_index: bytes | None
    external_path: str | None
    created: bytes | None
    """The encoded ``_CREATION_TIME`` (a varint; None when null): decoded only when asked (creation_time_ms)."""
    body: bytes

    @property
    def creation_time_ms(self) -> int | None:
        return None if self.created is None else _value(self.created)

    def identifier(self) -> tuple[object, ...]:
        """The same tuple as ``ManifestEntry.identifier()`` of the full entry: (partition, bucket, level, file name,
        extra files, embedded index, external path)."""
        return (self[1], self[2], self[6], self[3], self[7], self[8], self[9])  # by index: the hot path of merges


# --- field by field: each piece returns its value and the position after it ----------------------------------------
def _long(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    pos += 1
    if b < 128:
        return (b >> 1) ^ -(b & 1), pos
    result = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 128:
            break
        shift += 7
        if shift > 63:
            raise Fallback("varint too long")
    if b == 0 or result >> 64:
        raise Fallback("varint not minimal or beyond 64 bits")
    return (result >> 1) ^ -(result & 1), pos


def _blob(buf: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = _long(buf, pos)
    end = pos + size
    if size < 0 or end > len(buf):
        raise Fallback("bad length")
    return buf[pos:end], end


def _union(buf: bytes, pos: int) -> bool:
    """Whether the ``["null", T]`` union at ``pos`` (one byte) holds a T."""
    index = buf[pos]
    if index > 2 or index & 1:
        raise Fallback("bad union index")
    return index == 2


def _array_start(buf: bytes, pos: int) -> tuple[int, int]:
    count, pos = _long(buf, pos)
    if count < 0:
        raise Fallback("array block with a byte size")
    return count, pos


def _array_end(buf: bytes, pos: int) -> int:
    if buf[pos] != 0:
        raise Fallback("array in several blocks")
    return pos + 1


def _strings(buf: bytes, pos: int) -> tuple[tuple[str, ...], int]:
    count, pos = _array_start(buf, pos)
    if count == 0:
        return (), pos
    items = []
    for _ in range(count):
        raw, pos = _blob(buf, pos)
        items.append(raw.decode())
    return tuple(items), _array_end(buf, pos)


Stats = tuple[bytes, bytes, "tuple[int | None, ...] | None"]


def _stats(buf: bytes, pos: int) -> tuple[Stats, int]:
    low, pos = _blob(buf, pos)
    high, pos = _blob(buf, pos)
    if not _union(buf, pos):
        return (low, high, None), pos + 1
    count, pos = _array_start(buf, pos + 1)
    items: list[int | None] = []
    for _ in range(count):
        if _union(buf, pos):
            value, pos = _long(buf, pos + 1)
            items.append(value)
        else:
            items.append(None)
            pos += 1
    if count:
        pos = _array_end(buf, pos)
    return (low, high, tuple(items)), pos


def _opt_long(buf: bytes, pos: int) -> tuple[int | None, int]:
    return _long(buf, pos + 1) if _union(buf, pos) else (None, pos + 1)


def _opt_blob(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    return _blob(buf, pos + 1) if _union(buf, pos) else (None, pos + 1)


def _opt_strings(buf: bytes, pos: int) -> tuple[tuple[str, ...] | None, int]:
    return _strings(buf, pos + 1) if _union(buf, pos) else (None, pos + 1)


def _checked_time(millis: int | None) -> int | None:
    if millis is not None and not -_TIME_SAFE_MS <= millis <= _TIME_SAFE_MS:
        raise Fallback("creation time outside the range every datetime conversion takes")
    return millis


Strings = tuple[str, ...]
Tail = tuple[int | None, bytes | None, int | None, Strings | None, str | None, int | None, Strings | None]


def _tail(buf: bytes, pos: int) -> tuple[Tail, int]:
    """``_DELETE_ROW_COUNT`` to ``_WRITE_COLS_SEQUENCES`` (the model has no field for the last: it must be null)."""
    deleted, pos = _opt_long(buf, pos)
    embedded, pos = _opt_blob(buf, pos)
    source, pos = _opt_long(buf, pos)
    stats_cols, pos = _opt_strings(buf, pos)
    external, pos = _opt_blob(buf, pos)
    first_row_id, pos = _opt_long(buf, pos)
    write_cols, pos = _opt_strings(buf, pos)
    if buf[pos] != 0:
        raise Fallback("_WRITE_COLS_SEQUENCES is set")
    path = None if external is None else external.decode()
    return (deleted, embedded, source, stats_cols, path, first_row_id, write_cols), pos + 1


class _Parsed(NamedTuple):
    """One entry decoded field by field, the bytes of its constant runs and where it ends."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    name: str
    name_size: int
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    key_stats_raw: bytes
    stats: Stats
    min_sequence: int
    max_sequence: int
    level: tuple[int, int, tuple[str, ...]]
    level_raw: bytes
    created: int | None
    tail: Tail
    tail_raw: bytes
    end: int


def _parse(buf: bytes, pos: int) -> _Parsed:
    if buf[pos] != 4:
        raise Fallback("manifest entry version other than 2")
    kind = _KINDS[buf[pos + 1 : pos + 2]]
    partition, pos = _blob(buf, pos + 2)
    bucket, pos = _long(buf, pos)
    total_buckets, pos = _long(buf, pos)
    name, pos = _blob(buf, pos)
    file_size, pos = _long(buf, pos)
    row_count, pos = _long(buf, pos)
    min_key, pos = _blob(buf, pos)
    max_key, pos = _blob(buf, pos)
    start = pos
    (low, high, counts), pos = _stats(buf, pos)
    key_stats = SimpleStats(min_values=low, max_values=high, null_counts=counts)
    key_stats_raw = buf[start:pos]
    stats, pos = _stats(buf, pos)
    min_sequence, pos = _long(buf, pos)
    max_sequence, pos = _long(buf, pos)
    start = pos
    schema_id, pos = _long(buf, pos)
    level, pos = _long(buf, pos)
    extra, pos = _strings(buf, pos)
    level_raw = buf[start:pos]
    created, pos = _opt_long(buf, pos)
    start = pos
    tail, pos = _tail(buf, pos)
    return _Parsed(
        kind, partition, bucket, total_buckets, name.decode(), len(name), file_size, row_count, min_key, max_key,
        key_stats, key_stats_raw, stats, min_sequence, max_sequence, (schema_id, level, extra), level_raw,
        _checked_time(created), tail, buf[start:pos], pos,
    )  # fmt: skip


# --- layouts ---------------------------------------------------------------------------------------------------------
_KINDS = {b"\x00": _ADD, b"\x02": _DELETE}
_ANY_LONG = rb"(?:[\x00-\x7f]|[\x80-\xff]{1,8}[\x01-\x7f]|[\x80-\xff]{9}\x01)"
"""Any minimal varint of at most 64 bits (the tenth byte holds only bit 63)."""
_VALUE = b"(" + _ANY_LONG + b")"


def long_bytes(value: int) -> bytes:
    """A long as Avro (and fastavro) writes it: a minimal zigzag varint."""
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _sized(size: int, group: bool) -> bytes:
    """A blob of ``size`` bytes: its length prefix, then any bytes."""
    return re.escape(long_bytes(size)) + (rb"(.{%d})" if group else rb".{%d}") % size


def _stats_pattern(stats: Stats, group: bool) -> bytes:
    low, high, counts = stats
    parts = [_sized(len(low), False), _sized(len(high), False)]
    if counts is None:
        parts.append(rb"\x00")
    else:
        parts.append(rb"\x02" + re.escape(long_bytes(len(counts))))
        parts += (rb"\x00" if c is None else rb"\x02" + _ANY_LONG for c in counts)
        if counts:
            parts.append(rb"\x00")
    return (b"(%s)" if group else b"%s") % b"".join(parts)


class Layout(NamedTuple):
    """A learnt layout: its pattern and the values of its constant runs."""

    pattern: re.Pattern[bytes]
    key_stats: SimpleStats
    level: tuple[int, int, tuple[str, ...]]
    tail: Tail


def _layout_key(p: _Parsed) -> tuple[Any, ...]:
    low, high, counts = p.stats
    stats_shape = (len(low), len(high), None if counts is None else tuple(c is None for c in counts))
    sizes = (len(p.partition), p.name_size, len(p.min_key), len(p.max_key))
    return (sizes, p.key_stats_raw, stats_shape, p.level_raw, p.created is None, p.tail_raw)


_LAYOUTS: dict[tuple[Any, ...], Layout] = {}
"""Layouts by key and mode, shared by every file of the process (the files of one table usually share a few)."""


def _source(p: _Parsed, full: bool) -> bytes:
    """The pattern of ``p``'s layout. Groups: kind, then (records only) the body after the kind, then partition,
    bucket, file name, file size, row count and creation time; with ``full`` also total buckets, min and max key,
    value statistics and sequence numbers (in file order)."""
    value = _VALUE if full else _ANY_LONG
    body = b"".join(
        (
            _sized(len(p.partition), True),
            _VALUE,
            value,
            _sized(p.name_size, True),
            _VALUE,
            _VALUE,
            _sized(len(p.min_key), full),
            _sized(len(p.max_key), full),
            re.escape(p.key_stats_raw),
            _stats_pattern(p.stats, full),
            value,
            value,
            re.escape(p.level_raw),
            rb"\x00()" if p.created is None else rb"\x02" + _VALUE,
            re.escape(p.tail_raw),
        )
    )
    return rb"\x04([\x00\x02])" + (body if full else b"(" + body + b")")


def _layout(key: tuple[Any, ...], p: _Parsed, full: bool) -> Layout:
    found = _LAYOUTS.get((key, full))
    if found is None:
        if len(_LAYOUTS) >= 256:
            _LAYOUTS.clear()
        pattern = re.compile(_source(p, full), re.DOTALL)
        found = _LAYOUTS[(key, full)] = Layout(pattern, p.key_stats, p.level, p.tail)
    return found


_RECENT: dict[bool, list[Layout]] = {True: [], False: []}
"""The layouts of the last file decoded in each mode: the next file (of the same table, usually) starts with them."""


class Learner:
    """The layouts of one file, with the groups of one mode (``full``: everything a ManifestEntry holds; else what
    an EntryRecord holds): those of the previous file, then each layout parsed twice here (or once, when an earlier
    file had it), first, at most ``_MAX_LAYOUTS`` (the one matched least lately makes room). A file whose entries rarely
    repeat a layout stops trying them: then every entry is parsed field by field, without the misses."""

    def __init__(self, full: bool) -> None:
        self.full = full
        self.known: list[Layout] = list(_RECENT[full])
        self.matched = 0
        self._parsed = 0
        self._seen: dict[tuple[Any, ...], int] = {}

    def saw(self, parsed: _Parsed) -> None:
        self._parsed += 1
        if self._parsed >= _SEEN_LIMIT and self._parsed * 4 > self.matched:
            self.known.clear()  # layouts do not pay off in this file
            self._seen.clear()
            return
        key = _layout_key(parsed)
        if key in self._seen or (key, self.full) in _LAYOUTS:
            self._seen.pop(key, None)
            if len(self.known) >= _MAX_LAYOUTS:
                self.known.pop()  # the one matched least lately
            self.known.insert(0, _layout(key, parsed, self.full))  # the entries around are likely laid out so
        elif len(self._seen) < _SEEN_LIMIT:
            self._seen[key] = 1

    def done(self) -> None:
        """The file is decoded: its layouts are where the next file starts."""
        _RECENT[self.full] = self.known[:_MAX_LAYOUTS]


def _simple_stats(stats: Stats) -> SimpleStats:
    return SimpleStats(min_values=stats[0], max_values=stats[1], null_counts=stats[2])


def _record(p: _Parsed, body: bytes) -> EntryRecord:
    return EntryRecord(
        p.kind, p.partition, p.bucket, p.name, p.file_size, p.row_count, p.level[1], p.level[2], p.tail[1], p.tail[4],
        None if p.created is None else long_bytes(p.created), body,
    )  # fmt: skip


def _full(p: _Parsed) -> ManifestEntry:
    return _entry(
        p.kind, p.partition, p.bucket, p.total_buckets, p.name, p.file_size, p.row_count,
        (p.min_key, p.max_key, p.key_stats), _simple_stats(p.stats), p.min_sequence, p.max_sequence, p.level,
        p.created, p.tail,
    )  # fmt: skip


def _entry(
    kind: FileKind, partition: bytes, bucket: int, total_buckets: int, name: str, file_size: int, row_count: int,
    keys: tuple[bytes, bytes, SimpleStats], value_stats: SimpleStats, min_sequence: int, max_sequence: int,
    level: tuple[int, int, tuple[str, ...]], created: int | None, tail: Tail,
) -> ManifestEntry:  # fmt: skip
    return ManifestEntry(
        kind=kind,
        partition=partition,
        bucket=bucket,
        total_buckets=total_buckets,
        file=DataFileMeta(
            file_name=name,
            file_size=file_size,
            row_count=row_count,
            min_key=keys[0],
            max_key=keys[1],
            key_stats=keys[2],
            value_stats=value_stats,
            min_sequence_number=min_sequence,
            max_sequence_number=max_sequence,
            schema_id=level[0],
            level=level[1],
            extra_files=level[2],
            creation_time_ms=created,
            delete_row_count=tail[0],
            embedded_index=tail[1],
            file_source=tail[2],
            value_stats_cols=tail[3],
            external_path=tail[4],
            first_row_id=tail[5],
            write_cols=tail[6],
        ),
    )


def decode_block(buf: bytes, count: int, out: list[Any], learner: Learner) -> int:
    """Decode the ``count`` entries of one decompressed block into ``out`` (ManifestEntry when ``learner.full``, else
    EntryRecord); returns the position after them (the caller checks it is the block's end)."""
    pos = 0
    full = learner.full
    known = learner.known
    left = count
    while left > 0:
        match = layout = None
        for index, candidate in enumerate(known):
            match = candidate.pattern.match(buf, pos)
            if match is not None:
                layout = candidate
                if index:  # the layouts seen most come first
                    known[index - 1], known[index] = candidate, known[index - 1]
                break
        if match is None or layout is None:
            parsed = _parse(buf, pos)
            learner.saw(parsed)
            out.append(_full(parsed) if full else _record(parsed, buf[pos + 2 : parsed.end]))
            pos = parsed.end
            left -= 1
        elif not full:  # the usual run of entries of one layout, in a loop of its own
            pos, decoded = _records_of_layout(buf, pos, left, layout, out)
            left -= decoded
            learner.matched += decoded
        else:
            kind, partition, bucket, total, name, size, rows, min_key, max_key, stats, min_seq, max_seq, created = (
                match.groups()
            )
            out.append(
                _entry(
                    _KINDS[kind], partition, _value(bucket), _value(total), name.decode(), _value(size),
                    _value(rows), (min_key, max_key, layout.key_stats), _simple_stats(_stats(stats, 0)[0]),
                    _value(min_seq), _value(max_seq), layout.level, _checked_time(_value(created)) if created else None,
                    layout.tail,
                )
            )  # fmt: skip
            pos = match.end()
            left -= 1
            learner.matched += 1
    return pos


def _records_of_layout(buf: bytes, pos: int, left: int, layout: Layout, out: list[Any]) -> tuple[int, int]:
    """EntryRecords of the entries from ``pos`` on while ``layout`` matches (the first one does), at most ``left``:
    (the position after them, how many). The matches are collected first and turned into records a column at a
    time (varint_column decodes each numeric column at once)."""
    match = layout.pattern.match
    matched: list[tuple[bytes, ...]] = []
    append = matched.append
    for _ in range(left):
        found = match(buf, pos)
        if found is None:
            break
        append(found.groups())
        pos = found.end()
    count = len(matched)
    if not count:
        return pos, 0
    kind, body, partition, bucket, name, size, rows, times = zip(*matched)
    created: Iterable[bytes | None] = times
    if not times[0]:  # the layout's creation time is null (its group matched nothing), so in every entry
        created = repeat(None, count)
    elif max(map(len, times)) > 6 and not all(-_TIME_SAFE_MS <= _value(c) <= _TIME_SAFE_MS for c in times):
        raise Fallback("creation time outside the range every datetime conversion takes")  # 6 bytes: 41 bits
    level, extra = layout.level[1], layout.level[2]
    embedded, external = layout.tail[1], layout.tail[4]
    columns = zip(
        map(_KINDS.__getitem__, kind),
        partition,
        decode_column(bucket),
        map(bytes.decode, name),
        decode_column(size),
        decode_column(rows),
        repeat(level, count),
        repeat(extra, count),
        repeat(embedded, count),
        repeat(external, count),
        created,
        body,
    )
    out.extend(map(tuple.__new__, repeat(EntryRecord, count), columns))
    return pos, count
