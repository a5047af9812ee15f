"""S3 FileIO: conditional-PUT commits, cache-free metadata reads and verified bulk deletes.

Commits rely on ``PutObject`` with ``If-None-Match: *`` (see docs/s3.md). Every metadata read goes to the store
itself: the s3fs filesystem is built without a listings cache and listings are issued as raw ListObjectsV2 calls.
No credential ever appears in an exception, log line or repr produced here.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any, Concatenate, ParamSpec, TypeVar

from tableformat.errors import DeleteFailedError, StorageError
from tableformat.io.fileio import FileInfo
from tableformat.io.fsspec_io import FsspecFileIO, mtime_ms_of
from tableformat.io.pacing import RequestPacer, common_prefix_of, is_throttle, is_transient
from tableformat.io.pacing import error_code as _error_code
from tableformat.io.scrubbing import Scrubber, call_scrubbed
from tableformat.threads import thread_pool

_log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

CREATE_ATTEMPTS = 5  # conditional PUTs per write_if_absent before the outcome is declared unknown
DELETE_BATCH = 1000  # DeleteObjects accepts at most 1,000 keys per request
CONCURRENCY = 8  # parallel HEAD / LIST / DeleteObjects requests of one delete_files call
LIST_MIN_KEYS = 4  # delete_files lists a directory from this many requested keys in it, else HEADs each
KEYS_PER_LIST_PAGE = 100  # delete_files' listing budget: one page per this many requested keys of a directory

_UNKNOWN_OUTCOME_STATUS = (408, 409, 412, 429)


def split_path(path: str) -> tuple[str, str]:
    """('bucket', 'a/b') for 'bucket/a/b' or 's3://bucket/a/b/'; the key has no leading or trailing slash."""
    rest = path.split("://", 1)[1] if "://" in path else path
    bucket, _, key = rest.strip("/").partition("/")
    return bucket, key.strip("/")


def is_exists_error(exc: BaseException) -> bool:
    """A refused conditional PUT: s3fs maps 412 to FileExistsError only when the server names the condition."""
    code, status = _error_code(exc)
    return isinstance(exc, FileExistsError) or code == "PreconditionFailed" or status == 412


def is_definite_failure(exc: BaseException) -> bool:
    """Refused before taking effect (4xx such as AccessDenied, NoSuchBucket); timeouts, 5xx, 408/409/429 are not."""
    _code, status = _error_code(exc)
    if status:
        return 400 <= status < 500 and status not in _UNKNOWN_OUTCOME_STATUS
    return isinstance(exc, (PermissionError, FileNotFoundError, ValueError, TypeError))


def _just_before(key: str) -> str:
    """A string sorting shortly before ``key`` (for StartAfter): 'd/f04' for 'd/f05', else 'd/f0'."""
    last = key[-1]
    if " " < last <= "~":
        return key[:-1] + chr(ord(last) - 1)
    return key[:-1]


def _scrubbed(method: Callable[Concatenate[S3FileIO, P], T]) -> Callable[Concatenate[S3FileIO, P], T]:
    """Run a public method with credentials removed from whatever it raises."""

    def wrapper(self: S3FileIO, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return call_scrubbed(self._scrubber, method, self, *args, **kwargs)

    functools.update_wrapper(wrapper, method)
    return wrapper


class S3FileIO(FsspecFileIO):
    """FileIO over s3fs for AWS S3 and compatible stores that honour ``If-None-Match: *`` on PutObject."""

    scheme = "s3"
    atomic_create = True
    is_object_store = True
    bulk_delete = True

    list_page_size: int = 1000
    """MaxKeys of every ListObjectsV2 request (tests lower it to exercise paging)."""

    def __init__(self, fs: Any, storage_options: dict[str, Any] | None = None) -> None:
        super().__init__(fs, "s3", storage_options)
        self._scrubber = Scrubber.for_options(self._storage_options, fs)
        if getattr(fs, "pacer", None) is None:  # a plain s3fs filesystem: DeleteObjects keys are still retried
            fs.pacer = RequestPacer()

    @property
    def pacer(self) -> RequestPacer:
        """Retries and per-prefix concurrency of this FileIO's requests (io/pacing.py), the filesystem's."""
        pacer: RequestPacer = self.fs.pacer
        return pacer

    @pacer.setter
    def pacer(self, pacer: RequestPacer) -> None:
        self.fs.pacer = pacer

    @classmethod
    def create(cls, storage_options: dict[str, Any]) -> S3FileIO:
        """Build the s3fs filesystem without listings cache or instance sharing (io/s3_client.py: less CPU per
        request).

        Options not given here are taken by s3fs itself from fsspec's config (``FSSPEC_S3_*``) and botocore's
        usual credential chain.
        """
        from tableformat.io.s3_client import new_filesystem

        options = dict(storage_options)
        return cls(call_scrubbed(Scrubber.for_options(options), new_filesystem, options), options)

    def __repr__(self) -> str:
        endpoint = getattr(self.fs, "endpoint_url", None) or "default"
        return f"S3FileIO(endpoint_url={self._scrubber.text(str(endpoint))!r})"

    def storage_options(self) -> dict[str, Any]:
        """The options given to :meth:`create`, credentials included: ship them, never log them."""
        return dict(self._storage_options)

    def _message(self, exc: BaseException) -> str:
        return self._scrubber.text(f"{type(exc).__name__}: {exc}")

    @_scrubbed
    def read_bytes(self, path: str) -> bytes:
        # max_concurrency=1: one GET, hence one consistent object version, and no HEAD first.
        data: bytes = self.fs.cat_file(path, max_concurrency=1)
        return data

    read_range = _scrubbed(FsspecFileIO.read_range)  # one GET with a Range header (bounds >= 0: no HEAD for the size)

    @_scrubbed
    def file_size(self, path: str) -> int:
        bucket, key = split_path(path)
        return int(self.fs.call_s3("head_object", Bucket=bucket, Key=key)["ContentLength"])

    @_scrubbed
    def open_input(self, path: str) -> IO[bytes]:
        return super().open_input(path)

    @_scrubbed
    def exists(self, path: str) -> bool:
        """HEAD the key; if there is no such object, whether anything lies below ``path/`` (a "directory")."""
        bucket, key = split_path(path)
        if not key:
            try:
                self.fs.call_s3("head_bucket", Bucket=bucket)
            except FileNotFoundError:
                return False
            return True
        return self._is_object(bucket, key) or self._has_children(bucket, key)

    @_scrubbed
    def stat_file(self, path: str) -> FileInfo | None:
        """One HEAD of the key (not a listing of its parent): its size and mtime, or None when no object has that key
        (a prefix with objects below is not a file)."""
        bucket, key = split_path(path)
        if not key:
            return None
        try:
            head = self.fs.call_s3("head_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            return None
        size = int(head.get("ContentLength") or 0)
        return FileInfo(f"{bucket}/{key}", size, mtime_ms_of(head), False, str(head.get("ETag") or ""))

    @_scrubbed
    def file_exists(self, path: str) -> bool:
        """One HEAD of the key (a prefix with objects below is not a file)."""
        bucket, key = split_path(path)
        return bool(key) and self._is_object(bucket, key)

    def list_names_with_prefix(self, path: str, prefix: str) -> list[str]:
        """One ListObjectsV2 with ``Prefix=<dir>/<prefix>`` (per 1,000 matches), whatever else the directory holds."""
        bucket, key = split_path(path)
        base = f"{key}/" if key else ""
        names: list[str] = []
        try:
            for page in self._pages(bucket, base + prefix, delimiter="/"):
                names += [e["Key"][len(base) :] for e in page.get("Contents", []) if not e["Key"].endswith("/")]
        except FileNotFoundError:  # no such bucket
            return []
        return sorted(names)

    def _has_children(self, bucket: str, key: str) -> bool:
        try:
            page = self.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=f"{key}/", MaxKeys=1)
        except FileNotFoundError:
            return False
        return bool(page.get("Contents") or page.get("CommonPrefixes"))

    def _pages(self, bucket: str, prefix: str, delimiter: str = "", start_after: str = "") -> Iterator[dict[str, Any]]:
        """ListObjectsV2 pages straight from the store (never a cache)."""
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": self.list_page_size}
        optional = {"Delimiter": delimiter, "StartAfter": start_after}
        kwargs.update({name: value for name, value in optional.items() if value})
        while True:
            page: dict[str, Any] = call_scrubbed(self._scrubber, self.fs.call_s3, "list_objects_v2", **kwargs)
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            kwargs["ContinuationToken"] = token

    @staticmethod
    def _file_info(bucket: str, entry: dict[str, Any]) -> FileInfo:
        etag = str(entry.get("ETag") or "")
        return FileInfo(f"{bucket}/{entry['Key']}", int(entry.get("Size") or 0), mtime_ms_of(entry), False, etag)

    def list_dir(self, path: str) -> list[FileInfo]:
        bucket, key = split_path(path)
        prefix = f"{key}/" if key else ""
        result: list[FileInfo] = []
        try:
            for page in self._pages(bucket, prefix, delimiter="/"):
                for entry in page.get("Contents", []):
                    if not entry["Key"].endswith("/"):  # skip directory placeholder objects
                        result.append(self._file_info(bucket, entry))
                for common in page.get("CommonPrefixes", []):
                    name = f"{bucket}/{common['Prefix'].rstrip('/')}"
                    result.append(FileInfo(path=name, size=0, mtime_ms=0, is_dir=True))
        except FileNotFoundError:  # no such bucket
            return []
        return sorted(result, key=lambda info: info.path)

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        return (info for info in self._subtree(path) if not info.is_dir)

    lists_subtrees = True

    def list_subtree(self, path: str) -> list[FileInfo]:
        return list(self._subtree(path))

    def list_subtree_range(self, path: str, first: str, last: str) -> list[FileInfo]:
        """One ListObjectsV2 without a delimiter from ``<path>/<first>/`` to the end of ``<path>/<last>/``: Prefix
        is what the two have in common (``<path>/<first>/`` itself for one directory), StartAfter ``<path>/<first>/``
        (below it, not the marker object of ``first`` itself, which says nothing its keys do not); paging stops at
        the first key past the range. Keys must come in key order, as S3 sends them: a store that sends them in
        another order (SeaweedFS walks its directory tree, so ``a.txt`` comes after ``a/b``) is listed again one
        directory at a time (the FileIO default)."""
        bucket, key = split_path(path)
        base = f"{key}/" if key else ""
        low, high = f"{base}{first}/", f"{base}{last}/"
        prefix = os.path.commonprefix([low, high])  # noqa: RUF071 - a key prefix, character by character
        result: list[FileInfo] = []
        previous = low
        try:
            for page in self._pages(bucket, prefix, start_after=low if low != prefix else ""):
                for entry in page.get("Contents", []):
                    name = entry["Key"]
                    if name < previous:
                        _log.debug("listing of %s out of key order at %s: one directory at a time", path, name)
                        return super().list_subtree_range(path, first, last)
                    if name > high and not name.startswith(high):
                        return result
                    previous = name
                    marker = name.endswith("/")
                    info = FileInfo(f"{bucket}/{name}", 0, 0, True) if marker else self._file_info(bucket, entry)
                    result.append(info)
        except FileNotFoundError:  # no such bucket
            return []
        return result

    def _subtree(self, path: str) -> Iterator[FileInfo]:
        """ListObjectsV2 of ``<path>/`` without a delimiter: every key below, 1,000 a page, whatever the depth;
        directory marker objects come back as directories (their path keeps the trailing ``/``)."""
        bucket, key = split_path(path)
        try:
            for page in self._pages(bucket, f"{key}/" if key else ""):
                for entry in page.get("Contents", []):
                    marker = entry["Key"].endswith("/")
                    yield FileInfo(f"{bucket}/{entry['Key']}", 0, 0, True) if marker else self._file_info(bucket, entry)
        except FileNotFoundError:  # no such bucket
            return

    @_scrubbed
    def write_bytes(self, path: str, data: bytes) -> None:
        self.fs.pipe_file(path, data)

    @_scrubbed
    def write_if_absent(self, path: str, data: bytes) -> bool:
        """One conditional PUT; on "exists" or an unknown outcome, read the key back and compare bytes.

        Equal bytes mean our PUT landed and only its acknowledgement was lost (callers put a unique token, such as
        the snapshot's commit identifier, in ``data``). An absent key after an error is retried with the same bytes,
        which is safe because every attempt is conditional. Raises StorageError after CREATE_ATTEMPTS attempts.
        """
        last = ""
        for attempt in range(CREATE_ATTEMPTS):
            if attempt:
                time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
            try:
                self.fs.pipe_file(path, data, mode="create")
                return True
            except Exception as exc:
                if not is_exists_error(exc) and is_definite_failure(exc):
                    raise
                last = self._message(exc)
                _log.debug("conditional PUT of %s: %s; reading it back", self.url(path), last)
            try:
                stored: bytes = self.fs.cat_file(path, max_concurrency=1)
            except FileNotFoundError:
                continue  # nothing there: the create did not happen, try again
            except Exception as exc:
                last = self._message(exc)
                continue
            return stored == data
        raise StorageError(f"outcome of creating {self.url(path)} unknown after {CREATE_ATTEMPTS} attempts: {last}")

    @_scrubbed
    def verify_atomic_create(self, root: str) -> bool:
        return self.probe_conditional_writes(root)

    def probe_conditional_writes(self, root: str) -> bool:
        """Whether the store refuses a second ``If-None-Match: *`` PUT of one key.

        Writes ``<root>/.tablefmt-probe-<uuid>`` twice and deletes it afterwards. False means the store ignores
        the condition (or rejects the header as not implemented): concurrent writers would overwrite snapshots.
        """
        probe = f"{root.rstrip('/')}/.tablefmt-probe-{uuid.uuid4().hex}"
        try:
            if not self.write_if_absent(probe, b"tablefmt probe 1"):
                raise StorageError(f"conditional-write probe {self.url(probe)} was created by someone else")
            try:
                self.fs.pipe_file(probe, b"tablefmt probe 2", mode="create")
            except Exception as exc:
                if is_exists_error(exc):
                    return True
                code, status = _error_code(exc)
                if status == 501 or code == "NotImplemented":
                    return False
                raise
            _log.warning("%s ignores If-None-Match: concurrent commits are unsafe on it", self)
            return False
        finally:
            try:
                self.fs.rm_file(probe)
            except Exception as exc:
                _log.warning("could not delete probe %s: %s", self.url(probe), self._message(exc))

    def remove_empty_dir(self, path: str) -> bool:
        return False

    @_scrubbed
    def delete_files(self, paths: Sequence[str]) -> list[str]:
        """Delete objects with DeleteObjects, checking every per-key result; report only keys that existed.

        S3 reports a missing key as deleted, so existence is settled first, once per directory (parent prefix) for
        the whole call, every directory in parallel:

        * four or more keys in one directory: ListObjectsV2 of that directory (delimiter ``/``) starting just before
          the smallest key, for at most one page per KEYS_PER_LIST_PAGE keys. Listed objects arrive in key order,
          so every key below the last listed object is settled by the listing; 1,000 keys cost about one request.
        * keys the listing did not reach (a sparse selection of a huge directory), and directories with fewer keys:
          one HEAD each, in parallel.

        Then the existing keys go in DeleteObjects requests of up to 1,000 keys, in parallel (:meth:`delete_listed`).
        No listing or HEAD is repeated per request. A key that is not an object but has objects below ``key/`` is a
        directory: it is never deleted and is reported as failed, like a directory on local disk. Returns the paths
        that existed and were confirmed deleted; raises DeleteFailedError after attempting the whole call when some
        could not be deleted.
        """
        wanted, failed = self._keys(paths)
        with thread_pool(CONCURRENCY, "tablefmt-s3") as pool:
            existing = self._settle(pool, wanted, failed)
            gone, refused = self._delete_keys(pool, existing)
        failed += [f"{wanted[bk]}: {reason}" for bk, reason in refused.items()]
        result = [path for bk, path in wanted.items() if bk in gone]
        if failed:
            raise DeleteFailedError(f"could not delete {len(failed)} file(s): {failed[0]}", result, failed)
        return result

    @_scrubbed
    def existing_files(self, paths: Sequence[str]) -> tuple[list[str], list[str]]:
        """What delete_files settles before deleting (a range listing per directory, HEADs for the rest), alone."""
        wanted, failed = self._keys(paths)
        with thread_pool(CONCURRENCY, "tablefmt-s3") as pool:
            existing = self._settle(pool, wanted, failed)
        return [wanted[bk] for bk in existing], failed

    def _settle(
        self, pool: ThreadPoolExecutor, wanted: dict[tuple[str, str], str], failed: list[str]
    ) -> list[tuple[str, str]]:
        """The wanted keys that are objects; failures (a directory, an unanswered question) are added to ``failed``."""
        groups: dict[tuple[str, str], list[str]] = {}
        for bucket, key in wanted:
            groups.setdefault((bucket, key.rpartition("/")[0]), []).append(key)
        existing: list[tuple[str, str]] = []
        found = self._classify_all(pool, [(bucket, sorted(keys)) for (bucket, _), keys in groups.items()])
        for bucket, files, missing, errors in found:
            existing += [(bucket, key) for key in files]
            failed += [f"{wanted[bucket, key]}: {reason}" for key, reason in errors.items()]
            failed += [f"{wanted[bucket, key]}: is a directory" for key, is_dir in missing.items() if is_dir]
        return existing

    @_scrubbed
    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        """DeleteObjects of up to 1,000 keys each, in parallel, without settling existence first (the caller knows
        the objects existed: it listed or read them). Every per-key result is checked; returns the paths confirmed
        deleted, raises DeleteFailedError (with ``deleted`` and ``failed``) when some were not."""
        wanted, failed = self._keys(paths)
        with thread_pool(CONCURRENCY, "tablefmt-s3") as pool:
            gone, errors = self._delete_keys(pool, list(wanted))
        failed += [f"{wanted[bk]}: {reason}" for bk, reason in errors.items()]
        result = [path for bk, path in wanted.items() if bk in gone]
        if failed:
            raise DeleteFailedError(f"could not delete {len(failed)} file(s): {failed[0]}", result, failed)
        return result

    @staticmethod
    def _keys(paths: Sequence[str]) -> tuple[dict[tuple[str, str], str], list[str]]:
        """({(bucket, key): path} of the distinct object paths, failures of paths that name a directory)."""
        wanted: dict[tuple[str, str], str] = {}
        failed: list[str] = []
        for path in paths:
            bucket, key = split_path(path)
            if not bucket or not key or path.endswith("/"):
                failed.append(f"{path}: is a directory")
            else:
                wanted.setdefault((bucket, key), path)
        return wanted, failed

    def _delete_keys(
        self, pool: ThreadPoolExecutor, keys: list[tuple[str, str]]
    ) -> tuple[set[tuple[str, str]], dict[tuple[str, str], str]]:
        """DeleteObjects requests of up to DELETE_BATCH keys, one bucket each, in parallel (only full batches are
        ever split off, so n keys cost ceil(n / 1,000) requests). Returns (keys confirmed deleted, {key: error})."""
        batches: list[tuple[str, list[str]]] = []
        for bucket in dict.fromkeys(b for b, _ in keys):
            names = [k for b, k in keys if b == bucket]
            batches += [(bucket, names[i : i + DELETE_BATCH]) for i in range(0, len(names), DELETE_BATCH)]
        gone: set[tuple[str, str]] = set()
        errors: dict[tuple[str, str], str] = {}
        outcomes = (
            pool.map(lambda job: self._delete_batch(*job), batches)
            if len(batches) > 1
            else (self._delete_batch(*job) for job in batches)
        )
        for bucket, deleted, failures in outcomes:
            gone.update((bucket, key) for key in deleted)
            errors.update(((bucket, key), reason) for key, reason in failures.items())
        return gone, errors

    def _classify_all(
        self, pool: ThreadPoolExecutor, groups: list[tuple[str, list[str]]]
    ) -> list[tuple[str, list[str], dict[str, bool], dict[str, str]]]:
        """Split each directory's sorted keys into (bucket, objects, {missing key: is a directory}, {key: error}):
        every directory's range listing at once, then every remaining HEAD at once, then the directory checks."""
        listed = (
            list(pool.map(lambda group: self._listed(*group), groups))
            if len(groups) > 1
            else [self._listed(*group) for group in groups]
        )
        unsettled = [
            (bucket, key)
            for (bucket, keys), (_, settled, _, _) in zip(groups, listed)
            for key in keys
            if key not in settled
        ]
        heads = dict(zip(unsettled, self._each(pool, self._is_object, unsettled)))
        states: list[tuple[str, set[str], dict[str, bool], dict[str, str]]] = []
        undecided: list[tuple[str, str]] = []
        owner: dict[tuple[str, str], int] = {}
        for index, ((bucket, keys), (complete, _settled, files, prefixes)) in enumerate(zip(groups, listed)):
            errors: dict[str, str] = {}
            missing: dict[str, bool] = {}
            for key in keys:
                head = heads.get((bucket, key))
                if isinstance(head, str):
                    errors[key] = head
                elif head is True or key in files:
                    files.add(key)
                elif complete or f"{key}/" in prefixes:
                    missing[key] = f"{key}/" in prefixes
                else:
                    undecided.append((bucket, key))
                    owner[bucket, key] = index
            states.append((bucket, files, missing, errors))
        for (bucket, key), outcome in zip(undecided, self._each(pool, self._has_children, undecided)):
            _, _, missing, errors = states[owner[bucket, key]]
            if isinstance(outcome, str):
                errors[key] = outcome
            else:
                missing[key] = outcome
        return [(bucket, sorted(files), missing, errors) for bucket, files, missing, errors in states]

    def _listed(self, bucket: str, keys: list[str]) -> tuple[bool, set[str], set[str], set[str]]:
        """(listing complete, keys settled, keys found as objects, common prefixes) of one directory's range
        listing; nothing settled for fewer than LIST_MIN_KEYS keys or when listing is refused (HEADs then)."""
        if len(keys) < LIST_MIN_KEYS:
            return False, set(), set(), set()
        try:
            complete, files, settled, prefixes = self._list_range(bucket, keys)
        except Exception as exc:  # e.g. no s3:ListBucket permission: HEAD every key instead
            _log.debug("listing for delete failed, using HEAD: %s", self._message(exc))
            return False, set(), set(), set()
        return complete, settled, files, prefixes

    def _list_range(self, bucket: str, keys: list[str]) -> tuple[bool, set[str], set[str], set[str]]:
        """List the directory of ``keys`` from just before the first one, within the page budget.

        Returns (listing complete, keys found as objects, keys settled, common prefixes seen).
        """
        parent = keys[0].rpartition("/")[0]
        prefix = f"{parent}/" if parent else ""
        wanted = set(keys)
        found: set[str] = set()
        prefixes: set[str] = set()
        high = ""
        budget = max(1, -(-len(keys) // KEYS_PER_LIST_PAGE))
        pages = self._pages(bucket, prefix, delimiter="/", start_after=_just_before(keys[0]))
        for number, page in enumerate(pages, start=1):
            listed = [entry["Key"] for entry in page.get("Contents", [])]
            if listed and (listed != sorted(listed) or listed[0] <= high):
                return False, found, found.copy(), prefixes  # unexpected order: HEAD the rest
            found.update(wanted.intersection(listed))
            prefixes.update(common["Prefix"] for common in page.get("CommonPrefixes", []))
            high = listed[-1] if listed else high
            if not page.get("IsTruncated"):
                return True, found, set(keys), prefixes
            if number >= budget or high >= keys[-1]:
                break
        return False, found, {key for key in keys if key <= high}, prefixes

    def _is_object(self, bucket: str, key: str) -> bool:
        try:
            self.fs.call_s3("head_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            return False
        return True

    def _each(
        self, pool: ThreadPoolExecutor, check: Callable[[str, str], bool], keys: list[tuple[str, str]]
    ) -> list[bool | str]:
        """``check(bucket, key)`` for every key in parallel; a failure yields its (scrubbed) message instead."""

        def run(bucket_key: tuple[str, str]) -> bool | str:
            try:
                return check(*bucket_key)
            except Exception as exc:
                return self._message(exc)

        return list(pool.map(run, keys)) if len(keys) > 1 else [run(k) for k in keys]

    def _delete_batch(self, bucket: str, keys: list[str]) -> tuple[str, set[str], dict[str, str]]:
        """DeleteObjects of the keys: (bucket, keys confirmed deleted, {key: error}) from the per-key results.

        Keys refused as throttled (``SlowDown``) or with a transient error go again, in one new request after the
        pacer's backoff, up to its ``max_attempts`` requests; what is still refused then is reported, with the
        store's last reason. A whole request that fails (after the pacer's own retries) fails its keys."""
        pacer = self.pacer
        prefix = common_prefix_of(bucket, keys)
        deleted: set[str] = set()
        errors: dict[str, str] = {}
        pending, attempt = keys, 1
        while True:
            gone, refused = self._delete_request(bucket, pending)
            deleted |= gone
            again = [key for key, (code, _) in refused.items() if is_throttle(code, 0) or is_transient(code, 0)]
            throttled = sum(1 for key in again if is_throttle(refused[key][0], 0))
            if throttled:
                pacer.keys_throttled(prefix, throttled)
            final = attempt >= pacer.max_attempts or not again
            errors.update((key, reason) for key, (code, reason) in refused.items() if final or key not in again)
            if final:
                break
            pacer.pause(attempt)
            pending, attempt = again, attempt + 1
        _log.debug("DeleteObjects %s: %d deleted, %d failed, %d request(s)", bucket, len(deleted), len(errors), attempt)
        return bucket, deleted, errors

    def _delete_request(self, bucket: str, keys: list[str]) -> tuple[set[str], dict[str, tuple[str, str]]]:
        """One DeleteObjects call: (keys confirmed deleted, {key: (error code, reason)})."""
        request = {"Objects": [{"Key": key} for key in keys], "Quiet": False}
        try:
            response = self.fs.call_s3("delete_objects", Bucket=bucket, Delete=request)
        except Exception as exc:
            return set(), dict.fromkeys(keys, ("", self._message(exc)))
        errors = {
            e["Key"]: (str(e.get("Code", "")), self._scrubber.text(f"{e.get('Code', 'Error')}: {e.get('Message', '')}"))
            for e in response.get("Errors", [])
        }
        deleted = {d["Key"] for d in response.get("Deleted", [])} - errors.keys()
        for key in keys:
            if key not in deleted and key not in errors:
                errors[key] = ("", "DeleteObjects did not confirm the deletion")
        return deleted, errors
