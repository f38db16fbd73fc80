"""The whole book as one PDF, printed by headless Chromium (``make pdf``).

Usage: ``python tools/book_pdf.py SINGLEHTML_DIR OUT.pdf``

``SINGLEHTML_DIR`` is Jupyter Book's single-page build (``--builder singlehtml``): every
chapter on one page, from the same execution cache as the HTML book, with the book's own
MathJax. The page is served on 127.0.0.1 and opened in the Chromium of the browser test
(Debian's chromium driven by Playwright, ``tests/browser/_browser.py``, same network
isolation: nothing but loopback) and printed with Playwright's ``page.pdf``. Once MathJax
has typeset every formula and every figure has loaded, a title page and a table of
contents (parts and chapters, with links) are put in front, the site's navigation is left
out, and the page is printed to A4 with page numbers and a PDF outline (bookmarks) made
from the headings. Solutions stay in the PDF; code cells folded on the site stay folded.
Offline: no TeX installation, no download.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))
from _browser import Chromium, Sentinel, StaticServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300.0  # seconds for the page to load and MathJax to typeset the whole book

PREPARE = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const deadline = Date.now() + WAIT_MS;
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
  // Solutions (sphinx-exercise dropdowns, sphinx-togglebutton) and the dropdowns of the
  // prose are part of the printed book.
  document.querySelectorAll('details.sd-dropdown').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('button.toggle-button').forEach(b => b.remove());
  // Code folded on the site (myst-nb's hide-input: a <details class="hide above-input">
  // holding the cell's source) is left out with a note; folded outputs are unfolded. No
  // "Show code cell source/outputs" toggle is printed.
  let foldedCode = 0, foldedLines = 0;
  for (const d of [...document.querySelectorAll('details.hide')]) {
    const code = d.querySelector('.cell_input pre, .highlight pre');
    if (d.classList.contains('above-input') && code) {
      const lines = code.textContent.replace(/\n+$/, '').split('\n').length;
      foldedCode += 1; foldedLines += lines;
      const note = document.createElement('p');
      note.className = 'pdf-folded-note';
      note.textContent = `[${lines} line${lines === 1 ? '' : 's'} of code, folded in the online book, ` +
                         'left out here; the chapter\'s notebook has them.]';
      const outputs = [...d.querySelectorAll('.cell_output')];  // a folded cell's outputs stay
      d.replaceWith(note);
      note.after(...outputs);
    } else {
      d.open = true;
      d.querySelectorAll(':scope > summary').forEach(s => s.remove());
    }
  }
  document.querySelectorAll('details > summary').forEach(s => {
    const said = s.innerText + ' ' + (s.getAttribute('aria-label') || '');
    if (/Show code cell|Hide code cell|Toggle hidden content/i.test(said)) s.remove();
  });
  // Title page and contents: the parts of _toc.yml and their chapters, found by title (in
  // the single page the chapters are sections nested in the root document's).
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const norm = t => t.replace(/#\s*$/, '').replace(/^\s*[\d.]+\s+/, '').replace(/\s+/g, ' ').trim();
  const headings = [...article.querySelectorAll('section > h1, section > h2')];
  const byTitle = new Map(headings.map(h => [norm(h.innerText), h]));
  const parts = PARTS_JSON;
  const chapters = [];
  let html = '';
  for (const [caption, titles] of parts) {
    if (caption) html += `<h3 class="pdf-part">${caption}</h3>`;
    html += '<ul>';
    for (const title of titles) {
      const h = byTitle.get(norm(title));
      if (!h) continue;
      const section = h.closest('section');
      section.classList.add('pdf-chapter');
      chapters.push(title);
      html += `<li><a href="#${section.id}">${h.innerText.replace(/#\s*$/, '').trim()}</a></li>`;
    }
    html += '</ul>';
  }
  const front = document.createElement('section');
  front.id = 'pdf-front';
  const title = document.title.replace(/\s*[\u2014\u2013-]\s*[^\u2014\u2013-]*$/, '').trim();
  front.innerHTML = `<div class="pdf-title"><p class="pdf-title-text">${title}</p>` +
      `<p>The executable companion to Chen, Chen, Song and Awan, ` +
      `<em>Fit-Then-Protect versus Protect-Then-Fit</em>.</p>` +
      `<p>Printed from the built book on ${new Date().toISOString().slice(0, 10)}.</p></div>` +
      `<nav class="pdf-toc"><p class="pdf-toc-title">Contents</p>${html}</nav>`;
  article.prepend(front);
  const style = document.createElement('style');
  style.textContent = `
    @page { size: A4; margin: 18mm 16mm 20mm 16mm; }
    .bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article,
    .bd-footer, .bd-footer-article, .prev-next-area, .headerlink, .search-button__wrapper,
    #pst-back-to-top, .skip-link, .bd-footer-content, .onlyprint, #jb-print-docs-body {
      display: none !important; }
    .bd-main .bd-content .bd-article-container { max-width: 100% !important; }
    .bd-page-width { max-width: 100% !important; }
    .pdf-title { page-break-after: always; padding-top: 30%; text-align: center; }
    .pdf-title-text { font-size: 2.2em; }
    .pdf-toc { page-break-after: always; }
    section.pdf-chapter { page-break-before: always; }
    /* the theme prints the first title in its own header, which is left out above */
    .bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
    .pdf-toc-title { font-size: 1.6em; font-weight: bold; }
    .pdf-part { margin-top: 1em; }
    .pdf-toc ul { list-style: none; padding-left: 1em; line-height: 1.8; }
    figure, img, table, .proof, .exercise, .solution, mjx-container[display="true"] {
      page-break-inside: avoid; }
    img { max-width: 100% !important; }
    /* Code wraps at the margin, a little smaller, so no character is cut off. */
    pre, .highlight pre, .cell_output pre, .output pre {
      white-space: pre-wrap !important; overflow-wrap: anywhere !important;
      word-break: break-all !important; overflow: visible !important; font-size: 0.78em !important; }
    div.highlight, .cell_input, .cell_output, .output { overflow: visible !important; max-width: 100% !important; }
    .pdf-folded-note { font-size: 0.85em; font-style: italic; color: #444; margin: 0.3em 0 0.6em; }
  `;
  document.head.appendChild(style);
  await sleep(500);
  const clipped = [...document.querySelectorAll('pre')].filter(p => p.scrollWidth > p.clientWidth + 1)
      .map(p => p.innerText.split('\n').find(l => l.length > 0) || '').slice(0, 5);
  return {chapters: chapters.length, expected: parts.reduce((k, p) => k + p[1].length, 0),
          foldedCode, foldedLines, clipped,
          math: document.querySelectorAll('mjx-container').length,
          errors: document.querySelectorAll('mjx-merror, merror').length};
})()
"""


def toc_parts(root: Path) -> list[tuple[str | None, list[str]]]:
    """(caption, chapter titles) of each part of _toc.yml; a title is the document's H1."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    def title(name: str) -> str:
        path = root / f"{name}.ipynb"
        if path.exists():
            text = "".join(json.loads(path.read_text())["cells"][0]["source"])
        else:
            text = (root / f"{name}.md").read_text()
        return re.search(r"^#\s+(.+)$", text, re.M).group(1).strip()
    parts = [(None, [title(toc["root"])])]
    for part in toc.get("parts", []):
        parts.append((part.get("caption"), [title(c["file"]) for c in part.get("chapters", [])]))
    return parts


def main(src: str, out: str) -> None:
    root = Path(src).resolve()
    index = root / "index.html"
    if not index.is_file():
        raise SystemExit(f"{index} is missing: build the single-page book first "
                         "(jupyter-book build . --builder singlehtml)")
    # Jupyter Book's index.html only redirects to the root document, which holds the whole
    # book; its links are relative to the build's root, so it is served from there.
    redirect = re.search(r'url=([^"\s>]+)', index.read_text())
    page = "index.html"
    if redirect:
        page = "book-single-page.html"
        shutil.copyfile(root / redirect.group(1), root / page)
    target = Path(out).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with Sentinel() as sentinel, StaticServer(root) as server, \
            Chromium(proxy_port=sentinel.port, log_path=target.parent / "chromium.log",
                     timeout=TIMEOUT) as browser:
        tab = browser.open_page(1200, 1600)
        started = time.monotonic()
        browser.navigate(tab, server.base + page, timeout=TIMEOUT)
        script = (PREPARE.replace("WAIT_MS", str(int(TIMEOUT * 1000)))
                  .replace("PARTS_JSON", json.dumps(toc_parts(ROOT))))
        info = browser.evaluate(tab, script, timeout=TIMEOUT + 30)
        if info["chapters"] != info["expected"] or info["errors"]:
            raise SystemExit(f"the single page is not ready to print: {info}")
        if info["clipped"]:
            raise SystemExit(f"code wider than the page after wrapping: {info['clipped']}")
        footer = ('<div style="font-size:8px;width:100%;text-align:center;color:#555">'
                  '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
        tab.page.emulate_media(media="print")
        data = tab.page.pdf(print_background=True, prefer_css_page_size=True, display_header_footer=True,
                            header_template="<span></span>", footer_template=footer, outline=True,
                            tagged=True)
    target.write_bytes(data)
    print(f"{target}: {len(data) // 1024} KiB, {info['chapters']} chapters, "
          f"{info['math']} formulas, {info['foldedCode']} folded code cells "
          f"({info['foldedLines']} lines) left out with a note, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
