"""lazy_module: commands that only touch metadata never import pyarrow; code that uses it gets the real module."""

from __future__ import annotations

import subprocess
import sys

from tableformat.lazy_module import lazy_module

HEAVY = ("pyarrow", "numpy", "pandas")


def _imported_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out.stdout.split()


def test_opening_a_table_and_the_cli_do_not_import_pyarrow() -> None:
    assert _imported_after("from tableformat.table import Table") == []
    assert _imported_after("import tableformat.cli.main") == []
    assert _imported_after("import tableformat.cleanup.registry") == []


def test_the_first_attribute_read_imports_the_module() -> None:
    statement = "from tableformat.codec import arrow_schema\nassert arrow_schema.pa.int64().bit_width == 64"
    assert "pyarrow" in _imported_after(statement)


def test_a_stand_in_behaves_as_the_module() -> None:
    json_module = lazy_module("json")
    assert json_module.dumps([1]) == "[1]"
    import json

    assert json_module.JSONDecodeError is json.JSONDecodeError
    assert "dumps" in vars(json_module)  # copied: later reads are plain lookups
    assert not hasattr(json_module, "__wrapped__")  # dunders are never forwarded
