"""Sphinx configuration of the asyncdp documentation site.

Build (from the repository root; warnings are errors, cross-references nitpicky):

    python -m sphinx -W -n --keep-going -b html docs docs/_build/html

Why Sphinx rather than MkDocs Material: Sphinx's nitpicky mode fails the
build on every cross-reference that does not resolve (MkDocs only warns about
broken page links), sphinx-argparse renders the CLI reference from the real
``argparse`` parser, autodoc + napoleon read the Google-style docstrings the
packages already have, and sphinx-gallery executes the examples and captures
their output and figures at build time. Everything the built site loads is
shipped with it: the Furo theme bundles its CSS and JavaScript and uses system
fonts, and no page uses math (MathJax would come from a CDN).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The gallery's pages are generated; start from none, so that every build executes every example (sphinx-gallery
# would skip an unchanged example, even when the code it calls has changed) and a removed example leaves no page.
shutil.rmtree(DOCS / "gallery", ignore_errors=True)
sys.path.insert(0, str(DOCS / "_ext"))  # gallery_support (sphinx-gallery imports its hooks by name)

project = "asyncdp"
author = "asyncdp developers"
copyright = "asyncdp developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.graphviz",
    "sphinxarg.ext",
    "sphinx_gallery.gen_gallery",
    "gallery_support",  # docs/_ext: titles of the example pages, __file__ for the examples
    "short_names",  # docs/_ext: a short name resolves when exactly one documented object has it
    "attribute_docstrings",  # docs/_ext: an attribute docstring "Text: more" is not a type field
    "reproductions",  # docs/_ext: the paper pages' reproductions run with the build, at reduced sizes
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_reproductions", "gallery/*.ipynb", "gallery/*.py", "gallery/*.zip", "gallery/*.json"]
root_doc = "index"
smartquotes = False  # keep "--runs" and quotes in the examples' docstrings as typed (no en dashes)

# --- cross-references -------------------------------------------------------------------------------------------
nitpicky = True
# Third-party libraries whose inventories cannot be fetched offline (no intersphinx downloads): numpy, SimPy,
# networkx and dp-accounting. Nothing else is ignored: every other reference must resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np)(\..*)?"),
    (r"py:.*", r"simpy(\..*)?"),
    (r"py:.*", r"(networkx|nx)(\..*)?"),
    (r"py:.*", r"dp_accounting(\..*)?"),
]

# --- autodoc / napoleon -----------------------------------------------------------------------------------------
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # types are described in the docstrings; annotations would need every library's inventory
autodoc_typehints_format = "short"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = False  # as autodoc_typehints: no annotation types (they would need Python's inventory)

# --- MyST -------------------------------------------------------------------------------------------------------
myst_heading_anchors = 3

# --- graphviz (the `dot` binary, from the Debian package graphviz) -----------------------------------------------
graphviz_output_format = "svg"

# --- sphinx-gallery: every script in examples/ is executed at build time ------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "gallery",
    "filename_pattern": r".*\.py$",  # execute every example, not only plot_*.py
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,  # a failing example fails the build
    "reset_modules": ("matplotlib", "gallery_support.define_example_file"),
    "reset_modules_order": "both",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_signature": False,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 10**9,  # the per-example timing lines vary between builds
    "plot_gallery": "True",
    "write_computation_times": False,  # that page loads jQuery and DataTables from CDNs
}

# --- HTML -------------------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = "asyncdp"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"  # browsers ask for /favicon.ico otherwise (a 404 in the console)
html_show_sourcelink = False
