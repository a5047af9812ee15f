"""Paimon data types as they are spelled in schema JSON ("BIGINT", "DECIMAL(10, 2)", "STRING NOT NULL")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tableformat.errors import UnsupportedFormatError

# Root names tablefmt reads and writes, with the aliases Paimon accepts when parsing.
TYPE_ROOT_ALIASES = {
    "BOOLEAN": "BOOLEAN",
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DECIMAL": "DECIMAL",
    "NUMERIC": "DECIMAL",
    "DEC": "DECIMAL",
    "CHAR": "CHAR",
    "VARCHAR": "VARCHAR",
    "STRING": "STRING",
    "BINARY": "BINARY",
    "VARBINARY": "VARBINARY",
    "BYTES": "BYTES",
    "DATE": "DATE",
    "TIME": "TIME",
    "TIMESTAMP": "TIMESTAMP",
    "TIMESTAMP_LTZ": "TIMESTAMP_LTZ",
    "TIMESTAMP WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ",
}

STRING_ROOTS = frozenset({"CHAR", "VARCHAR", "STRING"})
BINARY_ROOTS = frozenset({"BINARY", "VARBINARY", "BYTES"})
INTEGER_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT"})
TIMESTAMP_ROOTS = frozenset({"TIMESTAMP", "TIMESTAMP_LTZ"})

_TYPE = re.compile(
    r"^\s*(?P<root>TIMESTAMP\s+WITH\s+LOCAL\s+TIME\s+ZONE|TIMESTAMP\(\d+\)\s+WITH\s+LOCAL\s+TIME\s+ZONE|[A-Z_]+)"
    r"\s*(?:\((?P<params>[\d\s,]+)\))?\s*(?P<notnull>NOT\s+NULL)?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DataType:
    """An atomic Paimon type: root name, parameters (length/precision/scale) and nullability."""

    root: str
    params: tuple[int, ...] = ()
    nullable: bool = True

    @staticmethod
    def parse(text: object) -> DataType:
        """Parse a schema-JSON type; complex (ARRAY/MAP/ROW) types are reported as unsupported."""
        if not isinstance(text, str):
            raise UnsupportedFormatError(
                f"unsupported (non-atomic) column type {text!r}: tablefmt reads atomic types only"
            )
        match = _TYPE.match(text)
        if not match:
            raise UnsupportedFormatError(f"unsupported column type {text!r}")
        root_text = " ".join(match.group("root").upper().split())
        params: tuple[int, ...] = ()
        if match.group("params"):
            params = tuple(int(p) for p in match.group("params").split(","))
        ltz = re.match(r"TIMESTAMP\((\d+)\) WITH LOCAL TIME ZONE", root_text)
        if ltz:
            root_text, params = "TIMESTAMP_LTZ", (int(ltz.group(1)),)
        root = TYPE_ROOT_ALIASES.get(root_text)
        if root is None:
            raise UnsupportedFormatError(f"unsupported column type {text!r}")
        return DataType(root, params, nullable=match.group("notnull") is None)

    def __str__(self) -> str:
        text = self.root
        if self.params:
            text += "(" + ", ".join(str(p) for p in self.params) + ")"
        return text if self.nullable else text + " NOT NULL"

    @property
    def precision(self) -> int:
        """Precision of DECIMAL / TIMESTAMP / TIME (Paimon defaults when unspelled)."""
        if self.params:
            return self.params[0]
        return {"DECIMAL": 10, "TIMESTAMP": 6, "TIMESTAMP_LTZ": 6, "TIME": 0}.get(self.root, 0)

    @property
    def scale(self) -> int:
        """Scale of a DECIMAL."""
        return self.params[1] if len(self.params) > 1 else 0
