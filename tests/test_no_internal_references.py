"""The shipped sources cite papers by authors and venue, never by the numbers of a private reading folder.

Users never see that folder, so a reference such as "seed 003", "seed-001" or
"notes on seed 004, item 6" tells them nothing. The scan covers the packages,
the examples, the README, the documentation sources (``docs/``, not its build
outputs) and BENCHMARKS.md. Random seeds are not references: ``seed=003``,
``seed 0`` or ``seed 2015`` are not matched, only the word "seed" (or "seeds")
followed, with at most a space and a hyphen, by exactly three digits starting
with 0.

The documentation and BENCHMARKS.md are also read by people outside the
project's issue tracker, so there an issue number ("issue 5", "issues 6 and
7", "#14") is an internal reference too (:data:`ISSUE_PATTERNS`).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("asyncdp", "accounting", "topology", "examples", "README.md", "docs", "BENCHMARKS.md")
"""Source trees (and files) that users read."""
PUBLIC_TEXT = ("docs", "BENCHMARKS.md")
"""Of those, the ones that must not name issue numbers either."""
SUFFIXES = frozenset({".py", ".pyi", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".json", ".yaml", ".yml"})
"""Text files scanned inside the trees (generated data and caches are skipped by the ``SKIP_DIRS`` below)."""
SKIP_DIRS = frozenset({"__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                       "_build", "gallery", "out"})
"""Caches and generated outputs (``docs/_build``, ``docs/gallery``: copies of the examples, which are scanned)."""

PATTERNS = (
    re.compile(r"\b[Ss]eeds? ?-?0\d\d\b"),  # "seed 003", "Seed 000's", "seeds 000 and 001", "seed-003"
    re.compile(r"SEED0\d\d"),  # module constants such as _SEED003
    re.compile(r"notes on seed", re.IGNORECASE),
)
ISSUE_PATTERNS = (
    re.compile(r"\b[Ii]ssues? ?#?\d+"),  # "issue 5", "(issues 6 and 7)", "Issue #14"
    re.compile(r"(?<![\w&/#])#\d{1,4}\b"),  # "#14", but not "&#39;", "page#3" or a colour "#1f77b4"
)


def internal_references(path: Path, patterns: tuple[re.Pattern[str], ...] = PATTERNS) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``path`` that matches one of ``patterns``."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if any(p.search(line) for p in patterns)]


def _patterns_for(path: Path) -> tuple[re.Pattern[str], ...]:
    public = path.relative_to(ROOT).parts[0] in PUBLIC_TEXT
    return PATTERNS + ISSUE_PATTERNS if public else PATTERNS


def _shipped_files() -> list[Path]:
    files: list[Path] = []
    for name in SHIPPED:
        top = ROOT / name
        if top.is_file():
            files.append(top)
        elif top.is_dir():
            files.extend(p for p in sorted(top.rglob("*"))
                         if p.is_file() and p.suffix in SUFFIXES and not SKIP_DIRS & set(p.relative_to(ROOT).parts))
    return files


def test_the_scan_sees_the_shipped_trees() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in _shipped_files()}
    assert {"README.md", "BENCHMARKS.md", "asyncdp/__init__.py", "accounting/__init__.py", "topology/__init__.py",
            "docs/conf.py", "docs/index.md"} <= files
    assert any(f.startswith("examples/") for f in files)
    assert not any(f.startswith(("docs/_build/", "docs/gallery/")) for f in files)


def test_the_patterns_catch_paper_numbers_but_not_random_seeds(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    flagged = ["(seed 003, Lemma 4)", "Seed 000's Fig. 1", "seeds 000 and 001", "the seed-003 measure",
               "_SEED004 = 'x'", "see our notes on seed 001, item 2", "seed 042"]
    clean = ["rng = default_rng(seed=003)", "run with seed 0", "seed 2015", "seed=42", "seeds 0..9",
             "SeedSequence(7)", "seed 0123", "seed 1000"]
    sample.write_text("\n".join(flagged + clean) + "\n", encoding="utf-8")
    assert [n for n, _ in internal_references(sample)] == list(range(1, len(flagged) + 1))


def test_the_issue_patterns_catch_issue_numbers_but_not_other_numbers(tmp_path: Path) -> None:
    sample = tmp_path / "sample.md"
    flagged = ["## Topology audit (issue 2)", "Reproductions, full size (issues 6 and 7)", "see Issue #14",
               "fixed in #123", "(issue 15, like-for-like)"]
    clean = ["No target was set.", "an issue with the clock", "color: #1f77b4;", "&#39;quoted&#39;",
             "page.html#3", "commit 5bf3d87", "N = 10^4 agents"]
    sample.write_text("\n".join(flagged + clean) + "\n", encoding="utf-8")
    found = [n for n, _ in internal_references(sample, PATTERNS + ISSUE_PATTERNS)]
    assert found == list(range(1, len(flagged) + 1))


def test_only_the_public_text_is_scanned_for_issue_numbers() -> None:
    assert _patterns_for(ROOT / "BENCHMARKS.md") == PATTERNS + ISSUE_PATTERNS
    assert _patterns_for(ROOT / "docs" / "index.md") == PATTERNS + ISSUE_PATTERNS
    assert _patterns_for(ROOT / "asyncdp" / "__init__.py") == PATTERNS


def test_no_internal_paper_numbers_in_shipped_sources() -> None:
    hits = [f"{path.relative_to(ROOT).as_posix()}:{n}: {line}"
            for path in _shipped_files() for n, line in internal_references(path, _patterns_for(path))]
    assert not hits, ("cite the paper by authors and venue/year instead of an internal number, and do not name "
                      "issue numbers in the documentation or BENCHMARKS.md:\n" + "\n".join(hits))
