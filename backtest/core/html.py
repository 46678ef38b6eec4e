"""Self-contained HTML pages: one style, and tables a reader can sort, with nothing fetched from anywhere.

:func:`page` wraps body parts into a page with the shared style and the sorting script inline (no CDN,
works from ``file://``). A ``<table class='sortable'>`` with ``<thead>``/``<tbody>`` sorts by a column when
its header is clicked (again: the other way); a cell's ``data-sort`` is the value it sorts by (a number
for rates), else its text. ``#sort=TABLE_ID:COLUMN:asc|desc`` in the address applies a sort when the page
opens, so a link (or a test driving a headless browser) can show a table sorted.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}.invalid{background:#fdd}"
    ".banner{background:#c00;color:#fff;padding:8px;font-weight:bold}"
    "table.sortable th{cursor:pointer;background:#f4f4f4}"
    "table.sortable th[data-dir=asc]::after{content:' \\25B2'}"
    "table.sortable th[data-dir=desc]::after{content:' \\25BC'}"
    ".muted{color:#666}.documents{list-style:none;padding-left:0}.doc{margin:0.3em 0 0.8em 0}"
    ".cited{background:#e8f4e8}nav a{margin-right:1em}"
)

SORT_SCRIPT = """
(function(){
  function key(cell){
    var v = cell.getAttribute('data-sort');
    if (v === null) v = cell.textContent.trim();
    var n = parseFloat(v);
    return (v !== '' && !isNaN(n) && isFinite(v)) ? n : v.toLowerCase();
  }
  function sortTable(table, col, asc){
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function(a, b){
      var x = key(a.cells[col]), y = key(b.cells[col]);
      if (typeof x !== typeof y){ x = String(x); y = String(y); }
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    });
    rows.forEach(function(r){ body.appendChild(r); });
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute('data-dir');
    heads[col].setAttribute('data-dir', asc ? 'asc' : 'desc');
  }
  var tables = document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables, function(table){
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function(th, col){
      th.addEventListener('click', function(){ sortTable(table, col, th.getAttribute('data-dir') !== 'asc'); });
    });
  });
  var m = /sort=([\\w-]+):(\\d+):(asc|desc)/.exec(location.hash);
  if (m){ var t = document.getElementById(m[1]); if (t) sortTable(t, +m[2], m[3] === 'asc'); }
})();
"""


def page(title: str, parts: Iterable[str], nav: Sequence[tuple[str, str]] = ()) -> str:
    """A whole page: ``parts`` (HTML) under the shared style, ``nav`` (label, href) links on top, the sorting
    script at the end."""
    esc = html.escape
    links = "".join(f"<a href='{esc(href)}'>{esc(label)}</a>" for label, href in nav)
    return "\n".join(
        [
            f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
            f"<style>{STYLE}</style></head><body>",
            *([f"<nav>{links}</nav>"] if links else []),
            *parts,
            f"<script>{SORT_SCRIPT}</script></body></html>\n",
        ]
    )


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], table_id: str | None = None, sortable: bool = True
) -> str:
    """A table of already-escaped cell HTML (a cell may be ``<td ...>`` itself, to carry ``data-sort`` or a
    class); headers are escaped here."""
    attrs = (f" id='{html.escape(table_id)}'" if table_id else "") + (" class='sortable'" if sortable else "")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def markdown_text(text: object) -> str:
    """Other people's text (a question, a premise, a title, a judge's name) for a Markdown line: HTML escaped (a
    Markdown renderer passes raw HTML through, so ``<script>`` would run) and square brackets escaped (so
    ``[click](javascript:...)`` cannot form a live link or an image)."""
    return html.escape(str(text)).replace("[", "\\[").replace("]", "\\]")


def markdown_cell(text: object) -> str:
    """:func:`markdown_text` safe inside a Markdown table cell: whitespace (newlines too) folded, pipes escaped."""
    return markdown_text(" ".join(str(text).split())).replace("|", "\\|")


def rate_cell(text: str, rate: float | None) -> str:
    """A cell that shows ``text`` and sorts by ``rate`` (missing rates sort first)."""
    return f"<td data-sort='{-1 if rate is None else round(rate, 6)}'>{html.escape(text)}</td>"
