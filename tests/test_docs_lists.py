"""Lists in the README and the documentation render as lists: Markdown (Python-Markdown, which builds the site)
only starts a list after a blank line, so a list item written directly under a paragraph line renders as that
paragraph's text with a literal " - "."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
ITEM = re.compile(r"^(?:[-*+]|\d+\.) \S")
FENCE = re.compile(r"^\s*(```|~~~)")


def glued_list_items(text: str) -> list[int]:
    """Line numbers (1-based) of list items that follow a paragraph line with no blank line between, outside code
    blocks: the paragraph line is not blank, not itself a list item or a list item's indented continuation, and
    not a heading, table row, quotation or HTML line."""
    found, fenced, previous = [], False, ""
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            previous = ""
            continue
        if fenced:
            continue
        paragraph = previous.strip() and not previous[0].isspace() and not ITEM.match(previous)
        if paragraph and not re.match(r"^(#|\||>|<)", previous) and ITEM.match(line):
            found.append(number)
        previous = line
    return found


def test_a_list_item_under_a_paragraph_line_is_found():
    assert glued_list_items("Text:\n- a\n- b\n") == [2]
    assert glued_list_items("Text:\n\n- a\n  more\n- b\n1. c\n") == []
    assert glued_list_items("```\nx\n- y\n```\n") == []


def test_every_list_of_the_readme_and_the_documentation_follows_a_blank_line():
    glued = {
        str(page.relative_to(REPO)): lines
        for page in PAGES
        if (lines := glued_list_items(page.read_text(encoding="utf-8")))
    }
    assert glued == {}


def paragraphs_with_list_text(text: str) -> list[str]:
    """The paragraphs of ``text`` rendered as the site renders it (Python-Markdown with the site's extensions) that
    hold a line starting like a list item: a list that did not render (e.g. after a paragraph indented too little
    to stay in its list item)."""
    import markdown

    html = markdown.markdown(text, extensions=["admonition", "tables", "pymdownx.superfences"])
    return [p[:80] for p in re.findall(r"<p>(.*?)</p>", html, flags=re.S) if re.search(r"\n\s*(?:[-*+]|\d+\.) ", p)]


def test_a_list_that_leaves_its_item_is_found_in_the_rendered_page():
    assert paragraphs_with_list_text("- a\n\n  b\n- c\n")  # two-space continuation: the next item is text
    assert paragraphs_with_list_text("- a\n\n    b\n- c\n")  # a paragraph in an item needs a blank line after it
    assert paragraphs_with_list_text("- a\n\n    b\n\n- c\n") == []


def test_every_list_of_the_readme_and_the_documentation_renders_as_a_list():
    shown = {
        str(page.relative_to(REPO)): found
        for page in PAGES
        if (found := paragraphs_with_list_text(page.read_text(encoding="utf-8")))
    }
    assert shown == {}
