"""A small, safe Markdown subset rendered to HTML, for model answers in the static output.

No dependency: every character of the input is HTML-escaped first, so no tag, attribute
or script written by a model can reach the page. Supported: headings, paragraphs (line
breaks kept), ``-``/``*``/``+`` and numbered lists, ``>`` quotes, fenced code, pipe
tables, ``---`` rules, and inline code, ``**bold**``, ``*italic*`` and ``[links](https://...)``
(http and https only). Anything else shows as its text. Headings are shifted down two
levels, so an answer's ``#`` does not outshout the notebook's own headings.
"""

from __future__ import annotations

import html
import re

__all__ = ["MAX_MARKDOWN_CHARS", "MAX_MARKDOWN_LINES", "MAX_QUOTE_DEPTH", "markdown_html"]

# Past either size an answer is shown as escaped plain text: rendering is linear, but
# Python's cost per line would make a huge answer of short lines slow to show
# (benchmarks/README.md, "Rendering hostile answers").
MAX_MARKDOWN_CHARS = 200_000
MAX_MARKDOWN_LINES = 10_000

# Quotes nested deeper than this show their remaining ``>`` as text: an answer of a
# million ``>`` must not recurse a million levels (or copy the text a million times).
MAX_QUOTE_DEPTH = 16

# Every pattern below is matched once per line (or per cell) at its start and cannot
# backtrack more than linearly; the constructs a regex would make quadratic or worse
# (headings, rules, table separators, bold, links) are scanned by hand instead.
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,9}[.)]\s+(.*)$")
_SEP_CELL = re.compile(r":?-+:?")
# Each start scans only to the next ``*``, so the whole line is scanned about once.
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")
_URL_STOP = re.compile(r"[\s)]")


def _heading(stripped: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading: 1-6 ``#``, whitespace, text, closing ``#``s."""
    hashes = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[hashes:]
    if not 1 <= hashes <= 6 or not rest[:1].isspace():
        return None
    return hashes, rest.lstrip().rstrip("#").rstrip()


def _is_rule(line: str) -> bool:
    """Three or more of one of ``-``, ``*``, ``_``, with any whitespace between."""
    marks = "".join(line.split())
    return len(marks) >= 3 and marks[0] in "-*_" and marks == marks[0] * len(marks)


def _is_separator(line: str) -> bool:
    """A table's ``|---|:-:|`` line: cells of dashes, optionally colon-aligned."""
    stripped = line.strip()
    stripped = stripped[1:] if stripped.startswith("|") else stripped
    stripped = stripped[:-1] if stripped.endswith("|") else stripped
    return all(_SEP_CELL.fullmatch(cell.strip()) for cell in stripped.split("|"))


def _inline(text: str) -> str:
    parts = text.split("`")
    out = []
    for n, part in enumerate(parts):
        escaped = html.escape(part, quote=True)
        if n % 2 and n < len(parts) - 1:  # inside a closed backtick pair
            out.append(f"<code>{escaped}</code>")
            continue
        if n % 2:  # an unclosed backtick stays literal
            escaped = "`" + escaped
        # text, label, url, text, ...: emphasis never reaches an href
        pieces = _split_links(escaped)
        for k in range(0, len(pieces), 3):
            out.append(_emphasis(pieces[k]))
            if k + 2 < len(pieces):
                out.append(f'<a href="{pieces[k + 2]}" rel="noopener noreferrer" '
                           f'target="_blank">{_emphasis(pieces[k + 1])}</a>')
    return "".join(out)


def _split_links(escaped: str) -> list[str]:
    """``[label](http(s)://url)`` links: text, label, url, text, ... (as ``re.split``).

    Runs on escaped text, so a URL cannot hold a quote or an angle bracket. A label is
    the text from the first ``[`` after the previous ``]`` up to the next ``]``, so each
    ``]`` is looked at once, and the URL's end is searched forward only.
    """
    pieces: list[str] = []
    text_from = search_from = 0
    stop_from, stop_at = 0, -1  # no whitespace or ")" in escaped[stop_from:stop_at]
    while (close := escaped.find("]", search_from)) != -1:
        start = escaped.find("[", search_from, close)
        search_from = close + 1
        if start == -1 or start == close - 1 or not escaped.startswith("(", close + 1):
            continue
        scheme = 8 if escaped.startswith("https://", close + 2) else 7
        if scheme == 7 and not escaped.startswith("http://", close + 2):
            continue
        url_from = close + 2 + scheme
        if not stop_from <= url_from <= stop_at:
            found = _URL_STOP.search(escaped, url_from)
            stop_from, stop_at = url_from, (len(escaped) if found is None else found.start())
        if stop_at == url_from or stop_at == len(escaped) or escaped[stop_at] != ")":
            continue
        pieces += [escaped[text_from:start], escaped[start + 1 : close],
                   escaped[close + 2 : stop_at]]
        text_from = search_from = stop_at + 1
    pieces.append(escaped[text_from:])
    return pieces


def _bold(escaped: str) -> str:
    """``**text**`` (text starting and ending with non-space) as ``<b>``, left to right.

    The closers an opener may use do not depend on the opener beyond lying after it, so
    an opener with no closer ends the search: the text is scanned once.
    """
    out: list[str] = []
    done = position = 0
    while (start := escaped.find("**", position)) != -1:
        if start + 2 >= len(escaped) or escaped[start + 2].isspace():
            position = start + 1
            continue
        end = escaped.find("**", start + 3)
        while end != -1 and escaped[end - 1].isspace():
            end = escaped.find("**", end + 1)
        if end == -1:
            break
        out += [escaped[done:start], "<b>", escaped[start + 2 : end], "</b>"]
        done = position = end + 2
    out.append(escaped[done:])
    return "".join(out)


def _emphasis(escaped: str) -> str:
    return _ITALIC.sub(r"<i>\1</i>", _bold(escaped))


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return [cell.strip() for cell in stripped.split("|")]


def _table(lines: list[str]) -> str:
    head, rows = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    out = ["<table>", "<thead><tr>"]
    out += [f"<th>{_inline(cell)}</th>" for cell in head]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = (row + [""] * len(head))[: len(head)]
        out.append("<tr>" + "".join(f"<td>{_inline(cell)}</td>" for cell in cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        "|" in lines[i]
        and i + 1 < len(lines)
        and "|" in lines[i + 1]
        and _is_separator(lines[i + 1])
    )


def markdown_html(text: str) -> str:
    """``text`` as HTML: the subset above, everything else escaped and shown as written.

    Linear in the length of ``text``: no construct backtracks or nests without bound.
    A text over MAX_MARKDOWN_CHARS or MAX_MARKDOWN_LINES is shown escaped, as written.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(text) > MAX_MARKDOWN_CHARS or len(lines) > MAX_MARKDOWN_LINES:
        return f'<pre style="white-space:pre-wrap">{html.escape(text)}</pre>'
    return _blocks(lines, 0)


def _blocks(lines: list[str], depth: int) -> str:
    """The blocks of ``lines``, ``depth`` quotes deep (quotes recurse, at most
    MAX_QUOTE_DEPTH levels, each on the quoted lines only)."""
    out: list[str] = []
    paragraph: list[str] = []

    def end_paragraph() -> None:
        if paragraph:
            out.append("<p>" + "<br>\n".join(_inline(p) for p in paragraph) + "</p>")
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            end_paragraph()
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            out.append("<pre><code>" + html.escape("\n".join(body)) + "</code></pre>")
            i += 1
            continue
        if not stripped:
            end_paragraph()
            i += 1
            continue
        heading = _heading(stripped)
        if heading:
            end_paragraph()
            level = min(6, heading[0] + 2)
            out.append(f"<h{level}>{_inline(heading[1])}</h{level}>")
            i += 1
            continue
        if _is_rule(line):
            end_paragraph()
            out.append("<hr>")
            i += 1
            continue
        if _is_table_start(lines, i):
            end_paragraph()
            block = [lines[i], lines[i + 1]]
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                block.append(lines[i])
                i += 1
            out.append(_table(block))
            continue
        for pattern, tag in ((_BULLET, "ul"), (_NUMBERED, "ol")):
            if pattern.match(line):
                end_paragraph()
                items = []
                while i < len(lines) and (match := pattern.match(lines[i])):
                    items.append(f"<li>{_inline(match.group(1))}</li>")
                    i += 1
                out.append(f"<{tag}>" + "".join(items) + f"</{tag}>")
                break
        else:
            if stripped.startswith(">") and depth < MAX_QUOTE_DEPTH:
                end_paragraph()
                quoted = []
                while i < len(lines) and lines[i].strip().startswith(">"):
                    quoted.append(lines[i].strip()[1:].strip())
                    i += 1
                out.append("<blockquote>" + _blocks(quoted, depth + 1) + "</blockquote>")
                continue
            paragraph.append(stripped)
            i += 1
    end_paragraph()
    return "\n".join(out)
