"""The Markdown subset: what it renders, and that nothing a model writes becomes markup."""

from __future__ import annotations

from swarmkit.display.markdown import markdown_html


def test_headings_lists_code_and_tables() -> None:
    page = markdown_html(
        "# Title\n\n- one\n- **two**\n\n1. first\n2. second\n\n"
        "```\nx = '<b>'\n```\n\n| a | b |\n|---|:-:|\n| `1` | 2 |\n"
    )
    assert "<h3>Title</h3>" in page
    assert "<ul><li>one</li><li><b>two</b></li></ul>" in page
    assert "<ol><li>first</li><li>second</li></ol>" in page
    assert "<pre><code>x = &#x27;&lt;b&gt;&#x27;</code></pre>" in page
    assert "<th>a</th><th>b</th>" in page and "<td><code>1</code></td><td>2</td>" in page


def test_line_breaks_inside_a_paragraph_are_kept() -> None:
    assert markdown_html("line one\nline two") == "<p>line one<br>\nline two</p>"


def test_html_in_the_text_is_escaped_everywhere() -> None:
    hostile = [
        "<script>alert(1)</script>",
        "# <img src=x onerror=alert(1)>",
        "- <iframe>",
        "| <a> | b |\n|---|---|\n| <svg onload=x> | y |",
        "> <style>body{}</style>",
        "**<b>**",
    ]
    for text in hostile:
        page = markdown_html(text)
        for tag in ("<script", "<img", "<iframe", "<a>", "<svg", "<style", "<b><b>"):
            assert tag not in page, (text, page)


def test_only_http_links_become_anchors() -> None:
    page = markdown_html('[ok](https://example.org/a?b=1&c=2) [bad](javascript:alert(1)) '
                         '[quote](https://x.org/"onmouseover=alert(1))')
    assert '<a href="https://example.org/a?b=1&amp;c=2"' in page
    assert "javascript:alert(1)</a>" not in page and 'href="javascript' not in page
    assert '"onmouseover' not in page


def test_emphasis_does_not_touch_snake_case_or_arithmetic() -> None:
    assert markdown_html("snake_case_name and 2*3*4") == "<p>snake_case_name and 2*3*4</p>"
    assert markdown_html("an *emphasis* here") == "<p>an <i>emphasis</i> here</p>"
