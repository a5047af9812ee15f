"""Data-file candidates that do not fit the memory budget, on local disk: a hash-partitioned anti-join.

A table with millions of data files has millions of candidates, and each referenced name is known only while the
manifests are read, after the census. Rather than hold every candidate until then, :class:`SpilledCandidates`
writes them to ``BUCKETS`` bucket files by the hash of their name, in chunks, and writes every name discarded from
then on to the reference file of the same bucket. The survivors are then found one bucket at a time: its
candidates loaded into a dict, the names of its reference file dropped, the rest yielded (a Grace hash anti-join).
Memory then holds one bucket's candidates and references, 1/``BUCKETS`` of the spilled ones, never all of them.

A hash join rather than sorted runs: nothing needs an order, a bucket is read once, and writing a candidate or a
discarded name is an append to one file (no merge of runs). The hash is the CRC-32 of the name, not Python's
``hash`` (random between processes): the survivors come out in the same order in every process, so that a run
limited by ``orphan-files.max-files`` takes the same orphans as a dry run of the same table before it.

The files are in a private temporary directory (``tempfile.mkdtemp``, local disk, never inside the table root),
removed by :meth:`SpilledCandidates.close` or, at the latest, when the object is collected or the process exits.
Any failure to write or read them raises MaintenanceError: a candidate whose references cannot be matched is never
called an orphan. Each bucket's file must give back exactly the chunks and entries written to it.
"""

from __future__ import annotations

import marshal
import os
import shutil
import tempfile
import weakref
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from tableformat.errors import MaintenanceError

Marshallable = (
    tuple[list[str], list[int]]
    | tuple[list[str], list[int], list[int]]
    | list[str]
    | list[tuple[str, str, int | None, str]]
)
"""What a chunk is: lists of names and packed ints, or of relative paths, sizes and mtimes, or of names; or
``check``'s references (path, kind, recorded size, referenced by)."""

BUCKETS = 128
"""Bucket files of a spill. Reading one back holds 1/128 of the spilled candidates: as many as the default budget
of 500,000 candidates in memory only past 64 million spilled ones."""
REFERENCE_CHUNK = 200_000
"""Discarded names buffered in memory before they are appended to the bucket reference files."""

_SPILL_PREFIX = "tablefmt-orphans-"


def spill_directory() -> str:
    """A new private temporary directory for spill files; MaintenanceError when none can be made."""
    try:
        return tempfile.mkdtemp(prefix=_SPILL_PREFIX)
    except OSError as exc:
        raise _stop("cannot create a temporary directory for spill files", exc) from exc


def _stop(what: str, exc: BaseException) -> MaintenanceError:
    return MaintenanceError(f"orphan cleanup stopped, nothing was deleted: {what}: {type(exc).__name__} {exc}")


class ChunkFile:
    """One append-only file of marshalled chunks (lists of strings and ints), with the counts written, to check
    what is read back."""

    __slots__ = ("chunks", "entries", "path", "what")

    def __init__(self, path: str, what: str = "the candidates' spill file") -> None:
        self.path = path
        self.what = what
        self.chunks = 0
        self.entries = 0

    def append(self, chunk: Marshallable, entries: int) -> None:
        try:
            with open(self.path, "ab") as out:
                marshal.dump(chunk, out)
        except (OSError, ValueError) as exc:
            raise _stop(f"cannot write {self.what} {self.path}", exc) from exc
        self.chunks += 1
        self.entries += entries

    def chunks_read(self) -> Iterator[object]:
        """Every chunk written, in order; MaintenanceError when the file does not give back exactly those."""
        if not self.chunks:
            return
        try:
            with open(self.path, "rb") as source:
                size = os.fstat(source.fileno()).st_size
                for _ in range(self.chunks):
                    yield marshal.load(source)
                if source.tell() != size:
                    raise ValueError(f"{size - source.tell()} bytes after the {self.chunks} chunks written")
        except (OSError, EOFError, ValueError, TypeError) as exc:
            raise _stop(f"cannot read back {self.what} {self.path}", exc) from exc

    def pairs_read(self) -> Iterator[tuple[str, int]]:
        """Every (key, int) pair :meth:`BucketFiles.append_pairs` wrote here, in order; MaintenanceError, once read
        to the end, when the file gave back other chunks or another number of pairs than written."""
        read = 0
        for chunk in self.chunks_read():
            keys, values = pair_chunk(chunk, self.path)
            read += len(keys)
            yield from zip(keys, values)
        self._require_entries(read)

    def items_read(self) -> Iterator[Any]:
        """Every item :meth:`BucketFiles.buffer` wrote here, in order; MaintenanceError likewise."""
        read = 0
        for chunk in self.chunks_read():
            if not isinstance(chunk, list):
                raise _stop(f"the spill file {self.path} holds", TypeError("a chunk that is not a list"))
            read += len(chunk)
            yield from chunk
        self._require_entries(read)

    def _require_entries(self, read: int) -> None:
        if read != self.entries:
            raise _stop(f"the spill file {self.path} gave back", ValueError("other entries than written"))


class SpillDirectory:
    """A private temporary directory of spill files (:func:`spill_directory`), removed by :meth:`close`, when the
    object is collected, or at exit."""

    def __init__(self) -> None:
        self.directory = spill_directory()
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.directory, True)

    def bucket_files(self, stem: str, what: str) -> BucketFiles:
        return BucketFiles(self.directory, stem, what)

    def close(self) -> None:
        """Remove the spill files (also done when the object is collected, or at exit)."""
        self._cleanup()


def bucket_of(key: str) -> int:
    """The bucket of ``key``: the same in every process (the CRC-32 of its UTF-8 bytes)."""
    return zlib.crc32(key.encode("utf-8", "surrogateescape")) % BUCKETS


class BucketFiles:
    """``BUCKETS`` chunk files ``<stem>-<n>``, an entry going to the file of its key's hash: pairs (key, int) are
    appended one chunk per bucket at once; single items are buffered and appended once ``REFERENCE_CHUNK`` are held
    (and at :meth:`flush`)."""

    def __init__(self, directory: str, stem: str, what: str) -> None:
        self.files = [ChunkFile(os.path.join(directory, f"{stem}-{n}"), what) for n in range(BUCKETS)]
        self._buffer: list[list[Any]] = [[] for _ in range(BUCKETS)]
        self._buffered = 0

    def append_pairs(self, pairs: Iterable[tuple[str, int]]) -> int:
        """Append the pairs, a chunk (keys, values) per bucket; returns how many were written."""
        keys: list[list[str]] = [[] for _ in range(BUCKETS)]
        values: list[list[int]] = [[] for _ in range(BUCKETS)]
        for key, value in pairs:
            bucket = bucket_of(key)
            keys[bucket].append(key)
            values[bucket].append(value)
        written = 0
        for bucket, file in enumerate(self.files):
            if keys[bucket]:
                file.append((keys[bucket], values[bucket]), len(keys[bucket]))
                written += len(keys[bucket])
        return written

    def buffer(self, key: str, item: str | tuple[str, str, int | None, str]) -> None:
        self._buffer[bucket_of(key)].append(item)
        self._buffered += 1
        if self._buffered >= REFERENCE_CHUNK:
            self.flush()

    def flush(self) -> None:
        for bucket, items in enumerate(self._buffer):
            if items:
                self.files[bucket].append(items, len(items))
                self._buffer[bucket] = []
        self._buffered = 0


class SpilledCandidates(SpillDirectory):
    """Candidates (name, packed int) spilled to bucket files, and the names discarded since the first spill."""

    def __init__(self) -> None:
        super().__init__()
        self._candidates = self.bucket_files("candidates", "the candidates' spill file")
        self._references = self.bucket_files("references", "the candidates' spill file")
        self.spilled = 0
        """Candidate entries written (a name in several directories counts once per directory)."""

    def spill(self, entries: Iterator[tuple[str, int]]) -> None:
        """Append ``entries`` (name, packed int) to their buckets, one chunk per bucket."""
        self.spilled += self._candidates.append_pairs(entries)

    def discard(self, name: str) -> None:
        """Record that ``name`` is referenced: no spilled candidate of that name survives."""
        self._references.buffer(name, name)

    def flush(self) -> None:
        self._references.flush()

    def survivors(self) -> Iterator[tuple[str, list[int]]]:
        """Every spilled name no discard named, with its packed values (one per directory), bucket by bucket."""
        self.flush()
        for candidates, references in zip(self._candidates.files, self._references.files):
            by_name: dict[str, list[int]] = {}
            for name, packed in candidates.pairs_read():
                by_name.setdefault(name, []).append(packed)
            for name in references.items_read():
                by_name.pop(name, None)
            yield from by_name.items()


def pair_chunk(chunk: object, path: str) -> tuple[list[str], list[int]]:
    """A chunk of pairs as :meth:`BucketFiles.append_pairs` wrote it: (keys, ints); MaintenanceError otherwise."""
    if not (isinstance(chunk, tuple) and len(chunk) == 2 and all(isinstance(part, list) for part in chunk)):
        raise _stop(f"the spill file {path} holds", TypeError("a chunk that is not (keys, values)"))
    names, values = chunk
    if len(names) != len(values):
        raise _stop(f"the spill file {path} holds", ValueError("a chunk of unequal lists"))
    return names, values
