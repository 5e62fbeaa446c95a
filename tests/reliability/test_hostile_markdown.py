"""Hostile answers in the Markdown renderer: deep nesting, unclosed markers, huge texts.

Each answer is rendered in full (a RecursionError or a quadratic scan would fail or hang
the test); the output is asserted exactly or checked to hold no markup from the input.
Timings are in benchmarks/README.md, not asserted here.
"""

from __future__ import annotations

import html

import pytest

import swarmkit
from swarmkit.display.markdown import (
    MAX_MARKDOWN_CHARS,
    MAX_MARKDOWN_LINES,
    MAX_QUOTE_DEPTH,
    markdown_html,
)
from swarmkit.testing import FakeReply, FakeRequest, FakeServer

INJECTION = "<img src=x onerror=alert(1)>"


def test_an_answer_of_1500_quote_marks_nests_quotes_to_a_bound_and_shows_the_rest() -> None:
    page = markdown_html(">" * 1500)
    opened = "<blockquote>" * MAX_QUOTE_DEPTH
    closed = "</blockquote>" * MAX_QUOTE_DEPTH
    assert page == f"{opened}<p>{'&gt;' * (1500 - MAX_QUOTE_DEPTH)}</p>{closed}"


def test_ordinary_nested_quotes_render_as_before() -> None:
    assert markdown_html("> a\n> > b\n> c") == (
        "<blockquote><p>a</p>\n<blockquote><p>b</p></blockquote>\n<p>c</p></blockquote>"
    )


def test_64_kb_of_unclosed_bold_is_shown_as_written() -> None:
    text = "**a " * (64 * 1024 // 4)
    assert markdown_html(text) == f"<p>{text.strip()}</p>"


def test_unclosed_brackets_and_link_starts_are_shown_as_written() -> None:
    assert markdown_html("[" * 65536) == f"<p>{'[' * 65536}</p>"
    starts = "](http://" * 7000
    assert markdown_html(starts) == f"<p>{starts}</p>"
    # A real link after the noise is still found.
    assert markdown_html("]] [[[ [ok](https://example.org) ]]") == (
        '<p>]] <a href="https://example.org" rel="noopener noreferrer" target="_blank">'
        "[[ [ok</a> ]]</p>"
    )


def test_long_runs_of_spaces_in_headings_rules_and_table_separators_render() -> None:
    assert markdown_html("# a" + " " * 20000 + "b #") == f"<h3>a{' ' * 20000}b</h3>"
    assert markdown_html("- " * 20000 + "x").startswith("<ul><li>")
    separator = "|-" * 20000 + " x"
    assert markdown_html(f"|a|\n{separator}") == f"<p>|a|<br>\n{separator}</p>"


def test_markup_in_a_hostile_answer_is_escaped_at_any_size() -> None:
    for size in (1000, MAX_MARKDOWN_CHARS + 1, 1_000_000):
        text = (f"> **{INJECTION}** [x](https://e.org/{INJECTION})\n" * size)[:size]
        page = markdown_html(text)
        assert "<img" not in page and "&lt;img" in page


def test_an_answer_past_the_size_bounds_is_shown_as_escaped_plain_text() -> None:
    for text in ("x\n" * (MAX_MARKDOWN_LINES + 1), "*" * 1_000_000, f"**{INJECTION}" * 40000):
        assert markdown_html(text) == (
            f'<pre style="white-space:pre-wrap">{html.escape(text)}</pre>'
        )


@pytest.mark.parametrize("answer", [">" * 1500, "**a " * 16384, "[" * 100_000,
                                    f"# {INJECTION}" + " " * 100_000 + "x"])
def test_a_run_whose_reducer_answers_hostile_markdown_still_shows_its_tables(
    answer: str,
) -> None:
    def handler(request: FakeRequest) -> FakeReply | None:
        return FakeReply(content=answer) if request.role == "reducer" else None

    with FakeServer(handler, plan_tasks=2) as fake:
        run = swarmkit.run_sync("Summarise", model="fake-model", base_url=fake.base_url,
                                workers=2, history=False)
    assert run.status == "completed" and run.answer == answer
    page = run.tables().html()
    assert '<div class="swarmkit-answer">' in page and "<img" not in page
