"""Reading the built book in a real browser.

The built HTML (``_build/html``, from ``make book``) is served on 127.0.0.1 and every
content page is opened in headless Chromium (Debian's, driven by Playwright for Python)
with no network besides loopback (see ``_browser.py``). For each page the test waits until MathJax has finished typesetting and
the fonts are in, then checks what a reader would see:

* math is typeset: every ``.math`` element holds MathJax output (``mjx-container``), no
  TeX error (MathJax's red ``merror`` or unknown-macro text), and no raw ``$...$``, ``$$``,
  ``\\(``, ``\\[`` or ``\\begin{`` left in the visible text outside code;
* MathJax (version 3) comes from the book itself: its ``<script src>`` is relative and was
  answered by our server;
* theorem/definition boxes (sphinx-proof: ``div.proof.<kind>``) are laid out, titled
  ("Theorem 1.2 ..."), framed, and sphinx-proof's ``proof.css`` is applied;
* every figure (``<img>`` under ``_images/``) is served (HTTP 200, non-empty) and decoded
  by the browser (natural size > 0);
* the page requested nothing outside 127.0.0.1, no request failed or got an HTTP error,
  no JavaScript exception was thrown and nothing but one known theme message was logged as
  an error.

What a reader should never see: numpy scalar reprs, pandas' ``dtype:``
footer, floats to 12+ digits, unresolved roles, plain numbers typeset as display math, a
table that is not numbered and captioned as a table (or sits in a figure), the same figure
twice, an HTML id used twice, two search fields. Every figure is measured in a
1,400-px window: its smallest text, drawn at ``dpfda_book.report.plots.MIN_FONT_PT`` into a PNG whose
dpi the PNG records, must be at least 9 CSS px tall as displayed, at 150 dpi or more and
never upscaled; one page is switched to the theme's dark mode and screenshotted, and its
first figure must keep a light face with dark text (contrast at least 7:1).

Readable by everyone: no MyST source or code fences shown as text (an unclosed
directive turns the prose after it into a literal block), no cell's stderr or warning on
the page, no cross-reference label shown as raw text, no chapter's full title (a question
or a title with a colon) dropped into the middle of a sentence where a short form was meant,
and every figure's alt text says what it shows (from its caption, ``_ext/alt_text.py``),
never its file name. axe-core (npm package ``axe-core``, ``make axe``; served by the test's
own server) runs the WCAG 2.0/2.1 A and AA rules on every page, and the colour-contrast rule
again in the theme's dark mode on one page of each kind (:data:`DARK_AXE_PAGES`): no
serious or critical violation, and a minor or moderate
one only if :data:`ACCEPTED_AXE` gives the reason it stays. The findings are summarised in
``_build/test-artifacts/axe-report.md``.

A screenshot of each page (1280x2000 viewport, top of the page) is saved under
``_build/test-artifacts/`` and checked to be a real picture, not a blank one. At least one
page must have all three of a theorem-like box, a figure and math; for those pages two more
screenshots show the first box and the first figure.

Not part of the unit tests (marker ``browser``; ``tests/browser`` is also left out of
pytest's recursion, see ``pyproject.toml``): run by ``make test-browser``, after
``make book``. It fails, not skips, when the build or Chromium is missing.
Environment: ``DPFDA_HTML`` tests another build folder (e.g. the student edition),
``DPFDA_ARTIFACTS`` saves the screenshots elsewhere.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from _browser import AXE_DIR, CHROMIUM, LOOPBACK, BrowserError, Chromium, Sentinel, StaticServer

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("DPFDA_HTML", ROOT / "_build" / "html")).resolve()
ARTIFACTS = Path(os.environ.get("DPFDA_ARTIFACTS", ROOT / "_build" / "test-artifacts")).resolve()
WIDTH, HEIGHT = 1280, 2000
PAGE_TIMEOUT = 60.0  # seconds for one page to load and typeset

# Static markers in the built HTML (before any script runs).
BOX = re.compile(r'<div class="proof (?:theorem|definition|proposition|corollary|lemma|example|algorithm)\b')
FIGURE = re.compile(r'<img[^>]+src="[^"]*_images/[^"]+"')
MATH = re.compile(r'class="[^"]*\bmath\b')


def content_pages() -> list[str]:
    """The pages of the book's documents in the last build, from its search index.

    Sphinx leaves the pages of documents that left the table of contents in the output
    folder; the search index lists only the documents of the build that wrote it.
    """
    index = HTML / "searchindex.js"
    if not index.is_file():
        return []
    found = re.search(r'"docnames":\s*(\[[^\]]*\])', index.read_text(errors="replace"))
    return sorted(f"{name}.html" for name in json.loads(found.group(1))) if found else []


def _notebook_markdown() -> dict[str, str]:
    """The markdown cells of every chapter, by document name (``book/gdp``)."""
    out = {}
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        out[f"book/{path.stem}"] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return out


def chapter_titles() -> dict[str, str]:
    """Each chapter's full title (its H1)."""
    titles = {}
    for name, text in _notebook_markdown().items():
        found = re.search(r"^#\s+(.+)$", text, re.M)
        if found:
            titles[name] = found.group(1).strip()
    return titles


def book_labels() -> set[str]:
    """The book's cross-reference labels (``:label:``, ``:name:``, ``(label)=``) that could
    not be mistaken for words: those with a hyphen or a digit."""
    labels = set()
    for text in _notebook_markdown().values():
        labels |= set(re.findall(r"^:(?:label|name):\s*(\S+)", text, re.M))
        labels |= set(re.findall(r"^\(([^)\s]+)\)=", text, re.M))
    return {label for label in labels if re.search(r"[-\d]", label)}


def showcase_pages() -> list[str]:
    """Pages whose HTML has a theorem-like box, a figure and math, all three."""
    found = []
    for page in content_pages():
        text = (HTML / page).read_text(errors="replace")
        if BOX.search(text) and FIGURE.search(text) and MATH.search(text):
            found.append(page)
    return found


# A console error that is not the book's: on a first visit (empty localStorage) the head
# script of pydata-sphinx-theme sets an empty colour mode, and its setTheme() logs this and
# falls back to "auto" (the book sets no default_mode).
LABELS = book_labels()

KNOWN_CONSOLE_ERRORS = re.compile(r"^Got invalid theme mode: \. Resetting to auto\.$")


# Runs inside the page once it has loaded: waits for MathJax and fonts, then reports.
COLLECT = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const deadline = Date.now() + %(wait_ms)d;
  const mathScripts = [...document.querySelectorAll('script[src]')]
      .filter(s => /mathjax/i.test(s.getAttribute('src')));
  const report = {mathjax: null, mathScripts: mathScripts.map(s => ({attr: s.getAttribute('src'), url: s.src}))};
  if (mathScripts.length) {
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
      if (Date.now() > deadline) { report.mathjax = {error: 'MathJax did not start'}; break; }
      await sleep(50);
    }
    if (!report.mathjax) {
      await MathJax.startup.promise;
      report.mathjax = {version: MathJax.version};
    }
  }
  await document.fonts.ready;
  // Images: wait until each has finished loading or failed.
  const imgs = [...document.querySelectorAll('img')];
  while (imgs.some(i => !i.complete) && Date.now() < deadline) await sleep(50);

  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  report.mathElements = document.querySelectorAll('.math').length;
  report.untypeset = [...document.querySelectorAll('.math')]
      .filter(e => !e.querySelector('mjx-container') && !e.closest('mjx-container'))
      .map(e => e.textContent.trim().slice(0, 120));
  report.mjx = document.querySelectorAll('mjx-container').length;
  report.mjxVisible = [...document.querySelectorAll('mjx-container')].filter(visible).length;
  // TeX errors: MathJax typesets a parse error as <merror>, and (noundefined extension) an
  // unknown macro as red text that starts with a backslash. Read them from the MathML.
  report.mathErrors = [];
  if (window.MathJax && MathJax.startup && MathJax.startup.document && MathJax.startup.toMML) {
    for (const item of MathJax.startup.document.math) {
      const mml = MathJax.startup.toMML(item.root);
      if (/<merror\b/.test(mml) || /<mtext[^>]*mathcolor="red"[^>]*>\\/.test(mml))
        report.mathErrors.push(String(item.math).slice(0, 120));
    }
  }
  report.proofCss = getComputedStyle(document.documentElement).getPropertyValue('--theorem-border-color').trim();

  report.boxes = [...document.querySelectorAll('div.proof')].map(b => {
    const title = b.querySelector('.admonition-title');
    // Framed: a border on the box or its title (algorithms have rules on the title), or a shadow.
    const border = el => el ? Math.max(...['Top', 'Right', 'Bottom', 'Left']
        .map(s => parseFloat(getComputedStyle(el)['border' + s + 'Width']) || 0)) : 0;
    return {classes: b.className, id: b.id, title: title ? title.innerText.trim() : null,
            visible: visible(b), hidden: !!b.closest('details:not([open])'),
            framed: border(b) > 0 || border(title) > 0 || getComputedStyle(b).boxShadow !== 'none'};
  });
  report.images = imgs.map(i => ({attr: i.getAttribute('src'), url: i.currentSrc || i.src, complete: i.complete,
                                  naturalWidth: i.naturalWidth, naturalHeight: i.naturalHeight,
                                  visible: visible(i), hidden: !!i.closest('details:not([open])')}));

  // Visible text outside code, scripts and MathJax output: where raw TeX would show.
  const skip = 'script, style, noscript, template, textarea, pre, code, kbd, samp, ' +
               'mjx-container, mjx-assistive-mml, .highlight, .cell_input';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement && n.parentElement.closest(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const texts = [];
  while (walker.nextNode()) texts.push(walker.currentNode.nodeValue);
  report.text = texts.join(' ');
  // What the cells printed or displayed (outputs are <pre>, left out of the text above).
  report.outputs = [...document.querySelectorAll('.cell_output')].map(e => e.innerText).join('\n');
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  report.duplicateIds = [...new Set(ids.filter((id, k) => ids.indexOf(id) !== k))];
  // Tables: each numbered and captioned as a table ("Table 8.4"), none inside a figure
  // and no raw pandas HTML.
  report.badTables = [...document.querySelectorAll('article table')]
      // The course guide's times table is filled in as the page is written, after Sphinx
      // numbers tables: captioned, never numbered (_ext/course_times.py).
      .filter(t => !t.classList.contains('course-times'))
      .filter(t => t.closest('figure') || t.classList.contains('dataframe') ||
                   !t.querySelector(':scope > caption .caption-number') ||
                   !/^Table\s/.test(t.querySelector(':scope > caption .caption-number').textContent))
      .map(t => (t.querySelector('caption') || t.querySelector('tr') || t).textContent.slice(0, 80));
  // Search fields a reader can see (the theme once showed two on every page).
  report.searchFields = [...document.querySelectorAll('.search-button-field, form.bd-search')]
      .filter(visible).length;
  // MyST or code fences a reader sees as text: a literal block (not a cell's source) that
  // holds MyST roles or directives, or fences in the prose.
  const myst = /\{(?:glue|glue:text|glue:md|numref|ref|doc|prf:ref|cite:t|cite:p|eq|math)\}`|^\s*(?:```|:::)\s*\{|^:(?:header-rows|name|label|class|widths):/m;
  report.mystLiterals = [...document.querySelectorAll('article pre')]
      .filter(p => !p.closest('.cell_input, .thebe-cell, .highlight-python, .highlight-ipython3'))
      .filter(p => myst.test(p.innerText)).map(p => p.innerText.slice(0, 160));
  // What a cell wrote to stderr (warnings, tracebacks) shown on the page.
  report.stderr = [...document.querySelectorAll('article .output.stderr, article .output.traceback, ' +
                                                'article [data-mime-type="application/vnd.jupyter.stderr"]')]
      .map(e => e.innerText.slice(0, 200));
  // Links to a chapter whose text is that chapter's full title ("Which conclusions depend
  // on the unstated design?") inside running text, right after a word: a short form was meant.
  const fullTitles = new Set(TITLES_JSON);
  report.titleLinks = [];
  for (const a of document.querySelectorAll('article p a.reference.internal')) {
    const text = a.innerText.replace(/\s+/g, ' ').trim();
    if (!fullTitles.has(text)) continue;
    const p = a.closest('p');
    const range = document.createRange();
    range.setStart(p, 0); range.setEndBefore(a);
    const before = range.toString().replace(/\s+/g, ' ');
    if (/[\p{L}\p{N}]\s*$/u.test(before))
      report.titleLinks.push('…' + before.slice(-40) + '[' + text + ']');
  }
  // Alt text of every figure: says what it shows, never a file name.
  report.alts = [...document.querySelectorAll("article img[src*='_images/']")]
      .map(i => ({src: i.getAttribute('src'), alt: i.getAttribute('alt')}));
  report.title = document.title;
  report.height = document.documentElement.scrollHeight;
  return report;
})()
"""

# Raw TeX a reader should never see in prose: display dollars, \( \) \[ \] delimiters,
# \begin{...}, or an inline $...$ that holds a TeX command, a sub- or superscript.
RAW_TEX = [
    re.compile(r"\$\$"),
    re.compile(r"\\[()\[\]]"),
    re.compile(r"\\begin\{"),
    re.compile(r"\$[^$\n]{0,300}?(?:\\[A-Za-z]+|[_^][{\w])[^$\n]{0,300}?\$"),
    # TeX without any delimiters: a braced exponent (n^{2/3}) or a common command.
    re.compile(r"\w\^\{[^}\s]{1,20}\}"),
    re.compile(r"\\(?:frac|sqrt|mathrm|operatorname|mathcal|lVert|rVert|sigma|mu|tau|"
               r"theta|lambda|kappa|alpha|beta)(?![A-Za-z])"),
]



def raw_tex(text: str) -> list[str]:
    hits = []
    for pattern in RAW_TEX:
        for match in pattern.finditer(text):
            start = max(match.start() - 40, 0)
            hits.append(text[start:match.end() + 40].replace("\n", " "))
    return hits


# What a reader should never see in a page's text or in a cell's output: numpy scalar
# reprs, pandas' "dtype:" footer, floats printed to 12+ digits, placeholders of roles that
# were not resolved, and (in the HTML) a plain number typeset as display math by sympy's
# init_printing.
UNFORMATTED = [
    ("numpy scalar repr", re.compile(r"\bnp\.(?:float|int|bool)\w*\(")),
    ("pandas dtype footer", re.compile(r"\bdtype: \w+")),
    ("long float", re.compile(r"(?<![\w.])-?\d+\.\d{12,}")),
    ("unresolved role", re.compile(r"\{(?:glue|glue:text|numref|prf:ref|cite:t|cite:p|ref|doc)\}`")),
    ("unresolved placeholder", re.compile(r"\{[A-Z]{1,3}\d+\}")),
]
DISPLAY_NUMBER = re.compile(r"\\displaystyle\s*\(?-?\d+(?:\.\d+)?(?:e-?\d+)?\)?\s*(?:\$|\\\])")


def unformatted_output(text: str, html: str = "") -> list[str]:
    hits = []
    for what, pattern in UNFORMATTED:
        for match in pattern.finditer(text):
            start = max(match.start() - 30, 0)
            hits.append(f"{what}: {text[start:match.end() + 30]!r}")
    hits += [f"display-math number: {m.group(0)!r}" for m in DISPLAY_NUMBER.finditer(html)]
    return hits


def png_report(data: bytes) -> dict:
    """Size and how far from blank a PNG is (decoded with Pillow, a matplotlib dependency)."""
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("RGB")
    total = image.size[0] * image.size[1]
    counts = image.getcolors(total)  # [(count, colour), ...], every colour
    background = max(count for count, _ in counts)
    return {"size": image.size, "bytes": len(data), "colours": len(counts), "ink": 1 - background / total}


def check_png(data: bytes, label: str, width: int = WIDTH) -> dict:
    info = png_report(data)
    assert info["size"] == (width, HEIGHT), f"{label}: screenshot is {info['size']}, not {width}x{HEIGHT}"
    assert info["bytes"] > 20_000, f"{label}: screenshot is only {info['bytes']} bytes"
    assert info["colours"] >= 32, f"{label}: screenshot has only {info['colours']} colours: blank?"
    assert info["ink"] > 0.01, f"{label}: {info['ink']:.2%} of the screenshot differs from the background"
    return info


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # a 127.0.0.1 URL only
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def artifact_name(page: str, suffix: str = "") -> Path:
    return ARTIFACTS / (page.removesuffix(".html").replace("/", "__") + suffix + ".png")


# --- accessibility: axe-core on every page -------------------------------------------
# axe-core (npm package, `make axe`) is loaded from the test's own server (/_axe/), run with
# the WCAG 2.0/2.1 A and AA rules, and its violations returned in short. Dark mode: the same
# page switched to the theme's dark mode, colour contrast only.
AXE_RUN = r"""
(async () => {
  if (!window.axe) {
    await new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = %(src)s; s.onload = resolve; s.onerror = () => reject(new Error('axe-core did not load'));
      document.head.appendChild(s);
    });
  }
  const rules = %(rules)s;
  const options = rules ? {runOnly: {type: 'rule', values: rules}, resultTypes: ['violations']}
                        : {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
                           resultTypes: ['violations']};
  // MathJax's CHTML output (thousands of elements a page) is left out: its colours are
  // those of the text around it, which is checked, and MathJax gives it assistive MathML.
  const result = await axe.run({exclude: [['mjx-container']]}, options);
  return {version: axe.version, violations: result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    targets: v.nodes.slice(0, 3).map(n => n.target.join(' ') + (n.failureSummary ? ' — ' +
             n.failureSummary.replace(/\s+/g, ' ').slice(0, 160) : ''))}))};
})()
"""

DARK_MODE = r"""(async () => {
  localStorage.setItem('theme', 'dark'); localStorage.setItem('mode', 'dark');
  document.documentElement.dataset.theme = 'dark';
  document.documentElement.dataset.mode = 'dark';
  await new Promise(r => setTimeout(r, 300));
  // The theme fades its colours in: wait until every finite transition has ended (on a
  // loaded machine 300 ms is not always enough, and axe would read a colour half-way).
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  await Promise.all(document.getAnimations()
    .filter(a => a.effect && a.effect.getTiming().iterations !== Infinity)
    .map(a => a.finished.catch(() => null)));
  return document.documentElement.dataset.theme;
})()"""

#: Pages checked again in the theme's dark mode (colour contrast): the dark palette is the
#: theme's CSS, the same on every page, so one page of each kind of content is enough
#: (tables and admonitions; theorem boxes, exercises, code and math; figures and glued
#: numbers; the Bokeh explorer; the bibliography). Every page is checked in light mode.
DARK_AXE_PAGES = {"book/preface.html", "book/gdp.html", "book/growth.html", "book/explorer.html",
                  "book/references.html", "book/audit.html"}

#: axe-core findings below "serious" that stay, each with the reason (rule id -> reason).
#: A serious or critical finding always fails; a minor or moderate one not listed here too.
ACCEPTED_AXE: dict[str, str] = {}

AXE_FINDINGS: dict[str, dict] = {}  # page -> {"light": [...], "dark": [...]}, for the report


def axe_blocking(violations: list[dict]) -> list[dict]:
    """The violations that fail a page: serious or critical, or minor/moderate without a reason."""
    return [v for v in violations if v["impact"] in ("serious", "critical") or v["id"] not in ACCEPTED_AXE]


def write_axe_report() -> Path:
    """_build/test-artifacts/axe-report.md (and .json): per page, axe-core's findings."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "axe-report.json").write_text(json.dumps(AXE_FINDINGS, indent=1, ensure_ascii=False))
    lines = ["# axe-core on every page of the book (WCAG 2.0/2.1 A and AA rules)", "",
             f"{len(AXE_FINDINGS)} pages checked in light mode (all rules); "
             f"{sum('dark' in f for f in AXE_FINDINGS.values())} of them also in dark mode (colour contrast).",
             "MathJax's output is left out (its colours are those of the text around it).", ""]
    counts: dict[tuple[str, str], int] = {}
    for findings in AXE_FINDINGS.values():
        for mode, violations in findings.items():
            for v in violations:
                counts[(v["impact"] or "?", v["id"])] = counts.get((v["impact"] or "?", v["id"]), 0) + v["count"]
    serious = sum(n for (impact, _), n in counts.items() if impact in ("serious", "critical"))
    lines += [f"Serious or critical violations: {serious}.", "", "| impact | rule | elements | why it stays |",
              "|---|---|---:|---|"]
    for (impact, rule), n in sorted(counts.items()):
        lines.append(f"| {impact} | {rule} | {n} | {ACCEPTED_AXE.get(rule, '**not accepted: fails the test**')} |")
    if not counts:
        lines.append("| – | none | 0 | |")
    lines += ["", "## Pages", ""]
    for page, findings in sorted(AXE_FINDINGS.items()):
        summary = "; ".join(f"{mode}: " + (", ".join(f"{v['id']} ({v['impact']}, {v['count']})" for v in vs) or "none")
                            for mode, vs in findings.items())
        lines.append(f"* `{page}` — {summary}")
    path = ARTIFACTS / "axe-report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module", autouse=True)
def axe_report():
    yield
    if AXE_FINDINGS:
        print(f"axe-core report: {write_axe_report()}")


# --- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def build() -> Path:
    assert HTML.is_dir(), f"{HTML} does not exist: build the book first (make book)"
    assert content_pages(), f"{HTML}/searchindex.js lists no documents: is this a finished Sphinx build?"
    assert (HTML / "mathjax").is_dir(), f"{HTML}/mathjax is missing: MathJax is not served by the book"
    return HTML


@pytest.fixture(scope="module")
def sentinel():
    with Sentinel() as proxy:
        yield proxy


@pytest.fixture(scope="module")
def server(build):
    assert (AXE_DIR / "axe.min.js").is_file(), f"{AXE_DIR}/axe.min.js is missing: run `make axe` (npm package axe-core)"
    with StaticServer(build, extra={"/_axe/": AXE_DIR}) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(sentinel):
    executable = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    assert executable, "Debian's chromium is not installed: run `make browser-deps`"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):  # the folder shows the last run only
        old.unlink()
    with Chromium(executable, proxy_port=sentinel.port, log_path=ARTIFACTS / "chromium.log") as chromium:
        yield chromium


class Visit:
    """One page opened in a fresh tab: the collected report and the page's network events."""

    def __init__(self, browser: Chromium, server: StaticServer, page: str, width: int = WIDTH):
        self.browser, self.page = browser, page
        self.url = urllib.parse.urljoin(server.base, page)
        self.session = browser.open_page(width, HEIGHT)
        started = time.monotonic()
        browser.navigate(self.session, self.url, timeout=PAGE_TIMEOUT)
        script = (COLLECT % {"wait_ms": int(PAGE_TIMEOUT * 1000)}).replace("TITLES_JSON", json.dumps(
            [t for t in chapter_titles().values() if re.search(r"[:?]", t)]))
        self.report = browser.evaluate(self.session, script, timeout=PAGE_TIMEOUT + 10)
        self.seconds = time.monotonic() - started
        self.server = server

    def axe(self, dark: bool = False) -> list[dict]:
        """axe-core's WCAG 2.1 A/AA violations on the page as it is (or in the theme's dark mode)."""
        if dark:
            self.browser.evaluate(self.session, DARK_MODE)
        return self.browser.evaluate(self.session, AXE_RUN % {
            "src": json.dumps(urllib.parse.urljoin(self.server.base, "_axe/axe.min.js")),
            "rules": json.dumps(["color-contrast"] if dark else None)}, timeout=120)

    def requests(self) -> list[str]:
        return list(self.session.requests)

    def responses(self) -> dict[str, int]:
        return dict(self.session.responses)

    def failures(self) -> list[str]:
        return list(self.session.failures)

    def exceptions(self) -> list[str]:
        return list(self.session.exceptions)

    def console_errors(self) -> list[str]:
        return self.session.console_errors()

    def scroll_to(self, element: str) -> bool:
        """Scroll the element that the JavaScript expression ``element`` finds to the top."""
        return self.browser.evaluate(self.session, f"""(async () => {{
            const el = {element};
            if (!el) return false;
            el.scrollIntoView({{block: 'start'}}); window.scrollBy(0, -80);
            await new Promise(r => setTimeout(r, 200));  // let the scroll settle before the screenshot
            return true;
        }})()""")

    def screenshot(self, suffix: str = "") -> tuple[Path, bytes]:
        path = artifact_name(self.page, suffix)
        return path, self.browser.screenshot(self.session, path)

    def close(self) -> None:
        self.browser.close_page(self.session)


@pytest.fixture
def open_page(browser, server):
    """Opens a page in a new tab; the tabs are closed when the test ends."""
    opened: list[Visit] = []

    def open_(page: str, width: int = WIDTH) -> Visit:
        opened.append(Visit(browser, server, page, width))
        return opened[-1]

    yield open_
    for visit in opened:
        try:
            visit.close()
        except BrowserError:
            pass


# --- tests ----------------------------------------------------------------------------------------
def test_browser_has_no_network_beyond_loopback(browser, server, sentinel, build):
    """Off-host requests from a page fail, and they reached only our sentinel proxy on 127.0.0.1."""
    session = browser.open_page(WIDTH, HEIGHT)
    browser.navigate(session, server.base + "genindex.html")
    outcome = browser.evaluate(session, """(async () => {
        const out = {};
        for (const url of ['http://example.com/probe', 'https://example.org/probe']) {
          try { const r = await fetch(url, {cache: 'no-store'}); out[url] = 'status ' + r.status; }
          catch (e) { out[url] = 'failed: ' + e.message; }
        }
        return out;
    })()""")
    assert all(v.startswith("failed") for v in outcome.values()), outcome
    seen = " ".join(sentinel.seen)
    assert "example.com" in seen and "example.org:443" in seen, (
        f"off-host requests did not go to the loopback proxy: {sentinel.seen}")
    loopback = browser.evaluate(session, "fetch(location.href).then(r => r.status)")
    browser.close_page(session)
    assert loopback == 200


def test_book_has_a_chapter_with_box_figure_and_math(build):
    pages = showcase_pages()
    print(f"pages with a theorem-like box, a figure and math: {pages}")
    assert pages, (f"no page of {build} has all of a sphinx-proof box, a figure under _images/ and math; "
                   f"content pages: {content_pages()}")


@pytest.mark.parametrize("page", content_pages() or ["<no content pages: build the book first>"])
def test_page_renders(page, build, open_page):
    assert (build / page).is_file(), f"{build / page} is missing"
    source = (build / page).read_text(errors="replace")
    visit = open_page(page)
    report = visit.report
    problems: list[str] = []

    # Math: MathJax 3 from our server, every math element typeset, no errors, no raw TeX.
    if MATH.search(source):
        if not report["mathScripts"]:
            problems.append("page has math but loads no MathJax script")
        for script in report["mathScripts"]:
            if re.match(r"^(?:[a-z]+:)?//", script["attr"], re.I):
                problems.append(f"MathJax script src is not relative: {script['attr']}")
            if urllib.parse.urlsplit(script["url"]).hostname != LOOPBACK:
                problems.append(f"MathJax script is not loaded from {LOOPBACK}: {script['url']}")
            if visit.responses().get(script["url"]) != 200:
                problems.append(f"MathJax script {script['url']} was not served (responses: {visit.responses()})")
        mathjax = report["mathjax"] or {}
        if not str(mathjax.get("version", "")).startswith("3."):
            problems.append(f"MathJax 3 did not run: {mathjax}")
        if report["untypeset"]:
            problems.append(f"{len(report['untypeset'])} math elements not typeset, e.g. {report['untypeset'][:3]}")
        if report["mjx"] < report["mathElements"] or report["mjxVisible"] == 0:
            problems.append(f"{report['mjx']} MathJax outputs ({report['mjxVisible']} visible) "
                            f"for {report['mathElements']} math elements")
        if report["mathErrors"]:
            problems.append(f"TeX errors (MathJax shows them in red): {report['mathErrors'][:5]}")
    raw = raw_tex(report["text"])
    if raw:
        problems.append(f"raw TeX in the visible text: {raw[:5]}")
    if report["duplicateIds"]:
        problems.append(f"HTML ids used more than once: {report['duplicateIds'][:10]}")
    if report["badTables"]:
        problems.append(f"tables not numbered and captioned as tables: {report['badTables'][:3]}")
    if report["searchFields"] > 1:
        problems.append(f"{report['searchFields']} search fields shown (one is enough)")
    unformatted = unformatted_output(report["text"] + "\n" + report["outputs"], source)
    if unformatted:
        problems.append(f"unformatted numbers or reprs a reader sees: {unformatted[:5]}")

    # What a reader should never see: MyST or code fences as text, stderr and
    # warnings, a label as raw text, a chapter's full title dropped into a sentence, a
    # figure without alt text (or with its file name as alt text).
    for literal in report["mystLiterals"]:
        problems.append(f"MyST source shown as a literal block: {literal!r}")
    fences = re.findall(r".{0,40}(?:```|:::\{|\{list-table\}|:header-rows:).{0,40}", report["text"])
    problems += [f"MyST fence in the text: {f!r}" for f in fences[:5]]
    problems += [f"a cell's stderr/warning shown: {e!r}" for e in report["stderr"][:5]]
    warned = re.findall(r".{0,60}\b\w+Warning: .{0,60}", report["outputs"])
    problems += [f"a warning in a cell's output: {w!r}" for w in warned[:5]]
    raw_labels = sorted(label for label in LABELS
                        if re.search(rf"(?<![\w/#.-]){re.escape(label)}(?![\w-])", report["text"]))
    problems += [f"label shown as raw text: {label!r}" for label in raw_labels[:5]]
    problems += [f"a chapter's full title inside a sentence (a short form was meant): {t!r}"
                 for t in report["titleLinks"][:5]]
    for image in report["alts"]:
        alt = (image["alt"] or "").strip()
        name = image["src"].rsplit("/", 1)[-1]
        if not alt or name in alt or re.fullmatch(r"[\w./-]+\.(?:png|svg|jpe?g|gif)", alt) or len(alt.split()) < 4:
            problems.append(f"figure {name}: alt text {alt!r} does not say what it shows")

    # Accessibility: axe-core, WCAG 2.1 A/AA, in light mode (every rule) and in the theme's
    # dark mode (colour contrast).
    runs = {"light": visit.axe()}
    if page in DARK_AXE_PAGES:
        runs["dark"] = visit.axe(dark=True)
    AXE_FINDINGS[page] = {mode: found["violations"] for mode, found in runs.items()}
    for mode, found in runs.items():
        for v in axe_blocking(found["violations"]):
            problems.append(f"axe-core ({mode} mode) {v['impact']}: {v['id']} ({v['help']}), "
                            f"{v['count']} elements, e.g. {v['targets'][:2]}")

    # Theorem-like boxes: laid out (unless inside a closed dropdown), titled, styled.
    if BOX.search(source) and not report["boxes"]:
        problems.append("the HTML has sphinx-proof boxes but the browser found none")
    for box in report["boxes"]:
        kind = box["classes"].split()[1] if len(box["classes"].split()) > 1 else "?"
        if not box["hidden"] and not box["visible"]:
            problems.append(f"box #{box['id']} ({kind}) has no size on screen")
        if not box["title"] or not box["title"].lower().startswith(kind.lower()):
            problems.append(f"box #{box['id']} ({kind}) has title {box['title']!r}")
        if not box["framed"]:
            problems.append(f"box #{box['id']} ({kind}) has no border or shadow")
    if report["boxes"] and not report["proofCss"]:
        problems.append("sphinx-proof's proof.css is not applied (no --theorem-border-color)")

    # Figures: served by our server, decoded by the browser, shown.
    figures = [i for i in report["images"] if "_images/" in i["attr"]]
    if FIGURE.search(source) and not figures:
        problems.append("the HTML has figures but the browser found none")
    shown_twice = sorted({i["attr"] for i in figures if [j["attr"] for j in figures].count(i["attr"]) > 1})
    if shown_twice:
        problems.append(f"figure shown more than once (a cell output and its glue?): {shown_twice[:3]}")
    for image in report["images"]:
        if not (image["complete"] and image["naturalWidth"] > 0 and image["naturalHeight"] > 0):
            problems.append(f"image not decoded by the browser: {image['attr']}")
    for image in figures:
        if not image["hidden"] and not image["visible"]:
            problems.append(f"figure has no size on screen: {image['attr']}")
        status, body = fetch(image["url"])
        if status != 200 or not body:
            problems.append(f"figure {image['url']}: HTTP {status}, {len(body)} bytes")

    # The page stayed on loopback, every request succeeded, and no script failed.
    for url in visit.requests():
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme not in {"data", "blob", "about"} and urllib.parse.urlsplit(url).hostname != LOOPBACK:
            problems.append(f"off-host request: {url}")
    for url, status in visit.responses().items():
        if status >= 400 and not url.endswith("/favicon.ico"):  # the browser asks for it by itself
            problems.append(f"HTTP {status} for {url}")
    problems += [f"request failed: {f}" for f in visit.failures()]
    problems += [f"JavaScript exception: {e}" for e in visit.exceptions()]
    problems += [f"console error: {e}" for e in visit.console_errors() if not KNOWN_CONSOLE_ERRORS.search(e)]

    # Screenshot of the top of the page, kept as an artefact.
    path, png = visit.screenshot()
    info = check_png(png, page)
    print(f"{page}: {report['mjx']} formulas typeset, {len(report['boxes'])} boxes, {len(figures)} figures, "
          f"{len(visit.requests())} requests, {visit.seconds:.1f} s; screenshot {path} "
          f"({info['bytes'] // 1024} KiB, {info['colours']} colours, {info['ink']:.0%} ink)")
    if page == "book/api.html":
        # The API reference shows signatures and docstrings as the code has them: default
        # values in full (z = 1.959963984540054), the claims registry's records with their
        # labels and TeX, and autosummary's name tables, which are lists, not numbered data.
        api_ok = ("raw TeX in the visible text", "tables not numbered", "unformatted numbers",
                  "label shown as raw text")
        problems = [p for p in problems if not p.startswith(api_ok)]
    assert not problems, f"{page} ({visit.url}):\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("page", showcase_pages() or ["<no page with a box, a figure and math>"])
def test_showcase_screenshots(page, build, open_page):
    """Screenshots with the first theorem-like box and the first figure in view."""
    assert (build / page).is_file(), "no page has a box, a figure and math (see the test above)"
    visit = open_page(page)
    shown = "!e.closest('details:not([open])') && e.getBoundingClientRect().height > 0"
    shots = []
    for suffix, selector in (("-box", "div.proof"), ("-figure", "img[src*='_images/']")):
        found = visit.scroll_to(f"[...document.querySelectorAll({json.dumps(selector)})].find(e => {shown})")
        assert found, f"{page}: no {selector} is shown on screen (all inside closed dropdowns?)"
        path, png = visit.screenshot(suffix)
        info = check_png(png, f"{page}{suffix}")
        shots.append(f"{path} ({info['bytes'] // 1024} KiB, {info['ink']:.0%} ink)")
    print(f"{page}: " + "; ".join(shots))


# --- figures: legible at page width, readable in dark mode --------------------------
# A reader's window: 1,400 CSS px wide. Every figure's smallest text, drawn at the book
# style's smallest font size (dpfda_book.report.plots.MIN_FONT_PT points) into a PNG of known dpi (its
# pHYs chunk, written by matplotlib), must be at least MIN_TEXT_PX CSS px tall as shown:
# text px = points / 72 * dpi * displayed width / natural width.
READER_WIDTH = 1400
MIN_TEXT_PX = 9.0
MIN_DPI = 150
DARK_PAGE = "book/sim_dimension.html"  # a chapter with several figures

FIGURE_SIZES = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  // Open every closed dropdown, so figures in solutions are measured at their own width.
  document.querySelectorAll('details:not([open])').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden, .toggle-details__container')
      .forEach(e => e.classList.remove('toggle-hidden'));
  await sleep(300);
  return [...document.querySelectorAll('img')].filter(i => /_images\//.test(i.getAttribute('src')))
    .map(i => ({url: i.src, attr: i.getAttribute('src'), natural: i.naturalWidth,
                shown: i.getBoundingClientRect().width}));
})()
"""


def figure_pages() -> list[str]:
    return [p for p in content_pages() if FIGURE.search((HTML / p).read_text(errors="replace"))]


def png_dpi(data: bytes) -> float | None:
    from PIL import Image

    dpi = Image.open(io.BytesIO(data)).info.get("dpi")
    return float(dpi[0]) if dpi else None


def luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB colour (0-255 channels)."""
    def lin(c):
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = rgb[:3]
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


@pytest.mark.parametrize("page", figure_pages() or ["<no page with a figure>"])
def test_figures_are_legible_at_page_width(page, build, open_page):
    from dpfda_book.report import plots

    assert (build / page).is_file(), "no page has a figure: build the book first"
    visit = open_page(page, width=READER_WIDTH)
    # The screenshot first, as a reader sees the page (dropdowns closed), then the sizes.
    if visit.scroll_to("document.querySelector(\"img[src*='_images/']\")"):
        path, png = visit.screenshot("-figure-1400")
        check_png(png, f"{page}-figure-1400", width=READER_WIDTH)
    figures = visit.browser.evaluate(visit.session, FIGURE_SIZES)
    assert figures, f"{page}: the HTML has figures but the browser found none"
    problems, sizes = [], []
    for fig in figures:
        status, body = fetch(fig["url"])
        name = fig["attr"].rsplit("/", 1)[-1]
        if status != 200 or not body:
            problems.append(f"{name}: HTTP {status}")
            continue
        dpi = png_dpi(body) if body[:8] == b"\x89PNG\r\n\x1a\n" else None
        if dpi is None:
            problems.append(f"{name}: not a PNG with a dpi (pHYs): cannot measure its text")
            continue
        if dpi < MIN_DPI - 0.5:
            problems.append(f"{name}: drawn at {dpi:.0f} dpi (at least {MIN_DPI}: sharp on HiDPI)")
        if fig["shown"] <= 0:
            problems.append(f"{name}: not shown (width 0) even with dropdowns open")
            continue
        text_px = plots.MIN_FONT_PT / 72 * dpi * fig["shown"] / fig["natural"]
        sizes.append(f"{name} {fig['natural']}->{fig['shown']:.0f}px: {text_px:.1f}px")
        if text_px < MIN_TEXT_PX:
            problems.append(f"{name}: {fig['natural']} px wide shown at {fig['shown']:.0f} px, so "
                            f"{plots.MIN_FONT_PT:g}-pt text is {text_px:.1f} px tall (< {MIN_TEXT_PX})")
        if fig["shown"] > fig["natural"] + 1:
            problems.append(f"{name}: upscaled from {fig['natural']} to {fig['shown']:.0f} px")
    print(f"{page}: " + "; ".join(sizes))
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


def test_figures_readable_in_dark_mode(build, open_page):
    """The theme's dark mode: the page turns dark, figures keep a light face with dark ink."""
    from PIL import Image

    assert (build / DARK_PAGE).is_file(), f"{DARK_PAGE} is missing"
    visit = open_page(DARK_PAGE, width=READER_WIDTH)
    theme = visit.browser.evaluate(visit.session, """(async () => {
        localStorage.setItem('theme', 'dark'); localStorage.setItem('mode', 'dark');
        document.documentElement.dataset.theme = 'dark';
        document.documentElement.dataset.mode = 'dark';
        await new Promise(r => setTimeout(r, 500));
        return document.documentElement.dataset.theme;
    })()""")
    assert theme == "dark", theme
    assert visit.scroll_to("document.querySelector(\"img[src*='_images/']\")")
    rect = visit.browser.evaluate(visit.session, """(() => {
        const r = document.querySelector("img[src*='_images/']").getBoundingClientRect();
        return {x: r.left, y: r.top, w: r.width, h: r.height};
    })()""")
    path, png = visit.screenshot("-dark")
    check_png(png, f"{DARK_PAGE}-dark", width=READER_WIDTH)
    shot = Image.open(io.BytesIO(png)).convert("RGB")
    box = (int(rect["x"]) + 2, int(rect["y"]) + 2, int(rect["x"] + rect["w"]) - 2,
           int(rect["y"] + min(rect["h"], HEIGHT - rect["y"])) - 2)
    assert box[2] - box[0] > 100 and box[3] - box[1] > 100, f"figure not on screen: {rect}"
    figure = shot.crop(box)
    colours = sorted(figure.getcolors(figure.size[0] * figure.size[1]), reverse=True)
    face = luminance(colours[0][1])
    lums = sorted(luminance(c) for n, c in colours for _ in range(min(n, 50)))
    ink = lums[max(len(lums) // 200, 0)]  # the darkest half percent: text, axes, lines
    contrast = (face + 0.05) / (ink + 0.05)
    # The page around the figure: a strip to its left, inside the content column.
    page_strip = shot.crop((max(box[0] - 40, 0), box[1], max(box[0] - 10, 1), box[1] + 200))
    page_colour = max(page_strip.getcolors(page_strip.size[0] * page_strip.size[1]))[1]
    print(f"dark mode: page {page_colour}, figure face {colours[0][1]} (L={face:.2f}), "
          f"ink L={ink:.3f}, contrast {contrast:.1f}:1; screenshot {path}")
    assert luminance(page_colour) < 0.1, f"the page did not turn dark: {page_colour}"
    assert contrast >= 7.0, f"figure text contrast only {contrast:.1f}:1 in dark mode"


def test_after_screenshots_of_three_chapters(build, browser, server):
    """The "after" pictures: three chapters' tops and first figures, 1,400 px wide,
    saved beside the "before" ones (``before_after.py``) in test-artifacts/before-after/."""
    import before_after

    out = ARTIFACTS / "before-after"
    written = before_after.capture(browser, server.base, "after", out)
    for path in written:
        check_png(path.read_bytes(), path.name, width=before_after.WIDTH)
    stems = {Path(p).stem for p in before_after.CHAPTERS}
    assert {p.stem.removesuffix("-after").removesuffix("-figure") for p in written} == stems
    assert len(written) == 2 * len(stems), f"a chapter without a figure? {written}"
    print("after screenshots: " + ", ".join(p.name for p in written))
