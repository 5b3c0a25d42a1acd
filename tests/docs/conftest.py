"""Fixtures of the documentation tests: the site built once per session, served on 127.0.0.1, and a browser.

The site is built with the documented command (warnings are errors, nitpicky
cross-references) into a temporary folder. The browser is the system's
Chromium with its driver (Debian packages ``chromium`` and
``chromium-driver``), driven by Selenium; nothing is downloaded. When the
build tools, Graphviz or the browser are missing, the tests fail and say what
to install: they are never skipped.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BUILD_COMMAND = ("-m", "sphinx", "-W", "-n", "--keep-going", "-b", "html")
"""The documented build command's arguments after ``python`` (docs/conf.py, docs/about-these-docs.md)."""
BUILD_TIMEOUT = 1800
"""Seconds; the build takes one to three minutes on two quiet cores (it executes every example and runs the paper
pages' reproductions), about ten minutes on two cores shared with other work (load average 12)."""

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver",)
INSTALL_HINT = ("install the system packages: apt-get update && apt-get install -y chromium chromium-driver "
                "(Debian; .ci/run does this)")


def _build_site(out: Path) -> Path:
    """Build the site into ``out / "html"`` (the build's output in ``out / "build.log"``); fail on a failed build."""
    html = out / "html"
    proc = subprocess.run([sys.executable, *BUILD_COMMAND, "-d", str(out / "doctrees"), str(DOCS), str(html)],
                          cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    (out / "build.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        problems = [line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
        (out / "failed").write_text("\n".join(problems or [proc.stderr[-5000:]]), encoding="utf-8")
    else:
        (out / "built").touch()
    return html


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built HTML site (its folder); the build's output is in ``build.log`` next to it.

    Under pytest-xdist the site is built once per test run, by the first worker that asks for it, under a
    file lock in the run's shared temporary folder: sphinx-gallery writes into ``docs/gallery`` of the
    source tree, so two builds at once would overwrite each other's files.
    """
    if shutil.which("dot") is None:
        pytest.fail("Graphviz's `dot` is not on PATH; the concepts diagram needs it: apt-get install -y graphviz "
                    "(.ci/run does this)")
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # not under pytest-xdist
        out = tmp_path_factory.mktemp("docs")
        html = _build_site(out)
    else:
        shared = tmp_path_factory.getbasetemp().parent  # one folder per test run, shared by its workers
        out = shared / "docs-site"
        with FileLock(str(shared / "docs-site.lock")):
            if not (out / "built").exists() and not (out / "failed").exists():
                out.mkdir(exist_ok=True)
                _build_site(out)
        html = out / "html"
    if (out / "failed").exists():
        pytest.fail("the docs build failed:\n" + (out / "failed").read_text(encoding="utf-8"))
    return html


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def server(site: Path) -> Iterator[str]:
    """The site served over HTTP on a free port of 127.0.0.1 (search does not work from file://); its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _first_existing(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if os.path.isfile(p) and os.access(p, os.X_OK)), None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from the system's packages, driven by Selenium, with the console log recorded."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        pytest.fail(f"selenium is not installed ({exc}): pip install -e '.[dev]'")
    chromium, driver_path = _first_existing(CHROMIUM), _first_existing(CHROMEDRIVER)
    if chromium is None:
        pytest.fail(f"no Chromium browser at {' or '.join(CHROMIUM)}: {INSTALL_HINT}")
    if driver_path is None:
        pytest.fail(f"no chromedriver at {' or '.join(CHROMEDRIVER)}: {INSTALL_HINT}")
    # Selenium Manager downloads browsers and drivers when it is asked to find one; both paths are given, and
    # offline mode forbids a download in any case.
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    except Exception as exc:  # the browser is there but does not start: say why
        pytest.fail(f"Chromium ({chromium}) with {driver_path} did not start: {exc}")
    try:
        yield driver
    finally:
        driver.quit()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the marks (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep the documentation tests on one pytest-xdist worker, so the site is built once per run."""
    for item in items:
        if Path(str(item.fspath)).is_relative_to(DOCS.parent / "tests" / "docs"):
            item.add_marker(pytest.mark.xdist_group("docs"))
