"""What ``tablefmt maintain TARGET...`` maintains: a table, or every table of a Paimon filesystem warehouse.

A warehouse is ``WAREHOUSE/<db>.db/<table>/`` with ``schema/`` in each table (Paimon's filesystem catalog), local or
on an object store; a ``<db>.db`` directory may be given alone. Discovery runs on every pass, so tables created or
dropped meanwhile are picked up. Nothing here reads a file: it lists directories only (and, for a target whose
listing is empty, asks whether it exists: a target that does not exist is refused, an empty directory holds no
table).
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tableformat.errors import TargetNotFoundError, ValidationError
from tableformat.io.factory import open_location
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.layout import SCHEMA_PREFIX, TableLayout, parse_id

DATABASE_SUFFIX = ".db"


@dataclass(frozen=True, slots=True)
class TableTarget:
    """One table to maintain."""

    name: str
    """``db.table`` for a table found in a warehouse; the location as given for a table named directly."""
    location: str
    """The table root as a URL (``s3://bucket/wh/db.db/t`` or a local path)."""
    schema_id: int | None = field(default=None, compare=False)
    """The newest schema id seen by discovery (saves the pass its own listing of ``schema/``); None: unknown."""


Opener = Callable[[str, dict[str, Any]], tuple[FileIO, str]]
"""How a location becomes a FileIO and root (``open_location``; tests and benches wrap it to count calls)."""


class SharedOpener:
    """``open_location`` handing out one FileIO per storage scheme and options: discovery and every table of a
    maintainer share one S3 client (each new client costs about 75 ms of CPU before its first request). A FileIO
    does not depend on the location it was opened for (the root does), and it serves many threads at once."""

    def __init__(self) -> None:
        self._opened: dict[tuple[str, str], FileIO] = {}
        self._lock = threading.Lock()

    def __call__(self, location: str, storage_options: dict[str, Any]) -> tuple[FileIO, str]:
        file_io, root = open_location(location, storage_options)
        key = (file_io.scheme, repr(sorted(storage_options.items())))
        with self._lock:
            return self._opened.setdefault(key, file_io), root


def _schema_ids(file_io: FileIO, root: str) -> list[int]:
    ids = (parse_id(name, SCHEMA_PREFIX) for name in file_io.list_names(TableLayout(root).schema_dir))
    return sorted(i for i in ids if i is not None)


def _subdirs(children: list[FileInfo]) -> list[str]:
    return sorted(info.name for info in children if info.is_dir and not info.name.startswith((".", "_")))


def _tables_of_database(
    file_io: FileIO, db_path: str, db_name: str, children: list[FileInfo] | None = None
) -> list[TableTarget]:
    found = []
    for name in _subdirs(file_io.list_dir(db_path) if children is None else children):
        root = f"{db_path.rstrip('/')}/{name}"
        schema_ids = _schema_ids(file_io, root)
        if schema_ids:
            found.append(TableTarget(name=f"{db_name}.{name}", location=file_io.url(root), schema_id=schema_ids[-1]))
    return found


def _neither(target: str) -> ValidationError:
    return ValidationError(f"{target}: neither a table (no schema/) nor a warehouse (no <db>.db directory)")


def discover(
    target: str, storage_options: Mapping[str, Any] | None = None, opener: Opener = open_location
) -> list[TableTarget]:
    """The tables ``target`` names: itself when it is a table, else the tables of its databases.

    TargetNotFoundError when nothing is there (a typo must not silently maintain nothing; on object stores: no
    object below the prefix); an existing empty directory holds no table. ValidationError when it is something
    else: a file, or a directory holding neither ``schema/`` nor a ``*.db`` directory.
    """
    file_io, root = opener(target, dict(storage_options or {}))
    schema_ids = _schema_ids(file_io, root)
    if schema_ids:
        return [TableTarget(name=target.rstrip("/"), location=target.rstrip("/"), schema_id=schema_ids[-1])]
    children = file_io.list_dir(root)
    if not children:  # two more requests, only here: does the (empty) directory exist, or is it a file?
        if not file_io.exists(root):
            raise TargetNotFoundError(f"{target}: does not exist")
        if file_io.stat_file(root) is not None:
            raise _neither(target)
        return []
    base = root.rstrip("/").rsplit("/", 1)[-1]
    if base.endswith(DATABASE_SUFFIX):
        return _tables_of_database(file_io, root, base[: -len(DATABASE_SUFFIX)], children)
    databases = [d for d in _subdirs(children) if d.endswith(DATABASE_SUFFIX)]
    if not databases:
        raise _neither(target)
    tables: list[TableTarget] = []
    for db in databases:
        tables += _tables_of_database(file_io, f"{root.rstrip('/')}/{db}", db[: -len(DATABASE_SUFFIX)])
    return tables


def discover_all(
    targets: Iterable[str],
    storage_options: Mapping[str, Any] | None = None,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    opener: Opener = open_location,
) -> list[TableTarget]:
    """Every table of every target, filtered by the include/exclude globs (matched against name and location),
    each once, in a stable order."""
    seen: dict[str, TableTarget] = {}
    for target in targets:
        for table in discover(target, storage_options, opener):
            if include and not any(matches(pattern, table) for pattern in include):
                continue
            if any(matches(pattern, table) for pattern in exclude):
                continue
            seen.setdefault(table.location, table)
    return list(seen.values())


def matches(pattern: str, table: TableTarget) -> bool:
    """Whether a glob names the table (``db.*``, ``*.events``, or a location glob)."""
    return fnmatch.fnmatchcase(table.name, pattern) or fnmatch.fnmatchcase(table.location, pattern)
