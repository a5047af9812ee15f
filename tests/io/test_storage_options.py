"""The one storage-option parser (tableformat.io.storage_options): typed values, nesting, one-line errors."""

from __future__ import annotations

import inspect

import pytest
import s3fs
from botocore.config import Config

from tableformat.errors import ValidationError
from tableformat.io.storage_options import (
    TYPED_KEYS,
    ValueKind,
    parse_storage_options,
    storage_options_from_items,
)


def test_typed_values() -> None:
    assert parse_storage_options(
        [
            "anon=false",
            "use_ssl=TRUE",
            "requester_pays=False",
            "version_aware=true",
            "skip_instance_cache=true",
            "use_listings_cache=false",
            "max_concurrency=4",
            "default_block_size= 8388608 ",
            "listings_expiry_time=1.5",
            "endpoint_url=http://127.0.0.1:8333",
            "default_cache_type=none",
            "key=AKIA=with=equals",
        ]
    ) == {
        "anon": False,
        "use_ssl": True,
        "requester_pays": False,
        "version_aware": True,
        "skip_instance_cache": True,
        "use_listings_cache": False,
        "max_concurrency": 4,
        "default_block_size": 8388608,
        "listings_expiry_time": 1.5,
        "endpoint_url": "http://127.0.0.1:8333",
        "default_cache_type": "none",
        "key": "AKIA=with=equals",
    }


def test_nesting_one_level_with_typed_inner_keys() -> None:
    assert parse_storage_options(
        [
            "client_kwargs.region_name=eu-west-1",
            "client_kwargs.verify=false",
            "client_kwargs.use_ssl=true",
            "config_kwargs.connect_timeout=5",
            "config_kwargs.read_timeout=2.5",
            "config_kwargs.max_pool_connections=32",
            "config_kwargs.tcp_keepalive=true",
            "s3_additional_kwargs.ServerSideEncryption=AES256",
            "config_kwargs.signature_version=s3v4",
        ]
    ) == {
        "client_kwargs": {"region_name": "eu-west-1", "verify": False, "use_ssl": True},
        "config_kwargs": {
            "connect_timeout": 5,
            "read_timeout": 2.5,
            "max_pool_connections": 32,
            "tcp_keepalive": True,
            "signature_version": "s3v4",
        },
        "s3_additional_kwargs": {"ServerSideEncryption": "AES256"},
    }


def test_strings_stay_verbatim_and_the_last_value_wins() -> None:
    assert parse_storage_options(["client_kwargs.verify=/etc/ca.pem", "token= t ", "token=", "anon=true"]) == {
        "client_kwargs": {"verify": "/etc/ca.pem"},
        "token": "",
        "anon": True,
    }
    assert parse_storage_options([]) == {}


def test_items_with_a_prefix() -> None:
    items = [("storage.anon", "false"), ("storage.client_kwargs.region_name", "eu"), ("storage.retries", "3")]
    assert storage_options_from_items(items, prefix="storage.") == {
        "anon": False,
        "client_kwargs": {"region_name": "eu"},
        "retries": "3",
    }


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["novalue"], "expected KEY=VALUE, got 'novalue'"),
        (["=x"], "expected KEY=VALUE, got '=x'"),
        (["anon=yes"], "storage option 'anon' must be true or false, got 'yes'"),
        (["anon="], "storage option 'anon' must be true or false, got ''"),
        (["max_concurrency=four"], "storage option 'max_concurrency' must be an integer, got 'four'"),
        (["default_block_size=1.5"], "storage option 'default_block_size' must be an integer, got '1.5'"),
        (["listings_expiry_time=nan"], "storage option 'listings_expiry_time' must be a number, got 'nan'"),
        (
            ["config_kwargs.read_timeout=soon"],
            "storage option 'config_kwargs.read_timeout' must be a number, got 'soon'",
        ),
        (["client_kwargs.use_ssl=1"], "storage option 'client_kwargs.use_ssl' must be true or false, got '1'"),
        (["client_kwargs.=x"], "storage option 'client_kwargs.': expected KEY or OUTER.KEY, both parts non-empty"),
        ([".region_name=x"], "storage option '.region_name': expected KEY or OUTER.KEY, both parts non-empty"),
        (
            ["client_kwargs=x", "client_kwargs.region_name=eu"],
            "storage option 'client_kwargs.region_name' nests under 'client_kwargs', which is also given a value",
        ),
        (
            ["client_kwargs.region_name=eu", "client_kwargs=x"],
            "storage option 'client_kwargs' is also given nested keys (client_kwargs.KEY=VALUE)",
        ),
    ],
)
def test_errors_are_one_line_naming_the_key(pairs: list[str], message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_storage_options(pairs)
    assert str(caught.value) == message


def test_prefix_is_named_in_errors() -> None:
    with pytest.raises(ValidationError) as caught:
        storage_options_from_items([("storage.anon", "nope")], prefix="storage.")
    assert str(caught.value) == "storage option 'storage.anon' must be true or false, got 'nope'"
    with pytest.raises(ValidationError) as caught:
        storage_options_from_items([("storage.", "x")], prefix="storage.")
    assert str(caught.value) == "storage option 'storage.': expected KEY or OUTER.KEY, both parts non-empty"


def _default_kind(default: object) -> ValueKind | None:
    if isinstance(default, bool):
        return ValueKind.BOOLEAN
    if isinstance(default, int):
        return ValueKind.INTEGER
    return None


def test_typed_keys_match_the_installed_s3fs_and_botocore() -> None:
    """Every typed key is a parameter of what receives it, and every bool/int-defaulted parameter is typed."""
    s3_params = inspect.signature(s3fs.S3FileSystem.__init__).parameters
    fsspec_keys = {"skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths"}  # s3fs doc
    for key, kind in TYPED_KEYS.items():
        outer, _, inner = key.partition(".")
        if not inner:
            assert outer in s3_params or outer in fsspec_keys, key
        elif outer == "config_kwargs":
            assert inner in Config.OPTION_DEFAULTS, key
        else:
            assert outer == "client_kwargs" and inner in ("use_ssl", "verify"), key
        assert isinstance(kind, ValueKind)
    for name, param in s3_params.items():
        expected = _default_kind(param.default)
        if expected is not None:
            assert TYPED_KEYS.get(name) == expected, name
