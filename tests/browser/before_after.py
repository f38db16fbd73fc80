"""Before/after screenshots of three chapters.

The chapters were reworked to read better: bookkeeping folded away, one figure style,
tables numbered as tables. This module photographs the same three chapters of any build
of the book, as a reader sees them in a 1,400-px-wide window: the top of the page and
the first figure. The browser test (``test_rendering.py``) calls :func:`capture` on the
build it tests, saving ``<chapter>-after.png`` and ``<chapter>-figure-after.png`` under
``_build/test-artifacts/before-after/``. The "before" pictures come from a build of an
older commit, made by hand with this module as a script::

    python tests/browser/before_after.py --html OLD/_build/html --label before

(the folder is not emptied by the browser test, so both sets stay side by side).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "_build" / "test-artifacts" / "before-after"
#: The chapters shown before and after: the two pipelines (folded setup, the diagram),
#: the dimension study (Figure 3's panels) and the audit (folded bookkeeping, tables).
CHAPTERS = ("book/pipelines.html", "book/sim_dimension.html", "book/audit.html")
WIDTH, HEIGHT = 1400, 2000

# Light mode (another test may have left the theme's dark mode in the browser profile),
# then waits until MathJax has typeset the page and the images have loaded.
SETTLE = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  localStorage.setItem('theme', 'light'); localStorage.setItem('mode', 'light');
  document.documentElement.dataset.theme = 'light';
  document.documentElement.dataset.mode = 'light';
  const deadline = Date.now() + 60000;
  while (document.querySelector('script[src*="mathjax"]') &&
         !(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() > deadline) break;
    await sleep(50);
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  const imgs = [...document.querySelectorAll('img')];
  while (imgs.some(i => !i.complete) && Date.now() < deadline) await sleep(50);
  return true;
})()
"""

FIRST_FIGURE = r"""
(async () => {
  const el = [...document.querySelectorAll("img[src*='_images/']")]
      .find(e => !e.closest('details:not([open])') && e.getBoundingClientRect().height > 0);
  if (!el) return false;
  el.scrollIntoView({block: 'start'}); window.scrollBy(0, -80);
  await new Promise(r => setTimeout(r, 200));
  return true;
})()
"""


def capture(browser, base_url: str, label: str, out: Path = OUT,
            chapters=CHAPTERS) -> list[Path]:
    """Screenshot each chapter's top and its first figure; returns the files written.

    ``browser`` is a running :class:`_browser.Chromium`, ``base_url`` the address of the
    served build (ending in ``/``), ``label`` "before" or "after".
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for page in chapters:
        stem = Path(page).stem
        session = browser.open_page(WIDTH, HEIGHT)
        try:
            browser.navigate(session, base_url + page, timeout=60)
            browser.evaluate(session, SETTLE, timeout=70)
            path = out / f"{stem}-{label}.png"
            browser.screenshot(session, path)
            written.append(path)
            if browser.evaluate(session, FIRST_FIGURE):
                path = out / f"{stem}-figure-{label}.png"
                browser.screenshot(session, path)
                written.append(path)
        finally:
            browser.close_page(session)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, required=True, help="a built book's _build/html")
    parser.add_argument("--label", required=True, choices=("before", "after"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from _browser import Chromium, Sentinel, StaticServer

    missing = [p for p in CHAPTERS if not (args.html / p).is_file()]
    if missing:
        parser.error(f"{args.html} lacks {missing}: build the book first")
    with Sentinel() as proxy, StaticServer(args.html.resolve()) as server, \
            Chromium(shutil.which("chromium"), proxy_port=proxy.port) as browser:
        for path in capture(browser, server.base, args.label, args.out):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
