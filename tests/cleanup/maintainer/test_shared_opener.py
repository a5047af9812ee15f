"""A maintainer opens one FileIO per storage scheme and options, shared by discovery and every table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings
from tableformat.cleanup.maintainer.targets import SharedOpener
from tableformat.io.factory import open_location
from tableformat.io.fileio import FileIO


def test_locations_with_the_same_options_share_one_fileio(tmp_path: Path) -> None:
    opener = SharedOpener()
    first_io, first_root = opener(str(tmp_path / "wh"), {})
    second_io, second_root = opener(str(tmp_path / "wh" / "db.db" / "t"), {})
    assert second_io is first_io
    assert (first_root, second_root) == (str(tmp_path / "wh"), str(tmp_path / "wh" / "db.db" / "t"))
    memory_io, _ = opener("memory://wh/db.db/t", {})
    other_io, _ = opener("memory://wh/db.db/t", {"skip_instance_cache": True})
    assert memory_io is not first_io and other_io is not memory_io


def test_the_default_opener_is_shared_and_a_given_one_is_kept(tmp_path: Path) -> None:
    settings = MaintainSettings()
    assert isinstance(Maintainer([str(tmp_path)], settings).opener, SharedOpener)

    def own_opener(location: str, storage_options: dict[str, Any]) -> tuple[FileIO, str]:
        return open_location(location, storage_options)

    assert Maintainer([str(tmp_path)], settings, opener=own_opener).opener is own_opener
