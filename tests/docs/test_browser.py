"""The built site in a real headless browser (system Chromium + chromedriver, Selenium), served on 127.0.0.1.

Pages render without console errors, the search finds ``check_privacy``, and
every internal link and image resolves (checked by LinkChecker, offline:
external links are not followed).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PAGES = {
    "home": "index.html",
    "guide": "getting-started.html",
    "tutorial": "tutorials/write-a-scenario.html",
    "gallery": "gallery/huang2015_rendezvous.html",
    "API": "api/topology.html",
}
WAIT = 30.0
"""Seconds to wait for a page to finish loading, or for the search to finish."""


def _console_errors(driver: Any) -> list[str]:
    return [f"{e.get('level')}: {e.get('message')}" for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def _open(driver: Any, url: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script("return document.readyState") == "complete")


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_page_renders_without_console_errors(kind: str, server: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, f"{server}/{PAGES[kind]}")
    headings = [h.text.strip() for h in browser.find_elements(By.CSS_SELECTOR, "article h1")]
    assert headings and headings[0], f"{PAGES[kind]}: no visible page title"
    assert browser.find_element(By.CSS_SELECTOR, "article").size["height"] > 200
    broken = browser.execute_script(
        "return Array.from(document.images).filter(i => i.complete && i.naturalWidth === 0).map(i => i.src)")
    assert not broken, f"{PAGES[kind]}: images that did not load: {broken}"
    errors = _console_errors(browser)
    assert not errors, f"{PAGES[kind]}: console errors:\n" + "\n".join(errors)


def test_the_gallery_page_shows_the_examples_figure(server: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, f"{server}/{PAGES['gallery']}")
    figures = [i for i in browser.find_elements(By.CSS_SELECTOR, "img.sphx-glr-single-img, img.sphx-glr-multi-img")
               if browser.execute_script("return arguments[0].naturalWidth", i) > 100]
    assert figures, "the rendezvous example's figure is not on its gallery page"


def test_search_finds_check_privacy(server: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _open(browser, f"{server}/search.html?q=check_privacy")

    def finished(driver: Any) -> bool:
        return bool(driver.execute_script(
            "const s = document.querySelector('#search-results .search-summary, #search-results p');"
            "return s !== null && s.textContent.trim().length > 0"))

    WebDriverWait(browser, WAIT).until(finished)
    links = [a.get_attribute("href") or "" for a in browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search a")]
    assert any("privacy-check.html" in href for href in links), f"search results for check_privacy: {links}"
    assert not _console_errors(browser)


def test_every_internal_link_and_image_resolves(server: str, tmp_path: Path) -> None:
    exe = shutil.which("linkchecker") or str(Path(sys.executable).with_name("linkchecker"))
    if not Path(exe).is_file():
        pytest.fail("linkchecker is not installed: pip install -e '.[dev]'")
    # external links (other hosts) are not checked: the test runs offline
    proc = subprocess.run([exe, "--no-status", "--threads", "4", "--recursion-level", "-1", "--output", "text",
                           f"{server}/index.html"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"linkchecker found broken links (exit {proc.returncode}):\n{report[-8000:]}"
    checked = [line for line in report.splitlines() if "links in" in line and "checked" in line]
    assert checked, report[-3000:]
