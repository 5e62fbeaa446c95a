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

__all__ = ["markdown_html"]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,9}[.)]\s+(.*)$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")
# Runs on escaped text: the URL cannot hold a quote or an angle bracket any more.
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^\s)]+)\)")


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
        # split() yields text, label, url, text, ...: emphasis never reaches an href
        pieces = _LINK.split(escaped)
        for k in range(0, len(pieces), 3):
            out.append(_emphasis(pieces[k]))
            if k + 2 < len(pieces):
                out.append(f'<a href="{pieces[k + 2]}" rel="noopener noreferrer" '
                           f'target="_blank">{_emphasis(pieces[k + 1])}</a>')
    return "".join(out)


def _emphasis(escaped: str) -> str:
    return _ITALIC.sub(r"<i>\1</i>", _BOLD.sub(r"<b>\1</b>", escaped))


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
        and bool(_TABLE_SEP.match(lines[i + 1]))
        and "|" in lines[i + 1]
    )


def markdown_html(text: str) -> str:
    """``text`` as HTML: the subset above, everything else escaped and shown as written."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
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
        heading = _HEADING.match(stripped)
        if heading:
            end_paragraph()
            level = min(6, len(heading.group(1)) + 2)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
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
            if stripped.startswith(">"):
                end_paragraph()
                quoted = []
                while i < len(lines) and lines[i].strip().startswith(">"):
                    quoted.append(lines[i].strip()[1:].strip())
                    i += 1
                out.append("<blockquote>" + markdown_html("\n".join(quoted)) + "</blockquote>")
                continue
            paragraph.append(stripped)
            i += 1
    end_paragraph()
    return "\n".join(out)
