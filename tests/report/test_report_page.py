"""The HTML page: valid, self-contained (nothing loaded from a URL), rendered by Debian's headless Chromium with no
console error and a screenshot that is not blank; matplotlib missing is a one-line error naming the extra."""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.browser import render
from support.events import build_events

from tableformat.cleanup.maintainer import MaintainSettings, TableTarget, maintain_table
from tableformat.errors import ValidationError
from tableformat.report import charts, render_html, write_html
from tableformat.table import Table

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
URL_ATTRIBUTES = {"src", "href", "srcset", "action", "data", "poster", "background", "formaction"}


class StrictParser(HTMLParser):
    """Every non-void element closed in order, ids unique, and every URL an attribute or style names."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.ids: set[str] = set()
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.in_style = False
        self.doctype = ""

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name == "id":
                if value in self.ids:
                    self.problems.append(f"duplicate id {value}")
                self.ids.add(value or "")
            if name in URL_ATTRIBUTES and value is not None:
                self.urls.append(value)
            if name == "style" and value:
                self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", value)
        if tag == "style":
            self.in_style = True
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self.in_style = False
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.in_style:
            self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", data)
            self.urls += re.findall(r"@import\s+['\"]?([^'\";]+)", data)


def parse(page: str) -> StrictParser:
    parser = StrictParser()
    parser.feed(page)
    parser.close()
    return parser


def external(urls: list[str]) -> list[str]:
    """URLs that would be fetched: anything with a scheme other than data:, or a relative path (a file beside)."""
    return [u for u in urls if not u.startswith(("data:", "#"))]


@pytest.fixture
def page(events: Table) -> str:
    return render_html(events.report())


def test_the_page_is_valid_html_and_loads_nothing_from_a_url(page: str) -> None:
    parsed = parse(page)
    assert parsed.doctype.lower() == "doctype html"
    assert parsed.problems == [] and parsed.stack == []
    assert parsed.tags.count("html") == parsed.tags.count("head") == parsed.tags.count("body") == 1
    assert parsed.tags.count("img") == 3  # storage, partitions, keep-up
    assert external(parsed.urls) == []
    assert all(u.startswith("data:image/svg+xml;base64,") for u in parsed.urls)
    assert "<script" not in page.lower() and "http://" not in re.sub(r"data:[^\"]+", "", page)


def test_the_checker_catches_what_it_looks_for() -> None:
    bad = parse(
        '<!DOCTYPE html><html><body><div id=a><p id=a></div><img src="https://cdn.example/x.png">'
        "<style>b{background:url(logo.png)}</style></body></html>"
    )
    assert "duplicate id a" in bad.problems and any("closes" in p for p in bad.problems)
    assert external(bad.urls) == ["https://cdn.example/x.png", "logo.png"]


def test_chromium_renders_it_without_console_errors(chromium_binary: str, events: Table, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    write_html(events.report(), str(html))
    shot = tmp_path / "report.png"
    rendered = render(html, shot, width=1200)
    assert rendered.errors == []
    assert rendered.requests[0] == html.resolve().as_uri()
    assert [u for u in rendered.requests[1:] if not u.startswith("data:")] == []
    assert len(rendered.requests) == 4  # the page and its three charts
    assert rendered.height > 1000
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (1200, rendered.height)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    white = sum(count for count, rgb in colours if min(rgb) >= 250)
    assert len(colours) > 50 and white < 0.95 * 1200 * rendered.height  # charts and text, not a blank page
    blue = sum(count for count, rgb in colours if rgb in ((0x2F, 0x6D, 0xB5), (0x43, 0x7A, 0xBC)))
    assert blue > 5_000  # the live-bytes area and the partition bars were drawn


def test_the_browser_check_sees_errors_and_fetches(chromium_binary: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("boom")</script></body></html>'
    )
    rendered = render(bad, tmp_path / "bad.png", width=400, height=300)
    assert any("boom" in e for e in rendered.errors) and any("missing.png" in e for e in rendered.errors)
    assert rendered.requests[1].endswith("missing.png")


def test_a_warehouse_page_ranks_then_details(tmp_path: Path, chromium_binary: str) -> None:
    from tableformat.report import warehouse_report

    for name, days in (("a", 3), ("b", 7)):
        build_events(tmp_path / "wh" / "db.db" / name, days=days)
    report = warehouse_report([str(tmp_path / "wh")])
    assert [t.name for t in report.tables] == ["db.a", "db.b"]
    page = render_html(report)
    parsed = parse(page)
    assert parsed.problems == [] and external(parsed.urls) == []
    assert page.index("tables,") < page.index('id="table-0"')
    ranked = [t.name for t in report.by_reclaimable()]
    assert ranked[0] == "db.b" and page.index('href="#table-0">db.b<') > 0
    html = tmp_path / "wh.html"
    html.write_text(page)
    assert render(html, tmp_path / "wh.png").errors == []


def test_missing_matplotlib_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    table = build_events(tmp_path / "t", days=3, orphans=False)
    report = table.report()
    monkeypatch.setattr(charts, "_MPL", None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ValidationError, match=r"pip install 'tablefmt\[report\]'"):
        render_html(report)


DUE_CELLS = """(() => {
  const header = [...document.querySelectorAll("th")].find(th => th.textContent.startsWith("next due"));
  const height = cell => { const range = document.createRange(); range.selectNodeContents(cell);
                           return range.getBoundingClientRect().height; };
  return [...header.closest("table").querySelectorAll("tbody tr")].map(row => ({
    text: row.lastElementChild.textContent,
    due: height(row.lastElementChild),
    line: height(row.children[1]),
  }));
})()"""
"""Per row of the rules table: the next-due cell's text, the height of its text (a Range's bounding rectangle:
the cell itself is as tall as the row, whose rule cell has two lines) and that of the one-line "frees now" cell."""


def test_the_next_due_cell_stays_on_one_line(chromium_binary: str, events: Table, tmp_path: Path) -> None:
    maintained = maintain_table(TableTarget(events.location, events.location), MaintainSettings(), owner="test")
    assert maintained.ok, maintained.errors
    report = events.report()
    due = [r for r in report.rules if r.next_due_ms is not None and r.next_due_ms > report.now_ms]
    assert [r.operation for r in due] == ["expire-partitions", "expire", "remove-orphans"]  # dated, not "now"
    html = tmp_path / "report.html"
    write_html(report, str(html))
    rendered = render(html, tmp_path / "report.png", width=1200, evaluate=(DUE_CELLS,))
    assert rendered.errors == []
    cells = rendered.values[0]
    assert len(cells) == len(report.rules)
    dated = [c for c in cells if re.search(r"\d\d:\d\d", c["text"])]
    assert len(dated) == 3, cells
    for cell in cells:
        assert 0 < cell["line"] < 30 and cell["due"] <= cell["line"] * 1.2, f"{cell['text']!r} wraps: {cell}"
