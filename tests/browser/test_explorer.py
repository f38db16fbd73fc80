"""The interactive explorer in the built book: a reader drags a slider and the figure changes.

The page ``book/explorer.html`` of ``_build/html`` is served on 127.0.0.1 and opened in
headless Chromium with no network besides loopback (``_browser.py``). The test

* waits for BokehJS (inlined into the page by ``dpfda_book.report.explorer``) to render the figure;
* drags the μ slider's handle with real mouse events (press, move, release at screen
  coordinates), as a reader would;
* checks that the slider's value, the plotted data, the sentence under the figure and the
  pixels of the plot all changed, and that the plotted data are those of the new setting;
* checks that the page loaded no script from outside the book, sent no request beyond
  127.0.0.1, threw no JavaScript exception and logged no console error.

Screenshots before and after go to ``_build/test-artifacts/explorer-*.png``. Marker
``browser``: run by ``make test-browser`` after ``make book``.
"""

from __future__ import annotations

import os
import shutil
import time
import urllib.parse
from pathlib import Path

import pytest

from _browser import ARTIFACTS_DIR, BUILT_HTML, CHROMIUM, Chromium, Sentinel, StaticServer, off_loopback, page_problems

pytestmark = pytest.mark.browser

HTML, ARTIFACTS = BUILT_HTML, ARTIFACTS_DIR
PAGE = "book/explorer.html"
WIDTH, HEIGHT = 1280, 1600

READY = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const deadline = Date.now() + 30000;
  while (!(window.Bokeh && Bokeh.documents.length && Bokeh.index.roots.length)) {
    if (Date.now() > deadline) return {ready: false};
    await sleep(100);
  }
  await sleep(500);  // the first paint of the canvas
  return {ready: true, version: Bokeh.version, scripts: [...document.scripts].map(s => s.getAttribute('src')).filter(Boolean)};
})()
"""

# The state a reader sees: the μ slider, the plotted data, the sentence, and where things are.
STATE = r"""
(() => {
  const doc = Bokeh.documents[0];
  const get = name => doc.get_model_by_name(name);
  const view = model => { for (const root of Bokeh.index.roots) { const v = root.owner.get_one(model); if (v) return v; } return null; };
  const slider = get('explorer-mu');
  const handle = view(slider).shadow_el.querySelector('.noUi-handle');
  const track = view(slider).shadow_el.querySelector('.noUi-base');
  const plot = view(get('explorer-plot')).el.getBoundingClientRect();
  const h = handle.getBoundingClientRect(), t = track.getBoundingClientRect();
  const shown = get('explorer-shown').data;
  return {mu: slider.value, muEnd: slider.end, title: slider.title,
          handle: {x: h.x + h.width / 2, y: h.y + h.height / 2}, track: {x0: t.x, x1: t.x + t.width},
          plot: {x: plot.x, y: plot.y, width: plot.width, height: plot.height},
          n: Array.from(shown.n), ratio: Array.from(shown.ratio),
          summary: get('explorer-summary').text};
})()
"""


@pytest.fixture(scope="module")
def page_file() -> Path:
    path = HTML / PAGE
    assert path.is_file(), f"{path} does not exist: build the book first (make book)"
    return path


def drag(browser: Chromium, tab, start: dict, to_x: float) -> None:
    """Press the left button on ``start``, move in steps to ``to_x``, release (real mouse events)."""
    mouse = tab.page.mouse
    mouse.move(start["x"], start["y"])
    mouse.down(button="left")
    for k in range(1, 11):
        mouse.move(start["x"] + (to_x - start["x"]) * k / 10, start["y"])
        time.sleep(0.03)
    mouse.up(button="left")


def clip_shot(browser: Chromium, tab, rect: dict, path: Path) -> bytes:
    """A PNG of ``rect`` (viewport coordinates), wherever the page is scrolled."""
    sx, sy = tab.page.evaluate("[window.scrollX, window.scrollY]")
    clip = {"x": rect["x"] + sx, "y": rect["y"] + sy, "width": rect["width"], "height": rect["height"]}
    data = tab.page.screenshot(type="png", animations="disabled", caret="initial", full_page=True, clip=clip)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def test_dragging_the_mu_slider_redraws_the_figure_offline(page_file):
    executable = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    assert executable, "Debian's chromium is not installed: run `make browser-deps`"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with Sentinel() as sentinel, StaticServer(HTML) as server, \
            Chromium(executable, proxy_port=sentinel.port, log_path=ARTIFACTS / "chromium-explorer.log") as browser:
        session = browser.open_page(WIDTH, HEIGHT)
        url = urllib.parse.urljoin(server.base, PAGE)
        browser.navigate(session, url, timeout=60)
        ready = browser.evaluate(session, READY, timeout=40)
        assert ready["ready"], "BokehJS did not render the explorer within 30 s"
        # Every <script src> of the page is the book's (BokehJS itself is inline).
        assert not off_loopback([urllib.parse.urljoin(url, s) for s in ready["scripts"]]), ready["scripts"]
        browser.evaluate(session, "document.querySelector('.bk-Column, [data-root-id]')"
                                  ".scrollIntoView({block: 'start'})")
        time.sleep(0.3)
        before = browser.evaluate(session, STATE)
        # Bring the plot and its sliders into the viewport (text above them may push them down).
        height = session.page.evaluate("window.innerHeight")
        if not 10 < before["handle"]["y"] < height - 10:
            session.page.evaluate(f"window.scrollBy(0, {before['handle']['y'] - height / 2})")
            time.sleep(0.3)
            before = browser.evaluate(session, STATE)
        assert before["n"] and len(before["n"]) == len(before["ratio"])
        shot_before = clip_shot(browser, session, before["plot"], ARTIFACTS / "explorer-before.png")

        # Drag the mu handle to the far left end of its track (the smallest budget).
        assert before["mu"] > 0, "the explorer should start away from the smallest mu"
        # Up to three gestures, the handle measured again before each: on a loaded machine the
        # page can still be settling (a gesture then starts beside the handle and moves nothing).
        after, handle = before, before["handle"]
        for _attempt in range(3):
            drag(browser, session, handle, before["track"]["x0"] - 20)
            # Wait for the redraw (BokehJS updates on its own schedule; a loaded machine takes longer).
            deadline = time.monotonic() + 10
            after = browser.evaluate(session, STATE)
            while (after["mu"] != 0 or after["ratio"] == before["ratio"]) and time.monotonic() < deadline:
                time.sleep(0.2)
                after = browser.evaluate(session, STATE)
            if after["mu"] == 0:
                break
            handle = after["handle"]
        time.sleep(0.3)  # let the canvas finish painting before the screenshot
        after = browser.evaluate(session, STATE)
        shot_after = clip_shot(browser, session, after["plot"], ARTIFACTS / "explorer-after.png")
        browser.screenshot(session, ARTIFACTS / "explorer-page.png")

        assert after["mu"] == 0, f"the drag did not move the slider to its start: {before['mu']} -> {after['mu']}"
        assert after["title"] != before["title"] and after["title"].startswith("μ = ")
        assert after["n"] == before["n"]
        assert after["ratio"] != before["ratio"], "the plotted ratios did not change"
        assert after["summary"] != before["summary"]
        assert shot_after != shot_before, "the plot looks the same after the drag"
        # A smaller budget: PTF's ball catches its noise for longer, so the small-n ratios are larger.
        assert after["ratio"][0] > before["ratio"][0]

        problems = page_problems(browser, session)
        assert not problems["outside"], f"the page asked for {problems['outside']}"
        assert not problems["exceptions"], problems["exceptions"]
        assert not problems["console"], problems["console"]
        browser.close_page(session)
