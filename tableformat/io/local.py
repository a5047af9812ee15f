"""Local-disk FileIO: atomic create by hard link, atomic replace by rename of a temp file."""

from __future__ import annotations

import errno
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from stat import S_ISDIR
from typing import IO, Any

from tableformat.errors import DeleteFailedError
from tableformat.io.fileio import UNKNOWN, FileInfo, FileIO
from tableformat.threads import thread_pool

# How often a write makes its directory again when another process removes it as empty (remove_empty_dir) in between
_EMPTIED_DIR_RETRIES = 5


def temp_name_for(path: str) -> str:
    """Paimon's temp-file pattern ``.<name>.<uuid>.tmp`` in the same directory (orphan cleanup knows it)."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")


_NO_DIRECTORY_FSYNC = frozenset(
    {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF, errno.EISDIR, errno.EACCES, errno.EPERM}
)
"""What a filesystem answers when it cannot open or fsync a directory at all (not a failure to write it)."""


def _fsync_dir(directory: str, *, strict: bool = False) -> None:
    """fsync a directory (its entries). Skipped where the filesystem cannot fsync a directory, or the directory is
    gone; any other failure (EIO) is raised when ``strict``, else ignored."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as exc:
        if strict and exc.errno not in _NO_DIRECTORY_FSYNC and exc.errno != errno.ENOENT:
            raise
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if strict and exc.errno not in _NO_DIRECTORY_FSYNC:
            raise
    finally:
        os.close(fd)


def _fsync_strict_dir(directory: str) -> None:
    _fsync_dir(directory, strict=True)


def _fsync_file(path: str) -> None:
    """fsync a file written earlier (through another descriptor: fsync flushes the file, not the descriptor)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


SYNC_THREADS = 8
"""Threads that fsync a sync call's files and directories at once: each call waits on the device, not on the GIL,
and the filesystem commits concurrent ones together (a commit's dozen fsyncs cost about half their serial time)."""

_sync_pool: ThreadPoolExecutor | None = None
_sync_pool_lock = threading.Lock()


def _syncing_threads() -> ThreadPoolExecutor:
    """The process's fsync threads, started on first use and kept (a commit would pay more to start them)."""
    global _sync_pool
    with _sync_pool_lock:
        if _sync_pool is None:
            _sync_pool = thread_pool(SYNC_THREADS, "tablefmt-sync")
        return _sync_pool


def _forget_syncing_threads() -> None:
    """In a forked child: the parent's threads are not there; the child starts its own on first use."""
    global _sync_pool, _sync_pool_lock
    _sync_pool, _sync_pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_syncing_threads)


def _scan(path: str, *, stat_files: bool) -> list[FileInfo]:
    """The entries of a directory; files carry size and mtime only with ``stat_files`` (else UNKNOWN)."""
    result = []
    try:
        with os.scandir(path) as entries:  # one entry at a time: a stat'ed entry holds its stat result
            for entry in entries:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and not stat_files:
                    result.append(FileInfo(entry.path, UNKNOWN, UNKNOWN))
                    continue
                try:
                    stat = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while listing
                result.append(FileInfo(entry.path, stat.st_size, stat.st_mtime_ns // 1_000_000, is_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return result


def replace_text_file(path: str, text: str, *, prefix: str, suffix: str = "") -> None:
    """Replace the local file ``path`` with ``text`` atomically, for files users read (a report page, a metrics
    file): a ``prefix``-named temp file in the same directory, mode 0644, renamed over ``path``; removed on failure."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


READ_CHUNK = 1 << 20
"""Bytes per read call of read_bytes."""


class LocalFileIO(FileIO):
    """FileIO over the local filesystem (POSIX semantics)."""

    scheme = "file"
    atomic_create = True
    is_object_store = False
    latency_bound = False

    def read_bytes(self, path: str) -> bytes:
        # os.read without a buffered file object: half the cost for the small metadata files maintenance reads
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            chunks: list[bytes] = []
            while True:
                chunk = os.read(fd, READ_CHUNK)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
        finally:
            os.close(fd)

    def _write_temp(self, path: str, data: bytes, *, sync: bool) -> str:
        temp = temp_name_for(path)
        for attempt in range(_EMPTIED_DIR_RETRIES):
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                handle = open(temp, "wb")  # noqa: SIM115 - closed below; opening alone is retried
            except (FileNotFoundError, FileExistsError):
                # another process removed the (then empty) directory between makedirs and open, or inside makedirs
                # (FileExistsError: it found the directory, then saw it gone when it checked it was one): again
                if attempt == _EMPTIED_DIR_RETRIES - 1:
                    raise
                continue
            with handle:
                handle.write(data)
                if sync:
                    handle.flush()
                    os.fsync(handle.fileno())
            return temp
        raise AssertionError("unreachable")

    def sync(self, files: Sequence[str], directories: Sequence[str] = ()) -> None:
        calls = [(_fsync_file, path) for path in files] + [(_fsync_strict_dir, path) for path in directories]
        if len(calls) <= 1:
            for fsync, path in calls:
                fsync(path)
            return
        pool = _syncing_threads()
        futures = [pool.submit(fsync, path) for fsync, path in calls]
        errors = [error for error in (f.exception() for f in futures) if error is not None]  # every call ended
        if errors:
            raise errors[0]

    def write_bytes(self, path: str, data: bytes) -> None:
        temp = self._write_temp(path, data, sync=False)
        try:
            os.replace(temp, path)
        except BaseException:
            self._discard(temp)
            raise

    def write_if_absent(self, path: str, data: bytes) -> bool:
        temp = self._write_temp(path, data, sync=True)
        try:
            os.link(temp, path)
        except FileExistsError:
            # On NFS a retransmitted link can report EEXIST although it was applied: two links = ours.
            won = os.stat(temp).st_nlink == 2
            self._discard(temp)
            return won
        except BaseException:
            self._discard(temp)
            raise
        self._discard(temp)
        _fsync_dir(os.path.dirname(path))
        return True

    @staticmethod
    def _discard(temp: str) -> None:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        return _scan(path, stat_files=True)

    def list_dir_without_file_stats(self, path: str) -> list[FileInfo]:
        return _scan(path, stat_files=False)

    def stat_file(self, path: str) -> FileInfo | None:
        try:
            stat = os.stat(path, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if S_ISDIR(stat.st_mode):
            return None
        return FileInfo(path, stat.st_size, stat.st_mtime_ns // 1_000_000)

    def list_names(self, path: str) -> list[str]:
        try:
            with os.scandir(path) as entries:
                return [entry.name for entry in entries if not entry.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        for info in self.list_dir(path):
            if info.is_dir:
                yield from self.walk_files(info.path)
            else:
                yield info

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        deleted: list[str] = []
        failures: list[str] = []
        for path in paths:
            try:
                os.unlink(path)  # never removes a directory (EISDIR on Linux, EPERM on macOS)
            except FileNotFoundError:
                continue
            except OSError as exc:
                is_dir = os.path.isdir(path) and not os.path.islink(path)
                failures.append(f"{path}: is a directory" if is_dir else f"{path}: {exc.strerror or exc}")
                continue
            deleted.append(path)
        if failures:
            raise DeleteFailedError(f"could not delete {len(failures)} file(s): {failures[0]}", deleted, failures)
        return deleted

    def remove_empty_dir(self, path: str) -> bool:
        try:
            os.rmdir(path)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR, errno.EBUSY):
                return False
            raise
        return True

    def open_input(self, path: str) -> IO[bytes]:
        return open(path, "rb")

    def file_size(self, path: str) -> int:
        return os.stat(path).st_size

    def mkdirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def arrow_filesystem(self, sizes: Mapping[str, int] | None = None) -> Any:
        from pyarrow.fs import LocalFileSystem  # asks the kernel for sizes: nothing to save

        return LocalFileSystem()

    def fsspec_filesystem(self) -> Any:
        from fsspec.implementations.local import LocalFileSystem

        return LocalFileSystem()
