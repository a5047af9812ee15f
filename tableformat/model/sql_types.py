"""Column types as users spell them (Paimon's SQL spelling: ``BIGINT``, ``DECIMAL(10,2)``, ``TIMESTAMP(6)``,
``VARCHAR(20) NOT NULL``) and the type changes a schema change may make.

:func:`parse_sql_type` reads a type the way Paimon's ``DataTypeParser`` does (keywords in any case, Paimon's
aliases, its default lengths and precisions) into a :class:`DataType` written out as Paimon writes it
(``DECIMAL(10, 2)``, ``VARCHAR(2147483647)`` as ``STRING``). Nested types (``ARRAY<...>``, ``MAP<...>``,
``MULTISET<...>``, ``ROW<...>``) are recognised and refused in one line: tablefmt stores atomic types only.

:func:`widening_refusal` says why a column of one type cannot become another. Allowed are the changes that are
both in Paimon's implicit cast rules (Java ``DataTypeCasts.supportsCast(source, target, false)``, what
``disable-explicit-type-casting=true`` allows) and lossless for every value an older file holds, so that
tablefmt's and pypaimon's readers can cast old files exactly: a longer integer, a float to a double, a small
integer to a floating type that holds it exactly, an integer or decimal to a decimal with room for its digits,
a longer (VAR)CHAR or VARBINARY, a finer TIMESTAMP or TIME precision.
"""

from __future__ import annotations

import re

from tableformat.errors import SchemaChangeError
from tableformat.model.types import TYPE_ROOT_ALIASES, DataType

MAX_LENGTH = 2_147_483_647
"""Paimon's ``VarCharType.MAX_LENGTH`` / ``VarBinaryType.MAX_LENGTH``: ``STRING`` and ``BYTES``."""

NESTED_ROOTS = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB", "VECTOR"})

_ROOTS = {  # root names and aliases as Paimon parses them (multi-word forms: matched by the pattern)
    **{alias: root for alias, root in TYPE_ROOT_ALIASES.items() if " " not in alias},
    "DOUBLE PRECISION": "DOUBLE",
    "CHARACTER": "CHAR",
}

_PARAMS = {  # root: (least, most) count of parameters, and Paimon's defaults when none is spelled
    "DECIMAL": (0, 2, (10, 0)),
    "CHAR": (0, 1, (1,)),
    "VARCHAR": (0, 1, (1,)),
    "BINARY": (0, 1, (1,)),
    "VARBINARY": (0, 1, (1,)),
    "TIME": (0, 1, (0,)),
    "TIMESTAMP": (0, 1, (6,)),
    "TIMESTAMP_LTZ": (0, 1, (6,)),
}

_SYNTAX = re.compile(
    r"^(?P<root>[A-Z_]+(?:\s+PRECISION)?)\s*(?:\(\s*(?P<params>[^)]*)\)\s*)?"
    r"(?P<zone>WITHOUT\s+TIME\s+ZONE|WITH\s+LOCAL\s+TIME\s+ZONE)?\s*(?P<null>NOT\s+NULL|NULL)?$"
)

SUPPORTED_SPELLINGS = (
    "BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), STRING, BINARY(n), "
    "VARBINARY(n), BYTES, DATE, TIME(p), TIMESTAMP(p), TIMESTAMP(p) WITH LOCAL TIME ZONE, each optionally NOT NULL"
)


def parse_sql_type(text: str) -> DataType:
    """The type ``text`` spells (Paimon's SQL spelling); ValidationError, in one line, for anything else."""
    if not isinstance(text, str) or not text.strip():
        raise SchemaChangeError(f"a column type must be a non-empty string, got {text!r}")
    spelled = " ".join(text.strip().upper().split())
    head = re.match(r"[A-Z_]+", spelled)
    if head is not None and head.group(0) in NESTED_ROOTS:
        raise SchemaChangeError(
            f"column type {text.strip()!r}: {head.group(0)} is not supported, tablefmt stores atomic types only"
        )
    match = _SYNTAX.match(spelled)
    root = _ROOTS.get(match.group("root")) if match else None
    if match is None or root is None:
        raise SchemaChangeError(f"unknown column type {text.strip()!r}; types are {SUPPORTED_SPELLINGS}")
    zone = match.group("zone") or ""
    if zone.startswith("WITH ") and root == "TIMESTAMP":
        root = "TIMESTAMP_LTZ"
    elif zone and root not in ("TIMESTAMP", "TIME"):
        raise SchemaChangeError(f"column type {text.strip()!r}: {zone} applies to TIMESTAMP and TIME only")
    params = _parameters(text.strip(), root, match.group("params"))
    dtype = DataType(root, params, nullable=match.group("null") != "NOT NULL")
    if root == "VARCHAR" and params == (MAX_LENGTH,):
        dtype = DataType("STRING", (), dtype.nullable)
    elif root == "VARBINARY" and params == (MAX_LENGTH,):
        dtype = DataType("BYTES", (), dtype.nullable)
    return dtype


def _parameters(text: str, root: str, spelled: str | None) -> tuple[int, ...]:
    least, most, defaults = _PARAMS.get(root, (0, 0, ()))
    if spelled is None:
        return defaults
    parts = [p.strip() for p in spelled.split(",")]
    if not all(p.isdigit() for p in parts) or not least <= len(parts) <= most or not parts:
        takes = "no parameters" if most == 0 else f"at most {most} integer parameter(s)"
        raise SchemaChangeError(f"column type {text!r}: {root} takes {takes}")
    values = tuple(int(p) for p in parts)
    if root == "DECIMAL":
        precision, scale = values if len(values) == 2 else (values[0], 0)
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise SchemaChangeError(f"column type {text!r}: DECIMAL precision must be 1 to 38 and scale 0 to precision")
        return precision, scale
    if root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
        if values[0] > 9:
            raise SchemaChangeError(f"column type {text!r}: {root} precision must be 0 to 9")
        return values
    if not 1 <= values[0] <= MAX_LENGTH:
        raise SchemaChangeError(f"column type {text!r}: {root} length must be 1 to {MAX_LENGTH}")
    return values


# --- type changes ------------------------------------------------------------------------------------------------
_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_INTEGER_ORDER = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_EXACT_IN = {"FLOAT": ("TINYINT", "SMALLINT"), "DOUBLE": ("TINYINT", "SMALLINT", "INT", "FLOAT")}
_LENGTH = {"CHAR": None, "VARCHAR": None, "STRING": MAX_LENGTH, "BINARY": None, "VARBINARY": None, "BYTES": MAX_LENGTH}


def _length(dtype: DataType) -> int:
    fixed = _LENGTH[dtype.root]
    return fixed if fixed is not None else (dtype.params[0] if dtype.params else 1)


def _widens(source: DataType, target: DataType) -> bool:
    s, t = source.root, target.root
    if s in _INTEGER_DIGITS and t in _INTEGER_DIGITS:
        return _INTEGER_ORDER.index(s) <= _INTEGER_ORDER.index(t)
    if t in _EXACT_IN:
        return s == t or s in _EXACT_IN[t]
    if t == "DECIMAL" and s in _INTEGER_DIGITS:
        return target.precision - target.scale >= _INTEGER_DIGITS[s]
    if t == "DECIMAL" and s == "DECIMAL":
        return target.scale >= source.scale and target.precision - target.scale >= source.precision - source.scale
    if (s in ("CHAR", "VARCHAR", "STRING") and t in ("VARCHAR", "STRING")) or (s, t) == ("CHAR", "CHAR"):
        return _length(target) >= _length(source)
    if s in ("BINARY", "VARBINARY", "BYTES") and t in ("VARBINARY", "BYTES"):
        return _length(target) >= _length(source)
    if s == t and s in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return target.precision >= source.precision
    return (s, source.params) == (t, target.params)


def widening_refusal(column: str, source: DataType, target: DataType) -> str | None:
    """Why column ``column`` of type ``source`` cannot become ``target`` (its nullability aside); None when it can."""
    if _widens(source, target):
        return None
    plain_source, plain_target = DataType(source.root, source.params), DataType(target.root, target.params)
    return (
        f"column {column!r} cannot change type from {plain_source} to {plain_target}: only widening type changes "
        "are allowed (a longer integer, FLOAT to DOUBLE, a DECIMAL with room for every digit, a longer string or "
        "binary, a finer TIMESTAMP precision)"
    )
