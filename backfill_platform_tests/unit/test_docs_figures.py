"""Figures that go stale stay out of the docs: no page states how many tests there are, and the time of
`make test` is stated in one place only, the README's quick start, dated. pytest prints the count and the
time of every run; `make demo` prints its steps' times and its own. docs/performance.md is left out: it is a
record of dated measurements.
"""

from __future__ import annotations

import re
from pathlib import Path

import backfill_platform

REPO_ROOT = Path(backfill_platform.__file__).parent.parent
DATED_RECORDS = {"docs/performance.md"}

# The one place a figure of the suite stays: the README's quick start line of `make test`.
ALLOWED_FILE = "README.md"
ALLOWED_LINE = re.compile(r"^make test +# ")
DATED_TIME = re.compile(r"about \d+ minutes on 2 cores\b.*\bmeasured \d{4}-\d{2}-\d{2}\b")

TEST_COUNT = re.compile(r"\b(?:\d{1,3}(?:,\d{3})+|\d{3,})\s+tests\b", re.IGNORECASE)
MINUTES = re.compile(r"[\d\u00bd][\d\u00bd.,\u2013-]*\s*(?:minutes?|mins?)\b", re.IGNORECASE)  # ½, en dash
MAKE_TEST_OR_DEMO = re.compile(r"make (?:test|demo)\b(?!-)")


def pages() -> dict[str, list[str]]:
    """README.md and docs/*.md (but the dated record), by path relative to the repository, as lines."""
    paths = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    found = {str(path.relative_to(REPO_ROOT)): path.read_text().splitlines() for path in paths}
    assert "docs/getting-started.md" in found, "no docs page read"
    return {name: lines for name, lines in found.items() if name not in DATED_RECORDS}


def allowed(name: str, line: str) -> bool:
    return name == ALLOWED_FILE and ALLOWED_LINE.match(line) is not None


def test_no_page_states_a_test_count() -> None:
    """A count of tests is stale by the next commit; pytest prints it (a count wrapped over a line break too)."""
    stated = []
    for name, lines in pages().items():
        text = "\n".join(lines)
        for match in TEST_COUNT.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            if not allowed(name, lines[number - 1]):
                stated.append(f"{name}:{number}: {match.group(0)!r}")
    assert stated == [], "a test count stated (pytest prints it; see test_docs_figures.py):\n" + "\n".join(
        stated
    )


def test_the_time_of_make_test_is_stated_once_and_dated() -> None:
    """The README's quick start says how long `make test` took, and when; no other line that names
    `make test` or `make demo` gives a time in minutes (a dated measurement that names neither is left alone)."""
    readme = pages()[ALLOWED_FILE]
    quick_start = [line for line in readme if allowed(ALLOWED_FILE, line)]
    assert len(quick_start) == 1, "README.md: no one `make test` line in the quick start"
    assert DATED_TIME.search(quick_start[0]), (
        f"README.md: the time of `make test` is 'about N minutes on 2 cores ..., measured YYYY-MM-DD': {quick_start[0]!r}"
    )
    repeated = [
        f"{name}:{number}: {line.strip()!r}"
        for name, lines in pages().items()
        for number, line in enumerate(lines, start=1)
        if MAKE_TEST_OR_DEMO.search(line) and MINUTES.search(line) and not allowed(name, line)
    ]
    assert repeated == [], (
        "a time of `make test` or `make demo` stated again (say it in README.md only):\n"
        + "\n".join(repeated)
    )
