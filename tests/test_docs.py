"""The documentation: README.md and docs/*.md stay true to the code they describe.

- README.md stays short (at most 300 lines).
- Every relative link in README.md and docs/*.md names a file that exists (the part before any
  ``#``); no page links outside the repository.
- docs/settings.md's table is the one ``config.settings_table()`` generates from the settings'
  declarations (``python -m flagadmin.config --write docs/settings.md`` rewrites it).
- Each ``pytest FILE... -k "EXPR"`` command in docs/tests.md still selects at least one test
  (one collection of their files, then each expression matched as pytest's ``-k`` matches it,
  with pytest's own expression parser).
- No page says "issue N" or "#N": the reader names behaviours, not tickets.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from flagadmin import config

pytestmark = pytest.mark.same_on_both_engines

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A Markdown link or image: [text](target) or ![alt](target); the target up to a space or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
#: A command of docs/tests.md's table: `pytest FILE... -k "EXPR"`.
SELECTION = re.compile(r"`pytest ([^`]* -k [^`]*)`")


def _relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    targets = LINK.findall(text)
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def test_readme__at_most_300_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 300


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page__every_relative_link__names_an_existing_file_in_the_repository(page):
    broken = []
    for target in _relative_links(page):
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT not in (path, *path.parents):
            broken.append(target)
    assert broken == []


def test_docs__the_pages_the_readme_promises__exist():
    for name in ("self-hosting", "settings", "api", "flags", "webhooks", "scim", "postgresql"):
        assert (ROOT / "docs" / f"{name}.md").exists(), name
    for name in ("operations", "seed-format", "benchmarks", "tests"):
        assert (ROOT / "docs" / f"{name}.md").exists(), name


def test_settings_page__table__is_the_generated_one():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert config.TABLE_START in page and config.TABLE_END in page
    table = page.split(config.TABLE_START + "\n", 1)[1].split(config.TABLE_END, 1)[0]
    assert table == config.settings_table(), (
        "docs/settings.md's table differs from config.SETTINGS: run "
        "`.venv/bin/python -m flagadmin.config --write docs/settings.md`"
    )


def test_settings_table__one_row_per_declaration_with_its_default():
    rows = config.settings_table().splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == [f"| `{s.variable}`" for s in config.SETTINGS]
    assert any(
        row.startswith("| `FLAGADMIN_DELIVERY_RETRY_SCHEDULE` | `5s,5m,30m,2h,5h,10h` |") for row in rows
    )


def test_settings_module__run__prints_the_table():
    result = subprocess.run(
        [sys.executable, "-m", "flagadmin.config"], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout == config.settings_table()


def test_rewrite_table__replaces_what_lies_between_the_markers():
    page = f"# S\n\n{config.TABLE_START}\n| stale |\n{config.TABLE_END}\n\nAfter.\n"
    rewritten = config.rewrite_table(page)
    assert (
        rewritten == f"# S\n\n{config.TABLE_START}\n{config.settings_table()}{config.TABLE_END}\n\nAfter.\n"
    )
    with pytest.raises(ValueError, match="settings table"):
        config.rewrite_table("# no markers\n")


def _selections() -> list[tuple[list[str], str]]:
    """docs/tests.md's commands as (test files, -k expression)."""
    selections = []
    for command in SELECTION.findall((ROOT / "docs" / "tests.md").read_text(encoding="utf-8")):
        args = shlex.split(command)
        k = args.index("-k")
        selections.append(([a for a in args if a.endswith(".py")], args[k + 1]))
    return selections


@pytest.fixture(scope="module")
def collected() -> list[str]:
    """The node ids of every test in the files docs/tests.md names (one collection for all)."""
    files = sorted({f for files, _ in _selections() for f in files})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def _selects(expression: str, node_id: str) -> bool:
    """Whether ``pytest -k expression`` selects ``node_id``: each name in the expression matches
    when it is a substring (any case) of the test's name or of a parent's (its file, its folder,
    its class), as pytest's own keyword matching does for these names."""
    path, *rest = node_id.split("::")
    names = [*Path(path).parts, *rest]
    return Expression.compile(expression).evaluate(
        lambda sub, /, **kwargs: any(sub.lower() in name.lower() for name in names)
    )


def test_tests_page__lists_commands():
    assert len(_selections()) >= 5


@pytest.mark.parametrize(
    ("files", "expression"), _selections(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_tests_page__each_command__selects_at_least_one_test(collected, files, expression):
    candidates = [n for n in collected if n.split("::")[0] in files]
    assert {n.split("::")[0] for n in candidates} == set(files), "a file of the command has no tests"
    assert any(_selects(expression, n) for n in candidates), f"-k {expression!r} selects nothing in {files}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page__names_no_issue_numbers(page):
    text = page.read_text(encoding="utf-8")
    assert re.findall(r"\b[Ii]ssues? \d+|(?<![\w&/])#\d+\b", text) == []
