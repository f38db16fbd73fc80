"""The whole book as one PDF, printed by headless Chromium (``make pdf``).

Usage: ``python _ext/book_pdf.py SINGLEHTML_DIR OUT.pdf``

``SINGLEHTML_DIR`` is Jupyter Book's single-page build (``--builder singlehtml``): every
chapter on one page, from the same execution cache as the HTML book, with the book's own
MathJax. The page is served on 127.0.0.1 and opened in the Chromium of the browser test
(``tests/browser/_browser.py``, same network isolation: nothing but loopback). Once MathJax
has typeset every formula and every figure has loaded, a title page and a table of
contents (parts and chapters, with links) are put in front, the site's navigation is left
out, and the page is printed to A4 with page numbers and a PDF outline (bookmarks) made
from the headings. Solutions stay in the PDF; code cells folded on the site stay folded.
Offline: no TeX installation, no download.
"""

from __future__ import annotations

import base64
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))
from _browser import Chromium, Sentinel, StaticServer  # noqa: E402

TIMEOUT = 300.0  # seconds for the page to load and MathJax to typeset the whole book

PREPARE = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const deadline = Date.now() + %(wait_ms)d;
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() > deadline) throw new Error('MathJax did not start');
    await sleep(100);
  }
  await MathJax.startup.promise;
  if (MathJax.typesetPromise) await MathJax.typesetPromise();
  await document.fonts.ready;
  const imgs = [...document.querySelectorAll('img')];
  while (imgs.some(i => !i.complete)) {
    if (Date.now() > deadline) throw new Error('images did not load');
    await sleep(100);
  }
  // Solutions (sphinx-exercise dropdowns) are part of the printed book.
  document.querySelectorAll('details.dropdown, details').forEach(d => d.open = true);
  document.querySelectorAll('.solution.toggle-hidden, .dropdown.toggle-hidden')
      .forEach(e => e.classList.remove('toggle-hidden'));
  // Title page and contents: the parts' captions and the chapters' titles, in order.
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const chapters = [...article.querySelectorAll('section > h1')];
  const captions = [...document.querySelectorAll('.bd-sidebar-primary p.caption, nav p.caption')]
      .map(p => p.innerText.trim());
  const front = document.createElement('section');
  front.id = 'pdf-front';
  const title = document.title.replace(/\s*[—–-]\s*[^—–-]*$/, '').trim();
  let html = `<div class="pdf-title"><h1 class="pdf-title-text">${title}</h1>` +
             `<p>The executable companion to Chen, Chen, Song and Awan, ` +
             `<em>Fit-Then-Protect versus Protect-Then-Fit</em>.</p>` +
             `<p>Printed from the built book on ${new Date().toISOString().slice(0, 10)}.</p></div>` +
             `<nav class="pdf-toc"><h2>Contents</h2><ol>`;
  for (const h of chapters) {
    const section = h.closest('section');
    const text = h.innerText.replace(/#\s*$/, '').trim();
    html += `<li><a href="#${section.id}">${text}</a></li>`;
  }
  html += `</ol></nav>`;
  front.innerHTML = html;
  article.prepend(front);
  const style = document.createElement('style');
  style.textContent = `
    @page { size: A4; margin: 18mm 16mm 20mm 16mm; }
    .bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article,
    .bd-footer, .bd-footer-article, .prev-next-area, .headerlink, .search-button__wrapper,
    #pst-back-to-top, .skip-link, .bd-footer-content { display: none !important; }
    .bd-main .bd-content .bd-article-container { max-width: 100% !important; }
    .bd-page-width { max-width: 100% !important; }
    .pdf-title { page-break-after: always; padding-top: 30%%; text-align: center; }
    .pdf-title-text { font-size: 2.2em; }
    .pdf-toc { page-break-after: always; }
    .pdf-toc ol { font-size: 1.05em; line-height: 1.9; }
    article section > h1 { page-break-before: always; }
    figure, img, table, .proof, .exercise, .solution, mjx-container[display="true"] {
      page-break-inside: avoid; }
    img { max-width: 100% !important; }
  `;
  document.head.appendChild(style);
  await sleep(500);
  return {chapters: chapters.length, captions,
          math: document.querySelectorAll('mjx-container').length,
          errors: document.querySelectorAll('mjx-merror, merror').length};
})()
"""


def main(src: str, out: str) -> None:
    root = Path(src).resolve()
    index = root / "index.html"
    if not index.is_file():
        raise SystemExit(f"{index} is missing: build the single-page book first "
                         "(jupyter-book build . --builder singlehtml)")
    executable = shutil.which("chromium")
    if not executable:
        raise SystemExit("Debian's chromium is not installed: run `make browser-deps`")
    target = Path(out).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with Sentinel() as sentinel, StaticServer(root) as server, \
            Chromium(executable, proxy_port=sentinel.port,
                     log_path=target.parent / "chromium.log") as browser:
        session = browser.open_page(1200, 1600)
        started = time.monotonic()
        browser.navigate(session, server.base + "index.html", timeout=TIMEOUT)
        info = browser.evaluate(session, PREPARE % {"wait_ms": int(TIMEOUT * 1000)},
                                timeout=TIMEOUT + 30)
        if info["chapters"] < 2 or info["errors"]:
            raise SystemExit(f"the single page is not ready to print: {info}")
        footer = ('<div style="font-size:8px;width:100%;text-align:center;color:#555">'
                  '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
        reply = browser.send("Page.printToPDF", {
            "printBackground": True, "preferCSSPageSize": True,
            "displayHeaderFooter": True, "headerTemplate": "<span></span>",
            "footerTemplate": footer, "generateDocumentOutline": True,
            "generateTaggedPDF": True,
        }, session=session, timeout=TIMEOUT)
        data = base64.b64decode(reply["data"])
    target.write_bytes(data)
    print(f"{target}: {len(data) // 1024} KiB, {info['chapters']} chapters, "
          f"{info['math']} formulas, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
