"""Pick a FileIO for a table location (local path or fsspec URL) and storage options."""

from __future__ import annotations

import os
from typing import Any

from tableformat.errors import ValidationError
from tableformat.io.fileio import FileIO
from tableformat.io.fsspec_io import FsspecFileIO
from tableformat.io.local import LocalFileIO

S3_SCHEMES = ("s3", "s3a", "s3n")


def split_scheme(location: str) -> tuple[str, str]:
    """('s3', 'bucket/key') for 's3://bucket/key'; ('file', '/abs') for a local path or file:// URL."""
    if "://" in location:
        scheme, rest = location.split("://", 1)
        scheme = scheme.lower()
        if scheme == "file":
            return "file", rest
        return scheme, rest
    if location.startswith("file:"):
        return "file", location[len("file:") :]
    return "file", location


def open_location(location: str, storage_options: dict[str, Any] | None = None) -> tuple[FileIO, str]:
    """The FileIO for a table location and the table root as that FileIO's path.

    ``s3a://`` and ``s3n://`` are normalised to ``s3://``: the same bucket/key is the same table.
    """
    if not location or not str(location).strip():
        raise ValidationError("table location is empty")
    scheme, rest = split_scheme(str(location))
    options = dict(storage_options or {})
    if scheme == "file":
        if options:
            raise ValidationError(f"storage options are not used for local paths: {sorted(options)}")
        return LocalFileIO(), os.path.abspath(rest).rstrip("/") or "/"
    root = rest.strip("/")
    if not root:
        raise ValidationError(f"table location {location!r} has no bucket or path")
    if scheme in S3_SCHEMES:
        from tableformat.io.s3 import S3FileIO

        return S3FileIO.create(options), root
    try:
        import fsspec

        fs = fsspec.filesystem(scheme, **options)
    except (ImportError, ValueError) as exc:
        raise ValidationError(f"unsupported storage scheme {scheme!r}: {exc}") from None
    return FsspecFileIO(fs, scheme, options), root
