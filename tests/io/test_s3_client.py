"""The lean s3fs filesystem (io/s3_client.py): the same timestamps as botocore's parser, a fixed User-Agent."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from botocore.parsers import DEFAULT_TIMESTAMP_PARSER
from hypothesis import given
from hypothesis import strategies as st

from tableformat.io.factory import open_location
from tableformat.io.s3 import S3FileIO
from tableformat.io.s3_client import USER_AGENT, LeanS3FileSystem, filesystem_options, parse_timestamp

moments = st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2999, 12, 31))


@given(moments)
def test_iso_timestamps_parse_to_what_botocore_returns(moment: dt.datetime) -> None:
    for text in (
        moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
        moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    ):
        ours, theirs = parse_timestamp(text), DEFAULT_TIMESTAMP_PARSER(text)
        assert ours == theirs and ours.utcoffset() == theirs.utcoffset() == dt.timedelta(0)


@given(moments)
def test_http_dates_parse_to_what_botocore_returns(moment: dt.datetime) -> None:
    text = moment.replace(tzinfo=dt.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")
    ours, theirs = parse_timestamp(text), DEFAULT_TIMESTAMP_PARSER(text)
    assert ours == theirs and ours.utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize(
    "text",
    ["2026-11-24T03:52:00+01:00", "2026-11-24T03:52:00.1234567Z", "1700000000", "Tue, 24 Nov 2026 03:52:00 +0100",
     "Tue, 24 Nov 2026 03:52:00 -0000"],
)
def test_other_forms_go_to_botocore(text: str) -> None:
    assert parse_timestamp(text) == DEFAULT_TIMESTAMP_PARSER(text)
    assert parse_timestamp(text).utcoffset() == DEFAULT_TIMESTAMP_PARSER(text).utcoffset()


def test_a_malformed_timestamp_fails_as_botocore_fails() -> None:
    for text in ("garbage Z", "not a date GMT"):
        with pytest.raises(ValueError):
            DEFAULT_TIMESTAMP_PARSER(text)
        with pytest.raises(ValueError):
            parse_timestamp(text)


def test_the_user_agent_is_fixed_and_botocore_retries_off_unless_the_options_set_them() -> None:
    no_retries = {"mode": "standard", "total_max_attempts": 1}  # the pacer retries (io/pacing.py)
    assert filesystem_options({"key": "k"})["config_kwargs"] == {
        "user_agent": USER_AGENT,
        "retries": no_retries,
        "max_pool_connections": 64,  # botocore's 10 would cap the keep-up count's parallel reads
    }
    given_options = {
        "config_kwargs": {
            "user_agent": "mine",
            "read_timeout": 5,
            "retries": {"max_attempts": 3},
            "max_pool_connections": 4,
        }
    }
    assert filesystem_options(given_options)["config_kwargs"] == given_options["config_kwargs"]
    assert given_options == {  # not changed in place
        "config_kwargs": {
            "user_agent": "mine",
            "read_timeout": 5,
            "retries": {"max_attempts": 3},
            "max_pool_connections": 4,
        }
    }


@pytest.mark.s3
def test_requests_carry_the_fixed_user_agent_and_listings_parse_times(s3_root: tuple[str, dict[str, Any]]) -> None:
    io, root = open_location(*s3_root)
    assert isinstance(io, S3FileIO) and isinstance(io.fs, LeanS3FileSystem)
    assert io.storage_options() == s3_root[1]  # the shipped options are the caller's, without the User-Agent
    io.write_bytes(f"{root}/a", b"1")
    agents: list[str] = []
    io.fs.connect()
    io.fs.s3.meta.events.register("before-send.s3", lambda request, **_: agents.append(request.headers["User-Agent"]))
    assert io.read_bytes(f"{root}/a") == b"1"
    (info,) = io.list_dir(root)
    assert abs(info.mtime_ms - dt.datetime.now(dt.timezone.utc).timestamp() * 1000) < 600_000
    texts = [a.decode() if isinstance(a, bytes) else a for a in agents]
    assert texts and all(text.startswith(f"{USER_AGENT} ") or text == USER_AGENT for text in texts)
