"""The store's reads and writes of the audit ledger (``.tablefmt/audit/``; tableformat/audit.py).

A mixin of :class:`tableformat.store.MetadataStore` (kept apart for the store's size): through it the store stays the
only reader and writer of metadata files. Bytes in :mod:`tableformat.codec.audit_codec`. A record is created once
with the store's conditional create (``FileIO.write_if_absent``: on S3 a PUT with ``If-None-Match: *``) and never
rewritten; only pruning deletes it.
"""

from __future__ import annotations

from collections.abc import Iterable

from tableformat.codec import audit_codec
from tableformat.errors import CorruptMetadataError, StorageError
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.layout import AUDIT_CRASHED_SUFFIX, AUDIT_SUFFIX, TableLayout
from tableformat.model.audit import AuditFile, AuditRun, FileColumns


def audit_record_name(run_id: str, *, crashed: bool = False) -> str:
    """The file name of a run's record (its own, or the note of its crash by a later run)."""
    return run_id + (AUDIT_CRASHED_SUFFIX if crashed else AUDIT_SUFFIX)


def run_id_of(name: str) -> str | None:
    """The run id a record's file name is for; None for any other name (temp files of an interrupted write)."""
    if name.startswith("."):
        return None
    for suffix in (AUDIT_CRASHED_SUFFIX, AUDIT_SUFFIX):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


class AuditStore:
    """The audit records of one table (``io`` and ``layout`` are the store's)."""

    io: FileIO
    layout: TableLayout

    def audit_infos(self) -> list[FileInfo]:
        """Every record file present (name order: start time order), with sizes and times where the store lists
        them."""
        infos = [i for i in self.io.list_dir(self.layout.audit_dir) if not i.is_dir and run_id_of(i.name)]
        return sorted(infos, key=lambda info: info.name)

    def write_audit_record(self, run: AuditRun, files: FileColumns, *, crashed: bool = False) -> bool:
        """Create the run's record; False when a record of that name exists already (never overwritten)."""
        self.io.mkdirs(self.layout.audit_dir)
        path = self.layout.audit_file(audit_record_name(run.run_id, crashed=crashed))
        data = audit_codec.encode_audit(run, files)
        try:
            return self.io.write_if_absent(path, data)
        except OSError:  # outcome unknown: it is ours when the bytes read back are ours
            try:
                return self.io.read_bytes(path) == data
            except OSError:
                raise StorageError(f"could not tell whether the audit record {self.io.url(path)} was written") from None

    def audit_record_exists(self, run_id: str) -> bool:
        """Whether run ``run_id`` has a record (its own or a crash note)."""
        return any(
            self.io.file_exists(self.layout.audit_file(audit_record_name(run_id, crashed=crashed)))
            for crashed in (False, True)
        )

    def read_audit_run(self, name: str) -> AuditRun | None:
        """The run of record ``name`` (its footer only); None when it is gone. CorruptMetadataError when unreadable."""
        path = self.layout.audit_file(name)
        try:
            with self.io.open_input(path) as handle:
                return audit_codec.decode_audit_run(handle)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise CorruptMetadataError(self.io.url(path), str(exc)) from exc

    def read_audit_files(self, name: str, path: str | None = None) -> list[AuditFile]:
        """The file rows of record ``name`` (only those of ``path`` when given); [] when it is gone."""
        where = self.layout.audit_file(name)
        try:
            with self.io.open_input(where) as handle:
                return audit_codec.decode_audit_files(handle, path)
        except FileNotFoundError:
            return []
        except ValueError as exc:
            raise CorruptMetadataError(self.io.url(where), str(exc)) from exc

    def delete_audit_records(self, names: Iterable[str]) -> list[str]:
        """Delete records (listed by this run: they exist); returns the names deleted."""
        paths = {self.layout.audit_file(name): name for name in names}
        return [paths[p] for p in self.io.delete_listed(list(paths)) if p in paths]
