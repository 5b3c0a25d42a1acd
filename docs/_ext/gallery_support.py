"""Hooks of the gallery build (imported by name from ``sphinx_gallery_conf`` in ``docs/conf.py``)."""

from __future__ import annotations

import builtins
from pathlib import Path


def define_example_file(gallery_conf: dict, fname: str | None, when: str) -> None:
    """Give the example about to run a ``__file__``; remove it afterwards.

    sphinx-gallery runs each example in a fresh ``__main__`` namespace without
    ``__file__``, and in the example's own folder. Several examples find their
    sibling scripts through ``Path(__file__)``, as they do when run from the
    shell or loaded by ``asyncdp run``. A name missing from a module's globals
    is looked up in :mod:`builtins`, so the path is put there for the duration
    of one example.

    Args:
        gallery_conf: sphinx-gallery's configuration (its ``examples_dirs`` hold the examples).
        fname: the example's file name (no folder), ``None`` when a folder is entered.
        when: ``"before"`` or ``"after"`` the example runs.
    """
    if when == "before" and fname is not None:
        dirs = gallery_conf["examples_dirs"]
        folder = Path(gallery_conf["src_dir"], dirs if isinstance(dirs, str) else dirs[0])  # conf.py: one folder
        builtins.__file__ = str((folder / fname).resolve())  # type: ignore[attr-defined]
    elif hasattr(builtins, "__file__"):
        del builtins.__file__


def add_example_title(app: object, docname: str, source: list[str]) -> None:
    """Make the first paragraph of an example's docstring its page title (Sphinx ``source-read`` hook).

    sphinx-gallery takes an example's title from the first paragraph of its
    docstring, but only writes a section title into the page if the docstring
    starts with an underlined reST title. The examples' docstrings are plain
    text (they are also read in terminals), so the page for each would have no
    title, and no entry in the table of contents. This hook underlines that
    first paragraph in the generated page when it has no title of its own.

    Args:
        app: the Sphinx application (unused).
        docname: the document's name; only ``gallery/<example>`` pages are changed.
        source: a one-item list holding the document's text, edited in place.
    """
    if not docname.startswith("gallery/") or docname == "gallery/index":
        return
    lines = source[0].split("\n")
    label = next((k for k, line in enumerate(lines) if line.startswith(".. _sphx_glr_gallery_")), None)
    if label is None:
        return
    start = label + 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = start
    while end < len(lines) and lines[end].strip():
        end += 1
    paragraph = [line.strip() for line in lines[start:end]]
    if not paragraph or (len(paragraph) > 1 and set(paragraph[1]) <= set("=-~^\"'`#*+")):
        return  # no paragraph, or already a title
    title = " ".join(paragraph).rstrip(".")
    lines[start:end] = [title, "=" * len(title)]
    source[0] = "\n".join(lines)


def setup(app: object) -> dict:
    """Register :func:`add_example_title` (``docs/conf.py`` lists this module as an extension)."""
    app.connect("source-read", add_example_title)  # type: ignore[attr-defined]
    return {"parallel_read_safe": True, "parallel_write_safe": True}
