"""The ``tablefmt`` group's table of commands (cli/main.py ``COMMANDS``) holds to the commands it imports lazily."""

from __future__ import annotations

import inspect

import click
import pytest
from click.testing import CliRunner

from tableformat.cleanup.registry import OPERATIONS
from tableformat.cli.main import COMMANDS, cli, load_command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_entry_loads_its_command_with_the_help_it_lists(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    first_paragraph = " ".join(inspect.cleandoc(command.help or "").partition("\n\n")[0].split())
    assert COMMANDS[name].help == first_paragraph
    listed = click.Command(name, help=COMMANDS[name].help)
    for limit in (20, 45, 80, 200):
        assert listed.get_short_help_str(limit) == command.get_short_help_str(limit)


def test_every_registered_operation_has_an_entry() -> None:
    assert {op.name for op in OPERATIONS} <= set(COMMANDS)


def test_the_help_lists_every_command_once_in_order() -> None:
    result = CliRunner().invoke(cli, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    listed = result.output.split("Commands:\n", 1)[1].splitlines()
    names = [line.split()[0] for line in listed if line.startswith("  ") and not line.startswith("   ")]
    assert names == sorted(COMMANDS)


def test_an_unknown_command_is_still_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command 'no-such-command'" in result.output
