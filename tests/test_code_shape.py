"""Size limits of the house style: no module over 600 lines, no function in cleanup/ over 60 lines."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 600
MAX_CLEANUP_FUNCTION_LINES = 60


def test_no_module_over_600_lines() -> None:
    long = {
        str(path.relative_to(REPO)): lines
        for folder in ("tableformat", "cleanup", "cli")
        for path in (REPO / folder).rglob("*.py")
        if (lines := path.read_text().count("\n")) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_in_cleanup_over_60_lines() -> None:
    long = {}
    for path in (REPO / "cleanup").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_CLEANUP_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.name}"] = length
    assert long == {}
