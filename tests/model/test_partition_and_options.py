"""Partition directory naming, spec parsing, durations and the option registry."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tableformat.durations import parse_duration_ms
from tableformat.errors import ValidationError
from tableformat.model import DataField, DataType
from tableformat.model.partition import escape_path_name, normalize_spec, parse_spec_text, partition_path
from tableformat.options import TableOptions
from tableformat.options_doc import render_options_markdown

DAY = DataField(id=0, name="day", type=DataType("DATE"))
CITY = DataField(id=1, name="city", type=DataType("STRING"))
HOUR = DataField(id=2, name="hour", type=DataType("INT"))


def test_partition_path_legacy_date_null_and_int() -> None:
    path = partition_path(
        [dt.date(2024, 1, 1), None, 7], [DAY, CITY, HOUR], default_name="__DEFAULT_PARTITION__", legacy_name=True
    )
    assert path == "day=19723/city=__DEFAULT_PARTITION__/hour=7"


def test_partition_path_empty_string_uses_default_name_and_escapes() -> None:
    assert partition_path([""], [CITY], default_name="__DEFAULT_PARTITION__", legacy_name=True) == (
        "city=__DEFAULT_PARTITION__"
    )
    assert escape_path_name("a/b:c=d%e#f?g h") == "a%2Fb%3Ac%3Dd%25e%23f%3Fg h"


def test_normalize_spec_types_values_and_rejects_unknown_keys() -> None:
    spec = normalize_spec(
        {"day": "2024-01-01", "hour": "7"}, [DAY, CITY, HOUR], default_name="__D__", allow_partial=True
    )
    assert spec == {"day": dt.date(2024, 1, 1), "hour": 7}
    assert normalize_spec({"city": "__D__"}, [DAY, CITY, HOUR], default_name="__D__", allow_partial=True) == {
        "city": None
    }
    with pytest.raises(ValidationError, match="unknown partition key"):
        normalize_spec({"nope": 1}, [DAY], default_name="__D__", allow_partial=True)
    with pytest.raises(ValidationError, match="does not fit column hour"):
        normalize_spec({"hour": "x"}, [HOUR], default_name="__D__", allow_partial=True)


@pytest.mark.parametrize("text", ["", "dt", "a=1,a=2", "=1"])
def test_bad_spec_text(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_spec_text(text)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("30s", 30_000),
        ("15m", 900_000),
        ("15 min", 900_000),
        ("1h", 3_600_000),
        ("1 h", 3_600_000),  # Paimon's own form (orphan-files.older-than = '1 d')
        ("7d", 604_800_000),
        ("30 d", 2_592_000_000),
        ("250", 250),  # no unit: milliseconds
        ("1h30m", 5_400_000),
        ("1h 30m", 5_400_000),
        ("1 h 30 min", 5_400_000),
        ("2d12h", 216_000_000),
        ("1m30s500ms", 90_500),
        ("1.5h", 5_400_000),
        ("1.5 h", 5_400_000),
        ("0.25d", 21_600_000),
        ("2.5s", 2_500),
        ("1.0ms", 1),
        ("  3 Hours ", 10_800_000),
        ("0s", 0),
    ],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(
    "text",
    ["-1h", "1 fortnight", "h", "", "   ", "1h-30m", "1h30", "30 1h", "1.h", ".5h", "1e3s", "0x10s", "PT1H", "1,5h"],
)
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValidationError, match="invalid duration"):
        parse_duration_ms(text)


@pytest.mark.parametrize("text", ["1.5ms", "0.0001s", "1.5"])
def test_durations_below_a_millisecond_are_refused(text: str) -> None:
    with pytest.raises(ValidationError, match="whole number of milliseconds"):
        parse_duration_ms(text)


def test_invalid_option_combinations_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"snapshot\.num-retained\.min must be >= 1"):
        TableOptions({"snapshot.num-retained.min": "0"}).validate()
    with pytest.raises(ValidationError, match=r"must be >= snapshot\.num-retained\.min"):
        TableOptions({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "3"}).validate()
    with pytest.raises(ValidationError, match=r"snapshot\.time-retained"):
        TableOptions({"snapshot.time-retained": "soon"}).validate()


def test_options_doc_is_generated_from_the_registry() -> None:
    doc = Path(__file__).parents[2] / "docs" / "options.md"
    assert doc.read_text() == render_options_markdown(), (
        "regenerate: python -m tableformat.options_doc > docs/options.md"
    )
