"""The code generator behind :mod:`tableformat.codec.avro_projection`: one decoder per Avro writer schema.

``compile_decoder`` turns a writer schema and a projection (the fields a caller wants, each with the Python value the
full fastavro decoder would give it) into a Python function ``decode(buf, count, append, pos) -> end position`` that
walks the binary records of one decompressed block, skips every other field and appends a tuple of the projected
values per record. A schema it does not handle exactly raises ``Unsupported`` inside and yields None: the caller then
uses the full decoder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import fastavro
from fastavro.logical_readers import LOGICAL_READERS

from tableformat.model.manifest import FileKind


class Unsupported(Exception):
    """A writer schema the fast readers do not handle: the full decoder is used."""


_TIME_SAFE_MS = 30_000_000_000_000
"""Within +-30e12 ms of 1970 (years 1019 to 2920) a timestamp always converts; beyond, fastavro's converter decides."""

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_TIMESTAMPS = frozenset({None, "timestamp-millis", "timestamp-micros"})

# A projection: (field name, expectation, output slot or None, required). An expectation is a type the full
# decoder turns into the same Python value (below), or a nested projection (a list) for a record field.
Field = tuple[str, Any, "int | None", bool]


def varint(buf: bytes, pos: int) -> tuple[int, int]:
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


def skip_varint(buf: bytes, pos: int) -> int:
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
            raise Unsupported("schema too deep")
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
                raise Unsupported(f"unknown type {node!r}")
            if found[0] in self.expanding:
                raise Unsupported("recursive type")
            return found[1], found[2]
        if not isinstance(node, dict):
            raise Unsupported("bad schema node")
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
                raise Unsupported("unnamed type")
            if "." in name:
                full, own_ns = name, name.rsplit(".", 1)[0]
            else:
                own_ns = node.get("namespace", ns) or ""
                full = f"{own_ns}.{name}" if own_ns else name
            if full in self.named and self.named[full][1] is not node:
                raise Unsupported(f"type {full!r} defined twice")
            self.named[full] = (full, node, own_ns)
            if full != name and name in self.named and self.named[name][0] != full:
                raise Unsupported(f"ambiguous type name {name!r}")
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
            raise Unsupported("a logical type fastavro converts (the conversion can fail)")
        if isinstance(node, list):
            if not node:
                raise Unsupported("empty union")
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
                raise Unsupported("bad fixed size")
            self.fixed_size(d, size)
        elif kind == "enum":
            symbols = node.get("symbols")
            if not isinstance(symbols, list):
                raise Unsupported("bad enum")
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
            raise Unsupported(f"type {kind!r}")

    # --- code: projected values ---
    def value(self, d: int, node: Any, ns: str, expect: str, slot: int | None, depth: int) -> None:
        """A field the full decoder reads: its writer type must be what ``expect`` allows, else Unsupported."""
        resolved, rns = self.resolve(node, ns, depth)
        var = None if slot is None else f"s{slot}"
        if slot is not None:
            self.slots[slot] = var  # type: ignore[assignment]
        if expect in ("int", "kind", "bytes", "string"):
            primitive = ("int", "long") if expect in ("int", "kind") else (expect,)
            if not self._plain(resolved, *primitive):
                raise Unsupported(f"expected {expect}")
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
                raise Unsupported(f"expected {expect}")
            self.present(d, resolved, rns, expect, var, depth)
            return
        null_index, other = nullable
        other_node, other_ns = self.resolve(other, rns, depth + 1)
        if not self._accepts(expect, other_node):
            raise Unsupported(f"expected {expect}")
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
        raise Unsupported(f"expectation {expect!r}")

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
                    raise Unsupported("expected strings")
            elif not (self._plain(items, "long", "int") or self._nullable_long(items, items_ns, depth)):
                raise Unsupported("expected an array of nullable longs")
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
            raise Unsupported(f"expectation {expect!r}")

    def _nullable_long(self, node: Any, ns: str, depth: int) -> bool:
        nullable = self._nullable(node, ns, depth + 1)
        if nullable is None:
            return False
        other = self.resolve(nullable[1], ns, depth + 2)[0]
        return self._plain(other, "long", "int")

    def record(self, d: int, node: Any, ns: str, projection: list[Field], depth: int) -> None:
        if not isinstance(node, dict) or node.get("type") not in ("record", "error"):
            raise Unsupported("expected a record")
        name = node.get("name")
        key = name if isinstance(name, str) and "." in name else (f"{ns}.{name}" if ns else str(name))
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise Unsupported("record without fields")
        wanted = {f[0]: f for f in projection}
        seen: set[str] = set()
        self.expanding.add(key)
        for field in fields:
            if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
                raise Unsupported("bad field")
            fname = field["name"]
            if fname in seen:
                raise Unsupported("duplicate field")
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
                raise Unsupported(f"missing field {fname}")


Decoder = Callable[[bytes, int, Callable[[Any], None], int], int]
"""decode(buf, count, append, pos) -> the position after ``count`` records."""


def compile_decoder(
    schema_text: bytes, fields: list[Field], defaults: dict[int, Any], n_slots: int, make: Any, name: str
) -> Decoder | None:
    """The decoder of one writer schema for one projection; None if the schema is not handled (or invalid)."""
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
                raise Unsupported(f"no value for slot {slot}")
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
            "_varint": varint,
            "_skip_varint": skip_varint,
            "_ADD": FileKind.ADD,
            "_DELETE": FileKind.DELETE,
            "_make": make,
            "_LOGICAL": LOGICAL_READERS,
            **{f"_DEFAULT_{slot}": value for slot, value in defaults.items()},
        }
        exec(compile(source, f"<avro decoder {name}>", "exec"), namespace)  # generated above from the schema
        decoder: Decoder = namespace["decode"]
        return decoder
    except Exception:  # an unhandled or invalid schema: the full decoder decides
        return None
