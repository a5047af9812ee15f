"""The FileIO contract, run against local disk and a real S3 server (SeaweedFS), plus S3-only behaviour."""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tableformat.errors import DeleteFailedError, StorageError
from tableformat.io.factory import open_location
from tableformat.io.fileio import UNKNOWN, FileIO
from tableformat.io.s3 import CREATE_ATTEMPTS, S3FileIO


@dataclass
class Backend:
    name: str
    io: FileIO
    root: str
    make: Callable[[], FileIO]
    """A second, independent FileIO on the same storage (another process, as far as caches go)."""

    def path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Backend:
    if request.param == "local":
        location, options = str(tmp_path / "table"), {}
    else:
        location, options = request.getfixturevalue("s3_root")
    io, root = open_location(location, options)
    return Backend(request.param, io, root, lambda: open_location(location, options)[0])


def names(infos: list[Any]) -> list[str]:
    return sorted(info.name for info in infos)


class TestFileIOContract:
    def test_write_read_round_trip(self, backend: Backend) -> None:
        io, path = backend.io, backend.path("data", "part-0.bin")
        data = bytes(range(256)) * 40
        io.write_bytes(path, data)
        assert io.read_bytes(path) == data
        assert io.file_size(path) == 10240
        with io.open_input(path) as stream:
            stream.seek(100)
            assert stream.read(4) == bytes([100, 101, 102, 103])
        io.write_bytes(path, b"v2")
        assert io.read_bytes(path) == b"v2"

    def test_read_range(self, backend: Backend) -> None:
        io, path = backend.io, backend.path("data", "part-1.bin")
        data = bytes(range(256)) * 40
        io.write_bytes(path, data)
        assert io.read_range(path, 100, 104) == data[100:104]
        assert io.read_range(path, 0, 10240) == data
        assert io.read_range(path, 10200, 10300) == data[10200:]  # fewer where the file ends sooner
        with pytest.raises(FileNotFoundError):
            io.read_range(backend.path("data", "absent"), 0, 10)

    def test_read_missing_file(self, backend: Backend) -> None:
        backend.io.write_bytes(backend.path("dir", "present"), b"x")
        for missing in (backend.path("dir", "absent"), backend.path("nodir", "absent")):
            with pytest.raises(FileNotFoundError):
                backend.io.read_bytes(missing)
            with pytest.raises(FileNotFoundError):
                backend.io.file_size(missing)

    def test_write_if_absent_never_overwrites(self, backend: Backend) -> None:
        path = backend.path("snapshot", "snapshot-1")
        assert backend.io.write_if_absent(path, b"first") is True
        assert backend.io.write_if_absent(path, b"second") is False
        assert backend.make().write_if_absent(path, b"third") is False
        assert backend.io.read_bytes(path) == b"first"

    def test_racing_writers_have_exactly_one_winner(self, backend: Backend) -> None:
        path = backend.path("snapshot", "snapshot-7")
        writers = [backend.make() for _ in range(8)]
        barrier = threading.Barrier(len(writers))
        results: dict[int, bool | BaseException] = {}

        def race(index: int) -> None:
            barrier.wait()
            try:
                results[index] = writers[index].write_if_absent(path, f"writer-{index}".encode())
            except BaseException as exc:
                results[index] = exc

        threads = [threading.Thread(target=race, args=(i,)) for i in range(len(writers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert sorted(results) == list(range(8))
        winners = [i for i, won in results.items() if won is True]
        assert [won for won in results.values() if won is not True] == [False] * 7
        assert len(winners) == 1
        assert backend.io.read_bytes(path) == f"writer-{winners[0]}".encode()

    def test_listing_sees_other_writers_immediately(self, backend: Backend) -> None:
        reader, writer = backend.io, backend.make()
        directory = backend.path("snapshot")
        reader.write_bytes(backend.path("snapshot", "snapshot-1"), b"1")
        assert names(reader.list_dir(directory)) == ["snapshot-1"]
        assert reader.exists(backend.path("snapshot", "snapshot-2")) is False

        writer.write_bytes(backend.path("snapshot", "snapshot-2"), b"2")
        assert names(reader.list_dir(directory)) == ["snapshot-1", "snapshot-2"]
        assert reader.exists(backend.path("snapshot", "snapshot-2")) is True
        assert reader.read_bytes(backend.path("snapshot", "snapshot-2")) == b"2"

        assert writer.delete_files([backend.path("snapshot", "snapshot-1")]) == [backend.path("snapshot", "snapshot-1")]
        assert names(reader.list_dir(directory)) == ["snapshot-2"]
        assert reader.exists(backend.path("snapshot", "snapshot-1")) is False

    def test_list_dir_entries(self, backend: Backend) -> None:
        io = backend.io
        io.write_bytes(backend.path("d", "f1"), b"abc")
        io.write_bytes(backend.path("d", "sub", "f2"), b"z")
        entries = sorted(io.list_dir(backend.path("d")), key=lambda info: info.name)
        assert [(e.path, e.is_dir) for e in entries] == [
            (backend.path("d", "f1"), False),
            (backend.path("d", "sub"), True),
        ]
        assert entries[0].size == 3
        assert io.list_dir(backend.path("missing")) == []

    def test_cheap_listings_and_stat_file(self, backend: Backend) -> None:
        io = backend.io
        io.write_bytes(backend.path("d", "f1"), b"abc")
        io.write_bytes(backend.path("d", "sub", "f2"), b"z")
        now_ms = int(time.time() * 1000)
        assert io.list_names(backend.path("d")) == ["f1"]
        assert io.list_names(backend.path("missing")) == []
        lazy = sorted(io.list_dir_without_file_stats(backend.path("d")), key=lambda info: info.name)
        assert [(e.path, e.is_dir) for e in lazy] == [
            (backend.path("d", "f1"), False),
            (backend.path("d", "sub"), True),
        ]
        if backend.name == "local":  # a stat per file is what the local listing saves
            assert (lazy[0].size, lazy[0].mtime_ms) == (UNKNOWN, UNKNOWN)
        else:  # an object store lists sizes and times anyway
            assert lazy[0].size == 3 and abs(lazy[0].mtime_ms - now_ms) < 60_000
        assert abs(lazy[1].mtime_ms - now_ms) < 60_000 or backend.name == "s3"  # S3 has no directory times
        assert io.list_dir_without_file_stats(backend.path("missing")) == []
        info = io.stat_file(backend.path("d", "f1"))
        assert info is not None and (info.path, info.size, info.is_dir) == (backend.path("d", "f1"), 3, False)
        assert abs(info.mtime_ms - now_ms) < 60_000
        assert io.stat_file(backend.path("d", "nope")) is None
        assert io.stat_file(backend.path("d", "sub")) is None  # a directory is not a file

    def test_walk_files_recursive(self, backend: Backend) -> None:
        io = backend.io
        files = {("a", "1"): b"1", ("a", "b", "2"): b"22", ("a", "b", "c", "3"): b"333", ("other", "4"): b"4444"}
        for parts, data in files.items():
            io.write_bytes(backend.path(*parts), data)
        now_ms = int(time.time() * 1000)
        found = list(io.walk_files(backend.path("a")))
        assert sorted((f.path, f.size, f.is_dir) for f in found) == [
            (backend.path("a", "1"), 1, False),
            (backend.path("a", "b", "2"), 2, False),
            (backend.path("a", "b", "c", "3"), 3, False),
        ]
        for info in found:
            assert abs(info.mtime_ms - now_ms) < 60_000, info
        assert list(io.walk_files(backend.path("missing"))) == []

    def test_delete_files_reports_only_existing(self, backend: Backend) -> None:
        io = backend.io
        f1, f2, child = backend.path("f1"), backend.path("f2"), backend.path("dir", "child")
        for path in (f1, f2, child):
            io.write_bytes(path, b"x")
        assert io.delete_files([]) == []
        assert io.delete_files([f1, backend.path("missing"), f2, f1]) == [f1, f2]
        assert (io.exists(f1), io.exists(f2), io.exists(child)) == (False, False, True)
        assert io.delete_files([f1]) == []

    def test_delete_files_never_deletes_a_directory(self, backend: Backend) -> None:
        io = backend.io
        directory, child, f3 = backend.path("dir"), backend.path("dir", "child"), backend.path("f3")
        io.write_bytes(child, b"keep")
        io.write_bytes(f3, b"x")
        with pytest.raises(DeleteFailedError) as failure:
            io.delete_files([directory, f3])
        assert failure.value.deleted == [f3]
        assert failure.value.failed == [f"{directory}: is a directory"]
        assert io.read_bytes(child) == b"keep"
        assert io.remove_empty_dir(directory) is False
        assert io.read_bytes(child) == b"keep"

    def test_exists(self, backend: Backend) -> None:
        io, path = backend.io, backend.path("x", "file")
        assert io.exists(path) is False
        io.write_bytes(path, b"")
        assert io.exists(path) is True
        assert io.exists(backend.path("x")) is True
        assert io.exists(backend.path("x", "fil")) is False
        io.delete_files([path])
        assert io.exists(path) is False


# --- local disk only --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("inside_makedirs", [False, True], ids=["before-open", "inside-makedirs"])
@pytest.mark.parametrize("create", [False, True], ids=["write_bytes", "write_if_absent"])
def test_local_write_survives_its_directory_removed_as_empty(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, create: bool, inside_makedirs: bool
) -> None:
    """Another process's remove_empty_dir (a claim released on .tablefmt/) can land between a writer's makedirs and
    its open: the writer makes the directory again instead of failing with FileNotFoundError."""
    io, root = open_location(str(tmp_path))
    directory = f"{root}/.tablefmt"
    real_makedirs = os.makedirs
    removals: list[str] = []

    def makedirs_then_removed_by_another(path: str, exist_ok: bool = False) -> None:
        real_makedirs(path, exist_ok=exist_ok)
        if not removals:  # the first time only: the other process removes the still empty directory
            removals.append(path)
            assert io.remove_empty_dir(path) is True
            if inside_makedirs:  # makedirs found it, then saw it gone when checking it is a directory
                raise FileExistsError(path)

    monkeypatch.setattr(os, "makedirs", makedirs_then_removed_by_another)
    path = f"{directory}/claim-maintenance-1"
    if create:
        assert io.write_if_absent(path, b"claim") is True
    else:
        io.write_bytes(path, b"claim")
    assert removals == [directory]
    assert io.read_bytes(path) == b"claim"
    assert sorted(os.listdir(directory)) == ["claim-maintenance-1"]


# --- S3 only ----------------------------------------------------------------------------------------------------------


@pytest.fixture
def s3(s3_root: tuple[str, dict[str, Any]]) -> tuple[S3FileIO, str]:
    io, root = open_location(*s3_root)
    assert isinstance(io, S3FileIO)
    return io, root


@pytest.mark.s3
class TestS3FileIO:
    def test_read_back_decides_an_ambiguous_create(self, s3: tuple[S3FileIO, str]) -> None:
        io, root = s3
        path = f"{root}/snapshot/snapshot-3"
        io.write_bytes(path, b"ours")  # as if our conditional PUT landed and only its answer was lost
        assert io.write_if_absent(path, b"ours") is True
        assert io.write_if_absent(path, b"theirs") is False
        assert io.read_bytes(path) == b"ours"

    def test_lost_acknowledgement_after_apply(self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch) -> None:
        io, root = s3
        real, calls = io.fs.pipe_file, []

        def apply_then_time_out(path: str, data: bytes, **kwargs: Any) -> None:
            calls.append(kwargs.get("mode"))
            real(path, data, **kwargs)
            if len(calls) == 1:
                raise TimeoutError("read timeout")

        monkeypatch.setattr(io.fs, "pipe_file", apply_then_time_out)
        assert io.write_if_absent(f"{root}/s-1", b"ours") is True
        assert calls == ["create"]
        assert io.read_bytes(f"{root}/s-1") == b"ours"

    def test_failure_before_apply_is_retried(self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch) -> None:
        io, root = s3
        real, calls = io.fs.pipe_file, []

        def reset_once(path: str, data: bytes, **kwargs: Any) -> None:
            calls.append(kwargs.get("mode"))
            if len(calls) == 1:
                raise ConnectionResetError("connection reset by peer")
            real(path, data, **kwargs)

        monkeypatch.setattr(io.fs, "pipe_file", reset_once)
        assert io.write_if_absent(f"{root}/s-2", b"ours") is True
        assert calls == ["create", "create"]

    def test_unknown_outcome_is_bounded(self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch) -> None:
        io, root = s3
        calls: list[str] = []

        def always_time_out(path: str, data: bytes, **kwargs: Any) -> None:
            calls.append(path)
            raise TimeoutError("read timeout")

        monkeypatch.setattr(io.fs, "pipe_file", always_time_out)
        with pytest.raises(StorageError, match="unknown after 5 attempts"):
            io.write_if_absent(f"{root}/s-3", b"ours")
        assert len(calls) == CREATE_ATTEMPTS
        assert io.exists(f"{root}/s-3") is False

    def test_definite_failure_is_not_retried(self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch) -> None:
        io, root = s3
        calls: list[str] = []

        def denied(path: str, data: bytes, **kwargs: Any) -> None:
            calls.append(path)
            raise PermissionError("Access Denied")

        monkeypatch.setattr(io.fs, "pipe_file", denied)
        with pytest.raises(PermissionError):
            io.write_if_absent(f"{root}/s-4", b"ours")
        assert len(calls) == 1

    def test_probe_conditional_writes(self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch) -> None:
        io, root = s3
        assert io.probe_conditional_writes(root) is True
        assert list(io.walk_files(root)) == []

        real = io.fs.pipe_file  # negative control: a store that ignores If-None-Match
        monkeypatch.setattr(io.fs, "pipe_file", lambda path, data, **kwargs: real(path, data))
        assert io.probe_conditional_writes(root) is False
        assert list(io.walk_files(root)) == []

    @pytest.mark.parametrize(("page_size", "heads"), [(1000, 0), (5, 17)])
    def test_delete_many_keys_of_one_directory(
        self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch, page_size: int, heads: int
    ) -> None:
        io, root = s3
        for i in range(30):
            io.write_bytes(f"{root}/d/f{i:02d}", b"x")
        io.write_bytes(f"{root}/d/sub/x", b"x")
        io.list_page_size = page_size
        real, methods = io.fs.call_s3, []

        def counting(method: str, *args: Any, **kwargs: Any) -> Any:
            methods.append(method)
            return real(method, *args, **kwargs)

        monkeypatch.setattr(io.fs, "call_s3", counting)
        doomed = [f"{root}/d/f{i:02d}" for i in range(5, 25)]
        missing = [f"{root}/d/f{i:02d}-gone" for i in (5, 12, 24)]
        assert io.delete_files(doomed + missing) == doomed
        assert methods.count("head_object") == heads
        assert methods.count("delete_objects") == 1
        remaining = [f.path for f in io.walk_files(f"{root}/d")]
        assert remaining == [f"{root}/d/f{i:02d}" for i in (*range(5), *range(25, 30))] + [f"{root}/d/sub/x"]

    def test_delete_checks_per_key_errors(self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch) -> None:
        io, root = s3
        paths = [f"{root}/m/{name}" for name in ("a", "b", "c", "d", "e")]
        for path in paths:
            io.write_bytes(path, b"x")
        real = io.fs.call_s3

        def refuse_c(method: str, *args: Any, **kwargs: Any) -> Any:
            if method != "delete_objects":
                return real(method, *args, **kwargs)
            objects = [o for o in kwargs["Delete"]["Objects"] if not o["Key"].endswith("/c")]
            response = real(method, Bucket=kwargs["Bucket"], Delete={**kwargs["Delete"], "Objects": objects})
            response["Errors"] = [{"Key": f"{root.split('/', 1)[1]}/m/c", "Code": "AccessDenied", "Message": "no"}]
            return response

        monkeypatch.setattr(io.fs, "call_s3", refuse_c)
        with pytest.raises(DeleteFailedError) as failure:
            io.delete_files(paths)
        assert failure.value.deleted == [paths[0], paths[1], paths[3], paths[4]]
        assert failure.value.failed == [f"{paths[2]}: AccessDenied: no"]
        assert io.exists(paths[2]) is True

    def test_failed_delete_request_deletes_nothing(
        self, s3: tuple[S3FileIO, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        io, root = s3
        paths = [f"{root}/n/a", f"{root}/n/b"]
        for path in paths:
            io.write_bytes(path, b"x")
        real = io.fs.call_s3

        def broken(method: str, *args: Any, **kwargs: Any) -> Any:
            if method == "delete_objects":
                raise OSError(5, "Internal Error")
            return real(method, *args, **kwargs)

        monkeypatch.setattr(io.fs, "call_s3", broken)
        with pytest.raises(DeleteFailedError) as failure:
            io.delete_files(paths)
        assert failure.value.deleted == []
        assert failure.value.failed == [f"{path}: OSError: [Errno 5] Internal Error" for path in paths]
        assert [io.exists(path) for path in paths] == [True, True]

    def test_credentials_never_leak(
        self,
        s3: tuple[S3FileIO, str],
        s3_root: tuple[str, dict[str, Any]],
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        io, root = s3
        key, secret = s3_root[1]["key"], s3_root[1]["secret"]
        caplog.set_level(logging.DEBUG)

        def leaky(*args: Any, **kwargs: Any) -> Any:
            try:
                raise ValueError(f"signed with {key}:{secret}")
            except ValueError as inner:
                raise PermissionError(f"SignatureDoesNotMatch for secret {secret}") from inner

        def rendered(exc: BaseException) -> str:
            return "".join(traceback.format_exception(exc)) + repr(exc) + str(getattr(exc, "failed", ""))

        monkeypatch.setattr(io.fs, "cat_file", leaky)
        with pytest.raises(PermissionError) as read_failure:
            io.read_bytes(f"{root}/x")
        monkeypatch.setattr(io.fs, "pipe_file", lambda *a, **k: (_ for _ in ()).throw(TimeoutError(secret)))
        with pytest.raises(StorageError) as write_failure:
            io.write_if_absent(f"{root}/y", b"data")
        with pytest.raises(TimeoutError) as put_failure:
            io.write_bytes(f"{root}/z", b"data")
        monkeypatch.setattr(io.fs, "call_s3", leaky)
        with pytest.raises(DeleteFailedError) as delete_failure:
            io.delete_files([f"{root}/a"])

        failures = [read_failure.value, write_failure.value, put_failure.value, delete_failure.value]
        assert "SignatureDoesNotMatch for secret ***" in str(read_failure.value)
        assert read_failure.value.__cause__ is None and read_failure.value.__context__ is None
        for text in [*(rendered(exc) for exc in failures), repr(io), caplog.text]:
            assert secret not in text
            assert key not in text
