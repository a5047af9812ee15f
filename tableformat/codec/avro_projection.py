"""Fast projected reading of manifests and manifest lists (for expiration planning over many files).

A purpose-built decoder, generated per writer schema, that decodes only the fields a caller needs. Anything it
does not handle (other codecs or schema shapes, corrupt or truncated data, failed checks) falls back to the full
fastavro decoder in :mod:`tableformat.codec.avro_codec`, so it returns exactly what that decoder returns, or raises
exactly where it raises (tests/unit/test_codec_projection.py holds it to that).
"""

from __future__ import annotations

import json
import sys
import threading
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import fastavro
import zstandard
from fastavro.logical_readers import LOGICAL_READERS

from tableformat.codec.avro_codec import read_manifest, read_manifest_list
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


class _Unsupported(Exception):
    """A writer schema the fast readers do not handle: the full decoder is used."""


_TIME_SAFE_MS = 30_000_000_000_000
"""Within +-30e12 ms of 1970 (years 1019 to 2920) a timestamp always converts; beyond, fastavro's converter decides."""

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_TIMESTAMPS = frozenset({None, "timestamp-millis", "timestamp-micros"})

# A projection: (field name, expectation, output slot or None, required). An expectation is a type the full
# decoder turns into the same Python value (below), or a nested projection (a list) for a record field.
_Field = tuple[str, Any, "int | None", bool]

_STATS: list[_Field] = [
    ("_MIN_VALUES", "bytes", None, True),
    ("_MAX_VALUES", "bytes", None, True),
    ("_NULL_COUNTS", "opt_array", None, False),
]

_ENTRY_PROJECTION: list[_Field] = [
    ("_KIND", "kind", 0, True),
    ("_PARTITION", "bytes", 1, True),
    ("_BUCKET", "int", 2, True),
    ("_TOTAL_BUCKETS", "int", None, False),
    (
        "_FILE",
        [
            ("_FILE_NAME", "string", 3, True),
            ("_FILE_SIZE", "int", 4, True),
            ("_ROW_COUNT", "int", None, True),
            ("_MIN_KEY", "bytes", None, True),
            ("_MAX_KEY", "bytes", None, True),
            ("_KEY_STATS", _STATS, None, True),
            ("_VALUE_STATS", _STATS, None, True),
            ("_MIN_SEQUENCE_NUMBER", "int", None, True),
            ("_MAX_SEQUENCE_NUMBER", "int", None, True),
            ("_SCHEMA_ID", "int", None, True),
            ("_LEVEL", "int", 5, True),
            ("_EXTRA_FILES", "strings", 6, False),
            ("_CREATION_TIME", "opt_time", None, False),
            ("_DELETE_ROW_COUNT", "opt_any", None, False),
            ("_EMBEDDED_FILE_INDEX", "opt_bytes", 7, False),
            ("_FILE_SOURCE", "opt_any", None, False),
            ("_VALUE_STATS_COLS", "opt_array", None, False),
            ("_EXTERNAL_PATH", "opt_string", 8, False),
            ("_FIRST_ROW_ID", "opt_any", None, False),
            ("_WRITE_COLS", "opt_array", None, False),
        ],
        None,
        True,
    ),
]
_ENTRY_DEFAULTS: dict[int, Any] = {6: (), 7: None, 8: None}

_LIST_PROJECTION: list[_Field] = [
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


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Avro int/long) at ``pos``: (value, position after it)."""
    b = buf[pos]
    pos += 1
    result = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > 63:
            raise ValueError("varint too long")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
    if result >> 64:
        raise ValueError("varint beyond 64 bits")  # fastavro would wrap it; let it decide
    return (result >> 1) ^ -(result & 1), pos


def _skip_varint(buf: bytes, pos: int) -> int:
    end = pos + 10
    while buf[pos] & 0x80:
        pos += 1
        if pos >= end:
            raise ValueError("varint too long")
    return pos + 1


class _Compiler:
    """Generates the body of ``decode(buf, count, append) -> end position`` for one writer schema."""

    def __init__(self, slots: int) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.named: dict[str, Any] = {}
        self.expanding: set[str] = set()
        self.slots: dict[int, str] = {}
        self.n_slots = slots

    def tmp(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    # --- schema nodes ---
    def resolve(self, node: Any, ns: str, depth: int) -> tuple[dict[str, Any] | list[Any], str]:
        """(a dict with a "type" primitive/complex name, or a union list; its namespace)."""
        if depth > 40:
            raise _Unsupported("schema too deep")
        if isinstance(node, list):
            return node, ns
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return {"type": node}, ns
            full = node if "." in node or not ns else f"{ns}.{node}"
            found = self.named.get(full)
            if found is None and full != node:
                found = self.named.get(node)
            if found is None:
                raise _Unsupported(f"unknown type {node!r}")
            if found[0] in self.expanding:
                raise _Unsupported("recursive type")
            return found[1], found[2]
        if not isinstance(node, dict):
            raise _Unsupported("bad schema node")
        kind = node.get("type")
        if isinstance(kind, (dict, list)) or (
            isinstance(kind, str)
            and kind not in _PRIMITIVES
            and kind not in ("record", "error", "enum", "fixed", "array", "map")
        ):
            return self.resolve(kind, ns, depth + 1)
        if kind in ("record", "error", "enum", "fixed"):
            name = node.get("name")
            if not isinstance(name, str):
                raise _Unsupported("unnamed type")
            if "." in name:
                full, own_ns = name, name.rsplit(".", 1)[0]
            else:
                own_ns = node.get("namespace", ns) or ""
                full = f"{own_ns}.{name}" if own_ns else name
            if full in self.named and self.named[full][1] is not node:
                raise _Unsupported(f"type {full!r} defined twice")
            self.named[full] = (full, node, own_ns)
            if full != name and name in self.named and self.named[name][0] != full:
                raise _Unsupported(f"ambiguous type name {name!r}")
            self.named.setdefault(name, (full, node, own_ns))
            return node, own_ns
        return node, ns

    @staticmethod
    def _plain(node: dict[str, Any] | list[Any], *types: str) -> bool:
        return isinstance(node, dict) and node.get("type") in types and node.get("logicalType") is None

    def _nullable(self, node: dict[str, Any] | list[Any], ns: str, depth: int) -> tuple[int, Any] | None:
        """For a union of null and one other type: (index of null, the other type's node)."""
        if not isinstance(node, list) or len(node) != 2:
            return None
        branches = [self.resolve(b, ns, depth + 1)[0] for b in node]
        nulls = [i for i, b in enumerate(branches) if isinstance(b, dict) and b.get("type") == "null"]
        if len(nulls) != 1:
            return None
        return nulls[0], node[1 - nulls[0]]

    # --- code: primitives ---
    def long(self, d: int, var: str) -> None:
        self.emit(d, f"{var} = buf[pos]")
        self.emit(d, f"if {var} < 128:")
        self.emit(d + 1, "pos += 1")
        self.emit(d + 1, f"{var} = ({var} >> 1) ^ -({var} & 1)")
        self.emit(d, "else:")
        self.emit(d + 1, f"{var}, pos = _varint(buf, pos)")

    def skip_long(self, d: int) -> None:
        self.emit(d, "if buf[pos] < 128:")
        self.emit(d + 1, "pos += 1")
        self.emit(d, "else:")
        self.emit(d + 1, "pos = _skip_varint(buf, pos)")

    def raw(self, d: int, var: str | None, decode: bool) -> None:
        n = self.tmp()
        self.long(d, n)
        self.emit(d, f"if {n} < 0 or pos + {n} > lb:")
        self.emit(d + 1, "raise ValueError('bad length')")
        if var is not None:
            self.emit(d, f"{var} = buf[pos:pos + {n}]" + (".decode()" if decode else ""))
        elif decode:
            self.emit(d, f"buf[pos:pos + {n}].decode()")
        self.emit(d, f"pos += {n}")

    def fixed_size(self, d: int, size: int) -> None:
        self.emit(d, f"pos += {size}")
        self.emit(d, "if pos > lb:")
        self.emit(d + 1, "raise ValueError('truncated')")

    def blocks(self, d: int, item: Callable[[int], None]) -> None:
        """An array or map: blocks of items until a zero count (a negative count is followed by a byte size)."""
        c = self.tmp()
        self.emit(d, "while True:")
        self.long(d + 1, c)
        self.emit(d + 1, f"if {c} == 0:")
        self.emit(d + 2, "break")
        self.emit(d + 1, f"if {c} < 0:")
        self.emit(d + 2, f"{c} = -{c}")
        self.skip_long(d + 2)
        self.emit(d + 1, f"for _ in range({c}):")
        item(d + 2)

    def union_index(self, d: int, n: int) -> str:
        i = self.tmp()
        self.long(d, i)
        self.emit(d, f"if {i} < 0 or {i} >= {n}:")
        self.emit(d + 1, "raise ValueError('bad union index')")
        return i

    # --- code: skipping any value ---
    def skip(self, d: int, node: Any, ns: str, depth: int) -> None:
        node, ns = self.resolve(node, ns, depth)
        if isinstance(node, dict) and f"{node.get('type')}-{node.get('logicalType')}" in LOGICAL_READERS:
            raise _Unsupported("a logical type fastavro converts (the conversion can fail)")
        if isinstance(node, list):
            if not node:
                raise _Unsupported("empty union")
            i = self.union_index(d, len(node))
            for k, branch in enumerate(node):
                self.emit(d, f"{'if' if k == 0 else 'elif'} {i} == {k}:")
                self.emit(d + 1, "pass")
                self.skip(d + 1, branch, ns, depth + 1)
            return
        kind = node.get("type")
        if kind == "null":
            return
        if kind in ("int", "long"):
            self.skip_long(d)
        elif kind == "boolean":
            self.fixed_size(d, 1)
        elif kind == "float":
            self.fixed_size(d, 4)
        elif kind == "double":
            self.fixed_size(d, 8)
        elif kind == "bytes":
            self.raw(d, None, decode=False)
        elif kind == "string":
            self.raw(d, None, decode=True)  # decoded (and dropped) so invalid UTF-8 fails as in fastavro
        elif kind == "fixed":
            size = node.get("size")
            if not isinstance(size, int) or size < 0:
                raise _Unsupported("bad fixed size")
            self.fixed_size(d, size)
        elif kind == "enum":
            symbols = node.get("symbols")
            if not isinstance(symbols, list):
                raise _Unsupported("bad enum")
            i = self.tmp()
            self.long(d, i)
            self.emit(d, f"if {i} < 0 or {i} >= {len(symbols)}:")
            self.emit(d + 1, "raise ValueError('bad enum index')")
        elif kind == "array":
            self.blocks(d, lambda dd: self.skip(dd, node.get("items"), ns, depth + 1))
        elif kind == "map":

            def entry(dd: int) -> None:
                self.raw(dd, None, decode=True)
                self.skip(dd, node.get("values"), ns, depth + 1)

            self.blocks(d, entry)
        elif kind in ("record", "error"):
            self.record(d, node, ns, [], depth + 1)
        else:
            raise _Unsupported(f"type {kind!r}")

    # --- code: projected values ---
    def value(self, d: int, node: Any, ns: str, expect: str, slot: int | None, depth: int) -> None:
        """A field the full decoder reads: its writer type must be what ``expect`` allows, else _Unsupported."""
        resolved, rns = self.resolve(node, ns, depth)
        var = None if slot is None else f"s{slot}"
        if slot is not None:
            self.slots[slot] = var  # type: ignore[assignment]
        if expect in ("int", "kind", "bytes", "string"):
            primitive = ("int", "long") if expect in ("int", "kind") else (expect,)
            if not self._plain(resolved, *primitive):
                raise _Unsupported(f"expected {expect}")
            if var is None:
                self.skip(d, resolved, rns, depth)
            elif expect in ("int", "kind"):
                self.long(d, var)
                if expect == "kind":
                    self.emit(d, f"if {var} == 0:")
                    self.emit(d + 1, f"{var} = _ADD")
                    self.emit(d, f"elif {var} == 1:")
                    self.emit(d + 1, f"{var} = _DELETE")
                    self.emit(d, "else:")
                    self.emit(d + 1, "raise ValueError('bad kind')")
            else:
                self.raw(d, var, decode=expect == "string")
            return
        if expect == "opt_any":
            self.skip(d, resolved, rns, depth)
            return
        nullable = self._nullable(resolved, rns, depth)
        if nullable is None:
            if not self._accepts(expect, resolved):
                raise _Unsupported(f"expected {expect}")
            self.present(d, resolved, rns, expect, var, depth)
            return
        null_index, other = nullable
        other_node, other_ns = self.resolve(other, rns, depth + 1)
        if not self._accepts(expect, other_node):
            raise _Unsupported(f"expected {expect}")
        i = self.union_index(d, 2)
        self.emit(d, f"if {i} == {null_index}:")
        self.emit(d + 1, "pass" if var is None else f"{var} = {'()' if expect == 'strings' else 'None'}")
        self.emit(d, "else:")
        self.emit(d + 1, "pass")
        self.present(d + 1, other_node, other_ns, expect, var, depth + 1)

    def _accepts(self, expect: str, node: dict[str, Any] | list[Any]) -> bool:
        """Whether the non-null type of an optional field is one the full decoder turns into ``expect``'s value."""
        if expect == "opt_time":
            return isinstance(node, dict) and node.get("type") == "long" and node.get("logicalType") in _TIMESTAMPS
        if expect == "opt_int":
            return self._plain(node, "int", "long")
        if expect in ("opt_bytes", "opt_string"):
            return self._plain(node, expect[4:])
        if expect in ("opt_array", "strings"):
            return isinstance(node, dict) and node.get("type") == "array"
        raise _Unsupported(f"expectation {expect!r}")

    def present(self, d: int, node: Any, ns: str, expect: str, var: str | None, depth: int) -> None:
        """The non-null value of an optional field."""
        if expect == "opt_time" and node.get("logicalType") is not None:
            # fastavro turns it into a datetime, which fails out of datetime's range: check it the same way.
            t = self.tmp()
            self.long(d, t)
            limit = _TIME_SAFE_MS * (1000 if node["logicalType"] == "timestamp-micros" else 1)
            self.emit(d, f"if not -{limit} <= {t} <= {limit}:")
            self.emit(d + 1, f"_LOGICAL[{'long-' + node['logicalType']!r}]({t}, None, None)")
        elif var is None:
            self.skip(d, node, ns, depth)
        elif expect == "opt_int":
            self.long(d, var)
        elif expect in ("opt_bytes", "opt_string"):
            self.raw(d, var, decode=expect == "opt_string")
        elif expect in ("strings", "opt_array"):
            items, items_ns = self.resolve(node.get("items"), ns, depth + 1)
            if expect == "strings":
                if not self._plain(items, "string"):
                    raise _Unsupported("expected strings")
            elif not (self._plain(items, "long", "int") or self._nullable_long(items, items_ns, depth)):
                raise _Unsupported("expected an array of nullable longs")
            self.emit(d, f"{var} = []")
            item = self.tmp()

            def read_item(dd: int) -> None:
                if expect == "strings":
                    self.raw(dd, item, decode=True)
                else:
                    nullable = self._nullable(items, items_ns, depth + 1)
                    if nullable is None:
                        self.long(dd, item)
                    else:
                        i = self.union_index(dd, 2)
                        self.emit(dd, f"if {i} == {nullable[0]}:")
                        self.emit(dd + 1, f"{item} = None")
                        self.emit(dd, "else:")
                        self.emit(dd + 1, "pass")
                        self.long(dd + 1, item)
                self.emit(dd, f"{var}.append({item})")

            self.blocks(d, read_item)
            self.emit(d, f"{var} = tuple({var})")
        else:
            raise _Unsupported(f"expectation {expect!r}")

    def _nullable_long(self, node: Any, ns: str, depth: int) -> bool:
        nullable = self._nullable(node, ns, depth + 1)
        if nullable is None:
            return False
        other = self.resolve(nullable[1], ns, depth + 2)[0]
        return self._plain(other, "long", "int")

    def record(self, d: int, node: Any, ns: str, projection: list[_Field], depth: int) -> None:
        if not isinstance(node, dict) or node.get("type") not in ("record", "error"):
            raise _Unsupported("expected a record")
        name = node.get("name")
        key = name if isinstance(name, str) and "." in name else (f"{ns}.{name}" if ns else str(name))
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise _Unsupported("record without fields")
        wanted = {f[0]: f for f in projection}
        seen: set[str] = set()
        self.expanding.add(key)
        for field in fields:
            if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
                raise _Unsupported("bad field")
            fname = field["name"]
            if fname in seen:
                raise _Unsupported("duplicate field")
            seen.add(fname)
            spec = wanted.get(fname)
            if spec is None:
                self.skip(d, field["type"], ns, depth + 1)
            elif isinstance(spec[1], list):
                inner, inner_ns = self.resolve(field["type"], ns, depth + 1)
                self.record(d, inner, inner_ns, spec[1], depth + 1)
            else:
                self.value(d, field["type"], ns, spec[1], spec[2], depth + 1)
        self.expanding.discard(key)
        for fname, _, _, required in projection:
            if required and fname not in seen:
                raise _Unsupported(f"missing field {fname}")


_Decoder = Callable[[bytes, int, Callable[[Any], None], int], int]
_DECODERS: dict[tuple[bytes, str], _Decoder | None] = {}
_PROJECTIONS: dict[str, tuple[list[_Field], dict[int, Any], int, Any]] = {}


def _compile(schema_text: bytes, projection: str) -> _Decoder | None:
    """The decoder of one writer schema for a projection (cached); None if the schema is not handled."""
    key = (schema_text, projection)
    if key in _DECODERS:
        return _DECODERS[key]
    fields, defaults, n_slots, make = _PROJECTIONS[projection]
    decoder: _Decoder | None = None
    try:
        schema = json.loads(schema_text.decode("utf-8"))
        fastavro.parse_schema(schema, _write_hint=False, _force=True)  # what the full reader accepts
        compiler = _Compiler(n_slots)
        node, ns = compiler.resolve(schema, "", 0)
        compiler.lines = []
        compiler.record(2, node, ns, fields, 0)
        out = []
        for slot in range(n_slots):
            if slot in compiler.slots:
                out.append(f"s{slot}")
            elif slot in defaults:
                out.append(f"_DEFAULT_{slot}")
            else:
                raise _Unsupported(f"no value for slot {slot}")
        source = "\n".join(
            [
                "def decode(buf, count, append, pos):",
                "    lb = len(buf)",
                "    for _record in range(count):",
                *compiler.lines,
                f"        append(_make(({', '.join(out)},)))",
                "    return pos",
            ]
        )
        namespace: dict[str, Any] = {
            "_varint": _varint,
            "_skip_varint": _skip_varint,
            "_ADD": FileKind.ADD,
            "_DELETE": FileKind.DELETE,
            "_make": make,
            "_LOGICAL": LOGICAL_READERS,
            **{f"_DEFAULT_{slot}": value for slot, value in defaults.items()},
        }
        exec(compile(source, f"<avro decoder {projection}>", "exec"), namespace)  # generated above from the schema
        decoder = namespace["decode"]
    except Exception:  # an unhandled or invalid schema: the full decoder decides
        decoder = None
    _DECODERS[key] = decoder
    return decoder


def _entry_ref_from_tuple(values: tuple[Any, ...]) -> EntryRef:
    return tuple.__new__(EntryRef, values)


_PROJECTIONS["entry"] = (_ENTRY_PROJECTION, _ENTRY_DEFAULTS, 9, _entry_ref_from_tuple)
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


def _blocks(data: bytes, projection: str) -> tuple[_Decoder, list[tuple[int, bytes]]] | None:
    """The compiled decoder for the file's writer schema and its (record count, decompressed block) pairs; None
    when the full decoder must decide. Raises on malformed data (callers treat that as None)."""
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
            count, pos = _varint(data, pos)
            if count == 0:
                break
            if count < 0:
                count = -count
                _, pos = _varint(data, pos)
            for _ in range(count):
                size, pos = _varint(data, pos)
                if size < 0 or pos + size > end:
                    return None
                key = data[pos : pos + size].decode()
                pos += size
                size, pos = _varint(data, pos)
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
    decoder = _compile(schema_text, projection)
    if decompress is None or decoder is None:
        return None
    blocks: list[tuple[int, bytes]] = []
    while pos < end:
        count, pos = _varint(data, pos)
        size, pos = _varint(data, pos)
        if count < 0 or size < 0 or pos + size + 16 > end:
            return None
        blocks.append((count, decompress(data[pos : pos + size])))
        pos += size
        if data[pos : pos + 16] != sync:
            return None
        pos += 16
    return decoder, blocks


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
        self._recent: list[tuple[_Decoder, bytes, int, list[ManifestFileMeta]]] = []
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

    def _decode_block(self, decoder: _Decoder, count: int, block: bytes) -> list[ManifestFileMeta] | None:
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
