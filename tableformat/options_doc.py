"""docs/options.md, generated from the option registry: ``python -m tableformat.options_doc > docs/options.md``
(a test fails when the file is stale)."""

import sys

from tableformat.options import REGISTRY
from tableformat.paimon_option_keys import PAIMON_OPTION_KEYS


def render_options_markdown() -> str:
    """The text of docs/options.md."""
    lines = [
        "# Table options",
        "",
        "Generated from `tableformat/options.py` (`python -m tableformat.options_doc > docs/options.md`); do not edit.",
        "Set them at `Table.create(..., options={...})`; maintenance calls can override the expiration ones per call.",
        "Numbers are range-checked wherever they are set (create, `tablefmt options set`, `--option`, the maintain",
        "config, per-call overrides): counts up to 2147483647 (Paimon reads them as Java ints), durations 0 ms to",
        "36500 d (100 years), sizes up to 2^63 - 1 bytes. A value stored out of range by another writer is refused in",
        "one line by the operation that uses it; reads take an out-of-range `record-level.expire-time`, or a cutoff",
        'before the earliest time the time field\'s type can hold, as "nothing expires".',
        "",
        "| key | type | default | description |",
        "| --- | --- | --- | --- |",
    ]
    for option in REGISTRY.values():
        doc = option.doc + (f" Allowed: {option.range_text()}." if option.bounds is not None else "")
        lines.append(f"| `{option.key}` | {option.type.name} | `{option.render_default()}` | {doc} |")
    lines += [
        "",
        "## Other option names",
        "",
        "Option names tablefmt does not interpret are refused when a table is created (a typo such as",
        "`snapshot.num-retained.mn` would otherwise be stored and never applied; the error suggests the closest known",
        "name), except Apache Paimon's own options, which are stored as given for Paimon engines: the names below and",
        "the families `fields.<column>.<option>`, `file-index.<type>.<option>`, `blob-descriptor.<option>`,",
        "`commit.callback.<class>.param`, `tag.callback.<class>.param` and file-format options `parquet.*`, `orc.*`,",
        "`avro.*`, `csv.*`, `json.*`, `text.*`, `lance.*`. To store any other name, pass",
        "`Table.create(..., allow_unknown_options=True)` or `tablefmt create --allow-unknown-options`. Tables that",
        "already carry options tablefmt does not know (written by pypaimon or Paimon Java) open, read, write and are",
        "maintained as usual. At create, the values of the options in the table above are always validated.",
        "",
        "Paimon option names stored as given: "
        + ", ".join(f"`{key}`" for key in sorted(PAIMON_OPTION_KEYS - REGISTRY.keys()))
        + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_options_markdown())
