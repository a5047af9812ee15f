"""No credential ever appears in exception messages, log records (DEBUG included) or CLI output (text and --json).

Errors are provoked against the SeaweedFS fixture: a wrong endpoint, a bucket that does not exist, a wrong secret
key, a wrong access key, each through the Python API (Table.open, Table.create, append) and the CLI with
``--storage-option``; successful CLI runs with --json are checked too. The secrets searched for are the server's
real secret key and the wrong secret given in the failing calls. (Access key ids are not secret: botocore's own
DEBUG log prints them in the Authorization header.)
"""

from __future__ import annotations

import json
import logging
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tableformat.cli.main import COMMANDS, cli
from tableformat.context import TableContext
from tableformat.errors import StorageError
from tableformat.io.s3 import S3FileIO
from tableformat.io.scrubbing import NO_CREDENTIALS
from tableformat.store import MetadataStore
from tableformat.table import Table

from .kit import SCHEMA, batch, chain

pytestmark = pytest.mark.s3

WRONG_SECRET = f"wrong-secret-{uuid.uuid4().hex}"
FAST_FAIL = {"proxies": {}, "connect_timeout": 1, "read_timeout": 5, "retries": {"max_attempts": 1}}


@pytest.fixture
def table_url(s3_root: tuple[str, dict[str, Any]]) -> str:
    url, options = s3_root
    Table.create(url, SCHEMA, partition_keys=["part"], options={"write-only": "true"}, storage_options=options)
    Table.open(url, options).append(batch([(1, "p0"), (2, "p1")]))
    return url


@pytest.fixture
def secrets(s3_root: tuple[str, dict[str, Any]]) -> tuple[str, ...]:
    return (s3_root[1]["secret"], WRONG_SECRET)


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG)
    yield caplog


def bad_options(options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Storage options that fail in different places."""
    return {
        "wrong endpoint": {**options, "endpoint_url": "http://127.0.0.1:9", "config_kwargs": FAST_FAIL},
        "wrong secret": {**options, "secret": WRONG_SECRET},
        "wrong access key": {**options, "key": f"AKIA{uuid.uuid4().hex[:16].upper()}"},
    }


def rendered(exc: BaseException) -> str:
    """Everything a user or a log could show of an exception: message, repr and full traceback of the chain."""
    parts = [f"{item}\n{item!r}" for item in chain(exc)]
    parts.append("".join(traceback.format_exception(exc)))
    return "\n".join(parts)


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    handler = logging.Handler()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    lines = []
    for record in caplog.records:
        lines.append(handler.format(record))
        lines.append(repr(record.args))
    return "\n".join(lines)


def assert_clean(text: str, secrets: tuple[str, ...], where: str) -> None:
    leaked = [s for s in secrets if s in text]
    assert not leaked, f"a secret appears in {where}"


def expect_failure(call: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as raised:
        call()
    return raised.value


# --- the Python API -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["wrong endpoint", "wrong secret", "wrong access key"])
def test_api_errors_never_show_a_secret(
    s3_root: tuple[str, dict[str, Any]], table_url: str, secrets: tuple[str, ...], debug_logs: Any, case: str
) -> None:
    options = bad_options(s3_root[1])[case]
    failures = {"open": expect_failure(lambda: Table.open(table_url, options))}
    failures["create"] = expect_failure(lambda: Table.create(f"{table_url}-new", SCHEMA, storage_options=options))
    good = Table.open(table_url, s3_root[1]).context
    bad_io = S3FileIO.create(options)
    ctx = TableContext(table_url, bad_io, good.layout, MetadataStore(bad_io, good.layout), good.schema)
    failures["append"] = expect_failure(lambda: Table(ctx).append(batch([(3, "p0")])))
    for what, exc in failures.items():
        assert_clean(rendered(exc), secrets, f"the {what} error ({case})")
    assert_clean(repr(bad_io) + repr(ctx), secrets, "reprs")
    assert_clean(log_text(debug_logs), secrets, "the DEBUG log records")
    assert debug_logs.records, "no log record was captured: the log check would be vacuous"


def test_missing_bucket_is_a_clear_error_without_secrets(
    s3_root: tuple[str, dict[str, Any]], secrets: tuple[str, ...], debug_logs: Any
) -> None:
    from tableformat.errors import TableNotFoundError

    url = f"s3://no-such-bucket-{uuid.uuid4().hex[:12]}/t"
    with pytest.raises(TableNotFoundError) as raised:
        Table.open(url, s3_root[1])
    assert_clean(rendered(raised.value), secrets, "the missing-bucket error")
    result = invoke(["snapshots", url, "--json", *storage_flags(s3_root[1])])
    assert result.exit_code == 1 and "\nerror: no table at s3://no-such-bucket-" in result.output
    assert json.loads(result.stdout)["kind"] == "TableNotFoundError"  # --json: the error as JSON on stdout too
    assert_clean(result.output, secrets, "the CLI output")
    assert_clean(log_text(debug_logs), secrets, "the DEBUG log records")


def test_credentials_from_the_environment_are_scrubbed_too(
    s3_root: tuple[str, dict[str, Any]], table_url: str, monkeypatch: pytest.MonkeyPatch, debug_logs: Any
) -> None:
    options = {k: v for k, v in s3_root[1].items() if k not in ("key", "secret")}
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_root[1]["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", WRONG_SECRET)
    exc = expect_failure(lambda: Table.open(table_url, options))
    assert_clean(rendered(exc), (WRONG_SECRET,), "the error")
    assert_clean(log_text(debug_logs), (WRONG_SECRET,), "the DEBUG log records")


# --- the CLI --------------------------------------------------------------------------------------------------------
def storage_flags(options: dict[str, Any]) -> list[str]:
    flags = []
    for key in ("key", "secret", "endpoint_url"):
        flags += ["--storage-option", f"{key}={options[key]}"]
    flags += ["--storage-option", f"client_kwargs.region_name={options['client_kwargs']['region_name']}"]
    return flags


def invoke(args: list[str]) -> Result:
    result = CliRunner().invoke(cli, ["-vv", *args])
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    if crashed:
        text = rendered(result.exception)  # type: ignore[arg-type]
        raise AssertionError(f"tablefmt {args[0]} crashed: {type(result.exception).__name__}\n{text}")
    return result


def cli_commands(url: str) -> list[list[str]]:
    commands = [["snapshots", url, "--json"], ["files", url, "--json"], ["tag", "list", url, "--json"]]
    for name, extra in (
        ("expire", ["--dry-run", "--json"]),
        ("remove-orphans", ["--dry-run", "--json"]),
        ("check", ["--json"]),
    ):
        if name in COMMANDS:
            commands.append([name, url, *extra])
    return commands


@pytest.mark.parametrize("case", ["wrong endpoint", "wrong secret", "wrong access key"])
def test_cli_errors_never_show_a_secret(
    s3_root: tuple[str, dict[str, Any]],
    table_url: str,
    secrets: tuple[str, ...],
    debug_logs: Any,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    options = bad_options(s3_root[1])[case]
    flags = storage_flags(options)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore's own retries of a refused connection take ~10 s a call
    for command in cli_commands(table_url):
        result = invoke([*command, *flags])
        assert result.exit_code != 0, f"{command[0]} succeeded with {case}"
        assert_clean(result.output, secrets, f"the output of tablefmt {command[0]}")
        errors = [line for line in result.output.splitlines() if line.lower().startswith("error:")]
        assert len(errors) == 1, result.output
    assert_clean(log_text(debug_logs), secrets, "the DEBUG log records")


def test_cli_json_output_never_shows_a_secret(
    s3_root: tuple[str, dict[str, Any]], table_url: str, secrets: tuple[str, ...], debug_logs: Any
) -> None:
    flags = storage_flags(s3_root[1])
    outputs = []
    for command in cli_commands(table_url):
        result = invoke([*command, *flags])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert_clean("\n".join(outputs), secrets, "--json output")
    assert_clean(log_text(debug_logs), secrets, "the DEBUG log records")
    assert '"path": "part=p0/bucket-0/data-' in outputs[1]  # files --json: paths relative to the table root


def test_missing_credentials_say_which_settings_to_give(
    table_url: str, s3_root: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """No key in the options, the environment or an AWS profile: one line naming what to set, in the API and the
    CLI, instead of botocore's "Unable to locate credentials"."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    options = {k: v for k, v in s3_root[1].items() if k not in ("key", "secret")}
    with pytest.raises(StorageError) as refused:
        Table.open(table_url, options)
    assert str(refused.value) == NO_CREDENTIALS
    endpoint = f"endpoint_url={options['endpoint_url']}"
    result = CliRunner().invoke(cli, ["snapshots", table_url, "--storage-option", endpoint])
    assert (result.exit_code, result.stderr) == (1, f"error: {NO_CREDENTIALS}\n")
    assert "--storage-option key=... --storage-option secret=..." in NO_CREDENTIALS
