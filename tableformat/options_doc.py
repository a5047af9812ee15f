"""Print docs/options.md: ``python -m tableformat.options_doc > docs/options.md``."""

import sys

from tableformat.options import render_options_markdown

if __name__ == "__main__":
    sys.stdout.write(render_options_markdown())
