"""Where a table's data files live: the one place that turns (partition, bucket, file name) into a path.

Paimon (Java ``FileStorePathFactory.bucketPath``, pypaimon 2.1.0 ``FileStorePathFactory``) puts a data file at
``<root>[/<data-file.path-directory>]/<k1>=<v1>/.../bucket-<n>/<file name>``: partition values named as
:func:`tableformat.model.partition.partition_path` names them (``partition.default-name`` for null or blank values,
``partition.legacy-name`` for dates), ``bucket-postpone`` for bucket -2. File names come from the metadata (their
prefix is ``data-file.prefix``) and are checked to be plain names.

Every path here is relative to the table root. Data outside the root is never tablefmt's to write or delete: a
``data-file.path-directory`` that leaves the root (absolute, another scheme, ``..``) is refused wherever a data path
is needed, and :func:`require_data_inside_root` refuses writes and deletions on tables whose options put data files
(or index files) outside the root (``data-file.external-paths`` and friends, ``global-index.external-path``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tableformat.codec.partition_codec import PartitionCodec
from tableformat.errors import UnsupportedFormatError
from tableformat.layout import BUCKET_PREFIX, TABLE_DIRS, bucket_dir_name, check_file_name
from tableformat.model.partition import partition_path
from tableformat.model.schema import TableSchema
from tableformat.options import (
    DATA_FILE_EXTERNAL_PATHS,
    DATA_FILE_EXTERNAL_PATHS_STRATEGY,
    DATA_FILE_PATH_DIRECTORY,
    GLOBAL_INDEX_EXTERNAL_PATH,
    PARTITION_DEFAULT_NAME,
    PARTITION_LEGACY_NAME,
    TableOptions,
)

if TYPE_CHECKING:
    from tableformat.codec.avro_projection import ScanEntry

RESERVED_DIRS = TABLE_DIRS
"""Directories of the table root that hold metadata: a data directory may not be (or start with) one of them."""

_UNSAFE_PART = re.compile(r"[\\\x00:]")


def _parse_directory(value: str) -> tuple[str, str | None]:
    """``data-file.path-directory`` normalised as Paimon resolves it against the root, and what is wrong with it
    (None when it is a plain directory inside the root that cannot be mistaken for one of the root's own)."""
    if not value.strip():
        return "", "is empty (Paimon refuses it too)"
    if value.startswith(("/", "\\")) or ":" in value.split("/", 1)[0]:
        return "", "puts data files outside the table root (an absolute path or another file system)"
    parts: list[str] = []
    for part in value.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return "", "puts data files outside the table root"
            parts.pop()
        elif _UNSAFE_PART.search(part) or "=" in part or part.startswith((BUCKET_PREFIX, ".")):
            return "", "names a partition, bucket, hidden or otherwise unusable directory"
        else:
            parts.append(part)
    if parts and parts[0] in RESERVED_DIRS:
        return "", f"puts data files into the table's {parts[0]}/ metadata directory"
    return "/".join(parts), None


def data_directory(options: TableOptions) -> str:
    """``data-file.path-directory`` as a normalised path relative to the table root ('' when unset).

    Raises UnsupportedFormatError when it is not a directory inside the root (absolute, with a scheme, leaving the
    root through ``..``), or when it would mix data with the root's own directories (a metadata directory, a
    ``k=v`` or ``bucket-`` directory, a hidden name).
    """
    value = options.get(DATA_FILE_PATH_DIRECTORY)
    if value is None:
        return ""
    directory, problem = _parse_directory(value)
    if problem is not None:
        raise UnsupportedFormatError(
            f"table option {DATA_FILE_PATH_DIRECTORY.key}={value!r} {problem}; tablefmt only handles data files "
            "inside the table root"
        )
    return directory


def outside_root_reason(options: TableOptions) -> str | None:
    """Why the table's options put data or index files outside the table root; None when they do not."""
    paths = options.get(DATA_FILE_EXTERNAL_PATHS)
    if paths is not None and any(p.strip() for p in paths.split(",")):
        return f"table option {DATA_FILE_EXTERNAL_PATHS.key}={paths!r} names data directories outside the table root"
    strategy = options.get(DATA_FILE_EXTERNAL_PATHS_STRATEGY)
    if strategy is not None and strategy.strip().lower() not in ("", "none"):
        return (
            f"table option {DATA_FILE_EXTERNAL_PATHS_STRATEGY.key}={strategy!r} writes data files outside the "
            "table root"
        )
    index_path = options.get(GLOBAL_INDEX_EXTERNAL_PATH)
    if index_path is not None and index_path.strip():
        return f"table option {GLOBAL_INDEX_EXTERNAL_PATH.key}={index_path!r} puts index files outside the table root"
    directory = options.get(DATA_FILE_PATH_DIRECTORY)
    problem = None if directory is None else _parse_directory(directory)[1]
    if problem is not None:
        return f"table option {DATA_FILE_PATH_DIRECTORY.key}={directory!r} {problem}"
    return None


def require_data_inside_root(options: TableOptions, where: str, action: str) -> None:
    """Refuse ``action`` (e.g. 'write to', 'expire snapshots of') on a table whose files may live outside its root.

    tablefmt never writes or deletes outside the table root, and it cannot see files there, so it neither writes such
    tables (files would not be where Paimon puts them) nor maintains them (orphans outside the root would go
    unseen). One line, raised as UnsupportedFormatError.
    """
    reason = outside_root_reason(options)
    if reason is not None:
        raise UnsupportedFormatError(
            f"{where}: {reason}; tablefmt does not {action} such tables (it never writes or deletes there)"
        )


def bucket_path(data_dir: str, partition_dir: str, bucket: int) -> str:
    """``[<data_dir>/][<partition_dir>/]bucket-<n>``: a bucket directory relative to the table root."""
    name = bucket_dir_name(bucket)
    if partition_dir:
        name = f"{partition_dir}/{name}"
    return f"{data_dir}/{name}" if data_dir else name


def file_in(bucket_dir: str, file_name: str) -> str:
    """``<bucket_dir>/<file_name>``, the name taken from metadata checked to be a plain file name."""
    return f"{bucket_dir}/{check_file_name(file_name, what='data file name')}"


class DataPaths:
    """Paths of one table's data files relative to its root (directories cached per partition and bucket)."""

    def __init__(self, schema: TableSchema, codec: PartitionCodec | None = None) -> None:
        options = TableOptions(schema.options)
        self.directory = data_directory(options)
        """``data-file.path-directory`` relative to the root ('' = the root itself)."""
        self.directory_depth = self.directory.count("/") + 1 if self.directory else 0
        """Path components of ``directory``: partition and bucket directories lie deeper."""
        self._fields = schema.partition_fields
        self._keys = schema.partition_keys
        self._codec = codec if codec is not None else PartitionCodec(schema)
        self._default_name = options.require(PARTITION_DEFAULT_NAME)
        self._legacy = options.require(PARTITION_LEGACY_NAME)
        self._dirs: dict[tuple[bytes, int], str] = {}

    @property
    def partitioned(self) -> bool:
        return bool(self._keys)

    def partition_dir(self, values: Sequence[object]) -> str:
        """``k1=v1/...`` for partition values in key order ('' for an unpartitioned table)."""
        return partition_path(values, self._fields, default_name=self._default_name, legacy_name=self._legacy)

    def bucket_dir_of_values(self, values: Sequence[object], bucket: int) -> str:
        """The bucket directory of a partition given by its values (in key order)."""
        return bucket_path(self.directory, self.partition_dir(values), bucket)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The bucket directory of a partition given as its binary row (as manifest entries hold it)."""
        key = (partition, bucket)
        cached = self._dirs.get(key)
        if cached is None:
            values: Mapping[str, object] = self._codec.values(partition)
            cached = self._dirs[key] = self.bucket_dir_of_values([values[k] for k in self._keys], bucket)
        return cached

    def file(self, partition: bytes, bucket: int, file_name: str) -> str:
        """The path of data file ``file_name`` of ``partition`` and ``bucket`` (the name is checked)."""
        return file_in(self.bucket_dir(partition, bucket), file_name)

    def file_of_values(self, values: Sequence[object], bucket: int, file_name: str) -> str:
        """``file`` for a partition given by its values (in key order), as a writer has it."""
        return file_in(self.bucket_dir_of_values(values, bucket), file_name)

    def of_entry(self, entry: ScanEntry) -> str:
        """Where a manifest entry's file lives inside the root. An entry with an external path has no such place:
        UnsupportedFormatError (callers that skip external files test ``entry.file.external_path`` first)."""
        if entry.file.external_path:
            raise UnsupportedFormatError(
                f"data file {entry.file.file_name} has an external path; tablefmt reads files inside the table root "
                "only"
            )
        return self.file(entry.partition, entry.bucket, entry.file.file_name)

    def extras_of(self, partition: bytes, bucket: int, names: Sequence[str]) -> tuple[str, ...]:
        """Paths of extra files (e.g. ``.index`` sidecars), which live next to their data file."""
        directory = self.bucket_dir(partition, bucket)
        return tuple(f"{directory}/{check_file_name(n, what='extra file name')}" for n in names)
