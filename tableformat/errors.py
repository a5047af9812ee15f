"""The one exception hierarchy of tablefmt.

Every error raised on purpose by tablefmt derives from :class:`TableFormatError`. Subclasses that describe bad
input also derive from :class:`ValueError`; storage failures also derive from :class:`OSError`, so callers that
catch builtins keep working.
"""

from __future__ import annotations


class TableFormatError(Exception):
    """Root of every error tablefmt raises on purpose."""


class ValidationError(TableFormatError, ValueError):
    """Bad input: an option, a duration, a partition spec, data that does not fit the schema."""


class UnknownOptionError(ValidationError):
    """Option names that neither tablefmt nor Paimon knows (usually a typo), with the closest known name of each."""

    PYTHON_HINT = "to store options tablefmt does not know, pass allow_unknown_options=True"

    def __init__(self, suggestions: dict[str, str | None], hint: str = PYTHON_HINT) -> None:
        self.suggestions = dict(suggestions)
        """Each unknown name -> the closest known option name, or None."""
        self.hint = hint
        super().__init__(self.describe(hint))

    def describe(self, hint: str) -> str:
        """One line naming every unknown option and its suggestion, ending with ``hint`` (how to allow them)."""
        names = ", ".join(
            f"{name!r}" + (f" (did you mean {best!r}?)" if best else "") for name, best in self.suggestions.items()
        )
        return f"unknown table option{'s' if len(self.suggestions) > 1 else ''} {names}; {hint}"


class ArgumentError(ValidationError):
    """A call's arguments are wrong or missing, told in the words of the interface the call came through.

    ``template`` names arguments as ``{name}`` placeholders; ``arguments`` gives each one as a pair (its Python
    value, its command-line value: ``""`` for a bare flag, a whole ``--flag value`` when the flag is not the
    argument's name in dashes). ``str()`` says them as Python keywords
    (``expiration_time=datetime.timedelta(days=30)``), :meth:`command_line` as flags (``--expiration-time 30d``,
    ``--force``). The CLI reports it as a usage error (exit 2)."""

    def __init__(self, template: str, **arguments: tuple[str, str]) -> None:
        self.template = template
        self.arguments = dict(arguments)
        super().__init__(template.format(**{name: f"{name}={py}" for name, (py, _) in self.arguments.items()}))

    def command_line(self) -> str:
        """The message with every argument said as the command-line flag that sets it."""
        flags = {}
        for name, (_, value) in self.arguments.items():
            flag = "--" + name.replace("_", "-")
            flags[name] = value if value.startswith("--") else f"{flag} {value}" if value else flag
        return self.template.format(**flags)


class SchemaChangeError(ValidationError):
    """A schema change Paimon's rules refuse (a narrowing type change, a partition key dropped, an unknown column,
    ...), or a column type that cannot be read; nothing was written. The CLI reports it as a usage error (exit 2)."""


class FileListError(ValidationError):
    """A file list given instead of a listing (``--file-list``: an S3 Inventory report or a Parquet/CSV of
    ``path, size, last_modified``) that cannot be used: missing, unreadable, wrong columns, another bucket. Nothing
    was deleted. The CLI reports it as a usage error (exit 2)."""


class TableNotFoundError(TableFormatError, FileNotFoundError):
    """No table (no schema file) at the given location."""


class TargetNotFoundError(ValidationError, FileNotFoundError):
    """A maintenance target (a table, a ``<db>.db`` directory or a warehouse) that does not exist: a typo in a cron
    line must fail, not maintain nothing. On object stores a prefix with no objects does not exist."""


class TableAlreadyExistsError(TableFormatError, FileExistsError):
    """Table.create was asked to create a table where one already exists."""


class SnapshotNotFoundError(TableFormatError, LookupError):
    """The requested snapshot, tag or point in time does not exist (or has been expired)."""


class SnapshotExpiredWhileReadingError(SnapshotNotFoundError):
    """A file a snapshot names was missing, and so was the snapshot: it was expired while it was being read.

    A lost race with snapshot expiration (a reader or a rewrite slower than the table's retention), never
    corruption: expiration deletes a snapshot's file before any file it names (docs/reliability.md, G9). Reading
    the new latest snapshot succeeds; ``snapshot_id`` is the snapshot that was lost."""

    def __init__(self, snapshot_id: int, advice: str = "read a newer snapshot") -> None:
        super().__init__(f"snapshot {snapshot_id} was expired while it was being read; {advice}")
        self.snapshot_id = snapshot_id
        self.advice = advice

    def __reduce__(self) -> tuple[type[SnapshotExpiredWhileReadingError], tuple[int, str]]:
        return type(self), (self.snapshot_id, self.advice)


class TagError(TableFormatError):
    """A tag operation failed: duplicate name, bad name, missing tag."""


class CorruptMetadataError(TableFormatError):
    """A metadata file (schema, snapshot, hint, tag, manifest list, manifest) cannot be parsed.

    The message always names the file.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"corrupt metadata file {path}: {reason}")
        self.path = path
        self.reason = reason


class MissingMetadataError(CorruptMetadataError):
    """A metadata file that a snapshot references does not exist (e.g. expired while it was being read)."""


class UnsupportedFormatError(TableFormatError):
    """The table uses a format version or feature tablefmt does not implement."""


class UnsupportedTableError(UnsupportedFormatError):
    """A primary-key table whose rows tablefmt cannot read exactly as Paimon does (a merge engine such as
    ``partial-update`` or ``aggregation``): refused rather than read wrong."""


class NotApplicableError(UnsupportedFormatError):
    """A maintenance operation that does not apply to this kind of table, refused before anything is read (e.g.
    rewriting the files of a primary-key table as if it were an append table could bring back an older version of a
    key). ``tablefmt maintain`` and the after-commit hook skip such an operation with ``reason``; it is no failure."""

    def __init__(self, operation: str, reason: str) -> None:
        super().__init__(f"{operation}: {reason}")
        self.operation = operation
        self.reason = reason

    def __reduce__(self) -> tuple[type[NotApplicableError], tuple[str, str]]:
        return type(self), (self.operation, self.reason)


class UnsafePathError(ValidationError):
    """Metadata names a file outside the table root (``..``, an absolute path, another scheme or bucket)."""


class StorageError(TableFormatError, OSError):
    """The storage backend failed in a way that is not a plain missing file."""


class MissingDataFileError(StorageError):
    """A data file that a snapshot references does not exist: deleted outside tablefmt, or expired with the snapshot
    while it was being read (the snapshot is then gone too: SnapshotExpiredWhileReadingError)."""


class DeleteFailedError(StorageError):
    """Some files of a delete batch could not be deleted; ``deleted`` lists those that were."""

    def __init__(self, message: str, deleted: list[str], failed: list[str]) -> None:
        super().__init__(message)
        self.deleted = deleted
        self.failed = failed


class CommitError(TableFormatError):
    """A commit did not happen; nothing it prepared is referenced by any snapshot."""


class CommitConflictError(CommitError):
    """A concurrent change makes this commit invalid (e.g. a file to delete is no longer live)."""


class CommitRetriesExhaustedError(CommitError):
    """The commit kept losing the race for the next snapshot id and gave up."""


class CommitStateUnknownError(TableFormatError):
    """The snapshot write failed ambiguously and reading it back did not settle whether it landed."""


class MaintenanceError(TableFormatError):
    """Expiration or orphan cleanup stopped; the message says why and that nothing unsafe was deleted."""


class LeaseLostError(MaintenanceError):
    """A maintainer's lease on a table expired or was taken over: it stops before its next delete or write."""


class UndoRefusedError(MaintenanceError):
    """``tablefmt undo`` cannot restore exactly what the run took (a file already gone, a newer run that depends on
    the state, an erasure); nothing was changed. The message says why in one line."""


class TableBusyError(MaintenanceError):
    """A rollback holds the table (or maintenance does, for a rollback): this run changed nothing; run it again
    once the other ends (tableformat/claims.py)."""
