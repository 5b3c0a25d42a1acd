"""The paper pages' reproduction figures, built with the site (a Sphinx extension).

When the build starts, every job of :data:`reproduction_jobs.JOBS` starts in
its own process, two at a time, while Sphinx reads the pages and the gallery
runs the examples; each writes its files into ``docs/_reproductions/NAME/``
(generated, like ``docs/gallery/``). On a page,

.. code-block:: markdown

    ```{reproduction} huang2015-fig1
    :alt: what the figure shows

    The caption (Markdown).
    ```

waits for that job and puts its figure on the page, the caption starting
with the size it ran at (the command and the experiment's defaults), and
after the figure the table the experiment printed. ``{reproduction-jobs}``
lists every job with its size and the CPU seconds it took. A job that fails
or times out fails the build, with the end of its output. Pages with these
directives are read again on every build, since their jobs run again.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.environment import BuildEnvironment
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

import reproduction_jobs

OUT_FOLDER = "_reproductions"
"""Where the jobs write, under the documentation's source folder (srcdir-rooted image paths need it there)."""
WORKERS = 2
"""Jobs running at once (the build machine's two cores; the gallery runs beside them)."""
TIMEOUT = 600
"""Seconds one job may take before the build fails."""

_futures: dict[str, Future[Path]] = {}


def _run_job(name: str, out: Path) -> Path:
    env = dict(os.environ, MPLBACKEND="Agg")
    script = Path(reproduction_jobs.__file__).resolve()
    try:
        proc = subprocess.run([sys.executable, str(script), name, str(out)], capture_output=True, text=True,
                              env=env, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise ExtensionError(f"reproduction {name!r} took more than {TIMEOUT} s") from None
    if proc.returncode != 0:
        raise ExtensionError(f"reproduction {name!r} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return out


def start_jobs(app: Sphinx, config: Config) -> None:
    """Start every job (``config-inited``: before the gallery runs its examples)."""
    root = Path(app.srcdir, OUT_FOLDER)
    shutil.rmtree(root, ignore_errors=True)
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="reproduction")
    for name in reproduction_jobs.JOBS:
        _futures[name] = pool.submit(_run_job, name, root / name)
    pool.shutdown(wait=False)


def _result(name: str) -> Path:
    if name not in _futures:
        raise ExtensionError(f"no reproduction job {name!r} (docs/_ext/reproduction_jobs.py: "
                             f"{', '.join(reproduction_jobs.JOBS)})")
    return _futures[name].result()


def _defaults(name: str) -> dict[str, Any]:
    from asyncdp.reproduce import EXPERIMENTS

    params = inspect.signature(EXPERIMENTS[name]).parameters
    return {key: p.default for key, p in params.items() if p.default is not inspect.Parameter.empty}


def size_text(name: str) -> str:
    """The caption's first sentence: how the job ran, against the experiment's defaults (Markdown)."""
    job = reproduction_jobs.JOBS[name]
    if job.call is not None:
        return (f"Built with this site by `{job.call.__name__}` (in `docs/_ext/reproduction_jobs.py`, shown "
                "below), at a size smaller than the command's default.")
    defaults = _defaults(name)
    full = " ".join(f"--{key.replace('_', '-')} {defaults.get(key, '?')}" for key in job.options)
    plural = "s" if len(job.options) > 1 else ""
    return (f"Built with this site by `{reproduction_jobs.command(name)}`, a reduced size (the default{plural}: "
            f"`{full}`).")


class _Tracked(SphinxDirective):
    def track(self) -> None:
        env: Any = self.env
        if not hasattr(env, "reproduction_docs"):
            env.reproduction_docs = set()
        env.reproduction_docs.add(self.env.docname)


class ReproductionDirective(_Tracked):
    """``{reproduction} NAME``: the job's figure, caption and printed table."""

    required_arguments = 1
    has_content = True
    option_spec = {"alt": directives.unchanged_required, "no-output": directives.flag}

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        self.track()
        try:
            out = _result(name)
        except ExtensionError as exc:
            raise self.error(str(exc)) from None
        job = reproduction_jobs.JOBS[name]
        figure = nodes.figure()
        uri = f"/{OUT_FOLDER}/{name}/{job.figure}"
        # a width makes Sphinx link the image to its full size (html_scaled_image_link): wide figures shrink
        figure += nodes.image(uri=uri, alt=self.options.get("alt", name), width="100%")
        body = nodes.Element()
        text = size_text(name) + ("\n\n" + "\n".join(self.content) if self.content else "")
        self.state.nested_parse(self._lines(text), self.content_offset, body)
        paragraphs = list(body.children)
        if paragraphs and isinstance(paragraphs[0], nodes.paragraph):
            caption = nodes.caption("", "", *paragraphs[0].children)
            figure += caption
            rest = paragraphs[1:]
        else:
            rest = paragraphs
        if rest:
            figure += nodes.legend("", *rest)
        result: list[nodes.Node] = [figure]
        if "no-output" not in self.options:
            printed = (out / "output.txt").read_text(encoding="utf-8").rstrip()
            literal = nodes.literal_block(printed, printed, language="text")
            result += [nodes.paragraph("", f"What the reproduction printed in this build ({name}):"), literal]
        return result

    def _lines(self, text: str) -> Any:
        from docutils.statemachine import StringList

        return StringList(text.splitlines(), source=self.env.docname)


class ReproductionJobsDirective(_Tracked):
    """``{reproduction-jobs}``: a table of every job, its size and its CPU seconds in this build."""

    def run(self) -> list[nodes.Node]:
        self.track()
        table = nodes.table()
        group = nodes.tgroup(cols=3)
        table += group
        for width in (3, 5, 1):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        body = nodes.tbody()
        group += body
        head += self._row(["reproduction", "run at build time", "CPU seconds"], literal=False)
        for name, job in reproduction_jobs.JOBS.items():
            try:
                out = _result(name)
            except ExtensionError as exc:
                raise self.error(str(exc)) from None
            cpu = json.loads((out / "job.json").read_text(encoding="utf-8"))["cpu_seconds"]
            how = reproduction_jobs.command(name) or f"{getattr(job.call, '__name__', '?')}(out_dir)"
            body += self._row([name, how, f"{cpu:.0f}"], literal=True)
        return [table]

    @staticmethod
    def _row(cells: list[str], literal: bool) -> nodes.row:
        row = nodes.row()
        for k, text in enumerate(cells):
            entry = nodes.entry()
            para = nodes.paragraph()
            para += nodes.literal(text, text) if literal and k < 2 else nodes.Text(text)
            entry += para
            row += entry
        return row


def always_read(app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str],
                removed: set[str]) -> list[str]:
    """Read the pages with reproductions again (``env-get-outdated``): their jobs ran again."""
    docs: set[str] = getattr(env, "reproduction_docs", set())
    return sorted(d for d in docs if d in env.found_docs)


def purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    getattr(env, "reproduction_docs", set()).discard(docname)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", start_jobs)
    app.connect("env-get-outdated", always_read)
    app.connect("env-purge-doc", purge)
    app.add_directive("reproduction", ReproductionDirective)
    app.add_directive("reproduction-jobs", ReproductionJobsDirective)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
