"""The commands the documentation shows are the ones the installed ``asyncdp`` accepts.

Every ``asyncdp ...`` line of a shell block (``bash``) of the pages and the
README parses with the command's own parser (:func:`asyncdp.cli.build_parser`),
every option of the command-line page's table is an option of its command,
every ``examples/NAME.py`` a page names exists, and a verdict a page writes
after a privacy-check command (``# violation``) is the one the example keeps
(``tests/asyncdp/privacy/test_example_verdicts.py``). Parsing only: nothing
runs, so the commands' outputs are left to the command-line tests and the
gallery.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from asyncdp.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
SHELL = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
VERDICT = re.compile(r"\b(pass|violation|inconclusive|no-claim)\b")
EXAMPLE = re.compile(r"examples/([A-Za-z0-9_]+\.py)|gallery/([A-Za-z0-9_]+)`")
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts) + [ROOT / "README.md"]


def _commands(text: str) -> list[tuple[str, str]]:
    """``(command, comment)`` of every ``asyncdp`` command in the shell blocks of ``text`` (``&&`` chains split)."""
    found = []
    for block in SHELL.findall(text):
        for line in block.splitlines():
            code, _, comment = line.partition("#")
            for part in code.split("&&"):
                if part.strip().startswith("asyncdp "):
                    found.append((part.strip(), comment.strip()))
    return found


COMMANDS = [(page.relative_to(ROOT).as_posix(), cmd, comment)
            for page in PAGES for cmd, comment in _commands(page.read_text(encoding="utf-8"))]


def _parse_error(command: str) -> str | None:
    """The parser's complaint about ``command`` (``asyncdp ...``), or ``None`` when it parses."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(shlex.split(command)[1:])
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1]
    return None


def _subparser(words: list[str]) -> argparse.ArgumentParser:
    """The parser of the subcommand ``words`` (e.g. ``["privacy", "check"]``)."""
    parser = build_parser()
    for word in words:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[word]
    return parser


def test_the_patterns_find_commands_and_the_parser_rejects_a_wrong_option() -> None:
    text = "```bash\npip install . && asyncdp demo   # x\nasyncdp run a.py --json o.json\n```\n```python\nasyncdp\n```"
    assert _commands(text) == [("asyncdp demo", "x"), ("asyncdp run a.py --json o.json", "")]
    assert _parse_error("asyncdp run a.py --runs 3") is not None  # `run` has no --runs: a stale page would fail
    assert _parse_error("asyncdp privacy check a.py --runs 10") is None
    assert len(COMMANDS) >= 20 and {"README.md", "docs/tutorials/run-a-sweep.md"} <= {p for p, _, _ in COMMANDS}


@pytest.mark.parametrize(("page", "command"), [(p, c) for p, c, _ in COMMANDS],
                         ids=[f"{p}: {c}" for p, c, _ in COMMANDS])
def test_every_documented_command_parses(page: str, command: str) -> None:
    assert _parse_error(command) is None, f"{page}: {command!r}: {_parse_error(command)}"


def test_every_option_of_the_cli_table_is_an_option_of_its_command() -> None:
    rows = re.findall(r"^\| `asyncdp ([^`]+)` \|", (ROOT / "docs/cli.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert len(rows) >= 8
    for row in rows:
        words = re.match(r"[a-z ]+", row).group(0).split()
        parser = _subparser(words[:2] if words[0] in ("privacy", "topology") else words[:1])
        if words[:2] == ["topology", "generate"]:
            parser = _subparser(["topology", "generate", "b-connected"])  # -o is every kind's
        accepted = {s for a in parser._actions for s in a.option_strings}
        shown = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", row))
        assert shown <= accepted, f"docs/cli.md: `asyncdp {row}`: {sorted(shown - accepted)} not accepted"


def test_every_example_a_page_names_exists() -> None:
    named = {(page.relative_to(ROOT).as_posix(), a or f"{b}.py")
             for page in PAGES for a, b in EXAMPLE.findall(page.read_text(encoding="utf-8"))}
    named = {(page, name) for page, name in named if name != "index.py"}  # gallery/index is the gallery's page
    assert len(named) >= 10
    missing = sorted((page, name) for page, name in named if not (ROOT / "examples" / name).is_file())
    assert not missing, missing


def test_a_verdict_written_after_a_privacy_check_is_the_examples_tested_verdict() -> None:
    tree = ast.parse((ROOT / "tests/asyncdp/privacy/test_example_verdicts.py").read_text(encoding="utf-8"))
    (documented,) = [ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                     and [getattr(t, "id", None) for t in node.targets] == ["DOCUMENTED"]]
    stated = [(page, cmd, VERDICT.search(comment).group(1)) for page, cmd, comment in COMMANDS
              if cmd.startswith("asyncdp privacy check examples/") and VERDICT.search(comment)]
    assert len(stated) >= 5
    for page, cmd, verdict in stated:
        name = Path(shlex.split(cmd)[3]).name
        assert documented.get(name) == verdict, (f"{page}: {cmd!r} says {verdict}; "
                                                 f"test_example_verdicts.py keeps {documented.get(name)}")
