"""The documentation's own Sphinx hooks (docs/_ext): example page titles, the examples' ``__file__``, reproduction jobs."""

from __future__ import annotations

import builtins
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gallery_support", ROOT / "docs" / "_ext" / "gallery_support.py")
assert _spec is not None and _spec.loader is not None
gallery_support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gallery_support)

PAGE = """
.. rst-class:: sphx-glr-example-title

.. _sphx_glr_gallery_demo.py:

Private rendezvous (Huang, Mitra and Vaidya, ICDCN 2015)
with lockstep rounds.

Ten agents ...
"""


def _titled(docname: str, text: str) -> str:
    source = [text]
    gallery_support.add_example_title(None, docname, source)
    return source[0]


def test_the_first_paragraph_of_an_example_page_becomes_its_title() -> None:
    lines = _titled("gallery/demo", PAGE).splitlines()
    k = lines.index("Private rendezvous (Huang, Mitra and Vaidya, ICDCN 2015) with lockstep rounds")
    assert lines[k + 1] == "=" * len(lines[k])
    assert "Ten agents ..." in lines[k + 2:]


def test_a_page_with_a_title_and_other_pages_are_left_alone() -> None:
    titled = PAGE.replace("with lockstep rounds.", "=" * 56)
    assert _titled("gallery/demo", titled) == titled
    assert _titled("gallery/index", PAGE) == PAGE
    assert _titled("concepts", PAGE) == PAGE


def test_an_example_gets_its_file_for_its_run_only(tmp_path: Path) -> None:
    conf = {"src_dir": str(tmp_path), "examples_dirs": str(tmp_path / "examples")}
    gallery_support.define_example_file(conf, "demo.py", when="before")
    try:
        assert builtins.__file__ == str((tmp_path / "examples" / "demo.py").resolve())  # type: ignore[attr-defined]
    finally:
        gallery_support.define_example_file(conf, "demo.py", when="after")
    assert not hasattr(builtins, "__file__")


_attr_spec = importlib.util.spec_from_file_location("attribute_docstrings",
                                                    ROOT / "docs" / "_ext" / "attribute_docstrings.py")
assert _attr_spec is not None and _attr_spec.loader is not None
attribute_docstrings = importlib.util.module_from_spec(_attr_spec)
_attr_spec.loader.exec_module(attribute_docstrings)


def test_an_attribute_line_with_a_colon_is_put_back_together() -> None:
    lines = ["``sum r_i`` without Gaussian releases.", "", "More.", "", ":type: The largest privacy loss"]
    attribute_docstrings.rejoin_type_field("property", lines)
    assert lines == ["The largest privacy loss: ``sum r_i`` without Gaussian releases.", "", "More."]


def test_other_docstrings_and_attributes_without_a_type_field_are_left_alone() -> None:
    function = ["Do it.", "", ":type: not an attribute"]
    attribute_docstrings.rejoin_type_field("function", function)
    assert function == ["Do it.", "", ":type: not an attribute"]
    plain = ["Plain text, no colon."]
    attribute_docstrings.rejoin_type_field("data", plain)
    assert plain == ["Plain text, no colon."]


def _load_ext(name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_ext" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_reproduction_job_is_an_experiment_with_options_it_accepts_below_its_defaults() -> None:
    import inspect

    from asyncdp.reproduce import EXPERIMENTS

    jobs = _load_ext("reproduction_jobs")
    assert set(jobs.JOBS) <= set(EXPERIMENTS)  # type: ignore[attr-defined]
    for name, job in jobs.JOBS.items():  # type: ignore[attr-defined]
        params = inspect.signature(EXPERIMENTS[name]).parameters
        assert (job.call is None) == bool(job.options), name
        for key, value in job.options.items():
            assert key in params, f"{name}: the experiment has no option {key!r}"
            assert 0 < value < params[key].default, f"{name}: {key}={value} is not a reduced size"


def test_a_reproduction_job_reads_as_the_command_it_runs() -> None:
    jobs = _load_ext("reproduction_jobs")
    assert jobs.command("huang2015-fig1") == "asyncdp reproduce huang2015-fig1 --runs 20 --tune-runs 10"  # type: ignore[attr-defined]
    assert jobs.command("muffliato-fig1a") == ""  # type: ignore[attr-defined]  # its own call, shown on the page
