# dpfda-book: build the book, run the tests.
#   make book     full-size build of the book into _build/html, then the student edition
#                 (into _build/html/student/, linked from the preface); runs `make assignments` first
#                 and executes the notebooks two at a time before Sphinx reads them
#   make test     everything, each notebook executed once at full size (by the book build) and
#                 once in quick mode (by the Binder replay): static checks (ruff, mypy,
#                 doctests), unit tests, the Binder replay, the full book build (with the
#                 student edition), the browser tests of that build, the PDF and its test
#   make test-quick   the edit-test loop, a few minutes: the static checks, the unit tests not
#                 marked `slow`, in quick mode, and the notebooks changed since QUICK_BASE (main)
#   make test-static  ruff on the repository, mypy and the doctests of dpfda and dpfda_book
#   make test-unit    the unit and property tests (all but the browser's), at full size
#   make test-notebooks  every notebook under book/, in quick mode, with nbval in .venv
#   make test-binder  a fresh environment installed as Binder does, every notebook under book/
#                 run there in quick mode, two at a time (DPFDA_BINDER_QUICK=0: full size, one at a
#                 time, timing each chapter); then the student edition's repository, likewise
#   make test-browser  the built book in headless Chromium, driven by Playwright, with the
#                 axe-core accessibility check on every page (after `make book`)
#   make pdf      the whole book as one PDF, _build/pdf/book.pdf (after `make book`)
#   make test-pdf the PDF's test (after `make pdf`)
#   make assignments  the autograded assignments (otter-grader): student notebooks with public
#                 checks and autograder zips (each with its own key, read by the grading plugin
#                 dpfda_book.teaching.grader), and the power table of their simulation checks
#                 (grading-power.md), into _build/assignments
#   make student  the student edition (solutions hidden) into _build/student/_build/html
#   make clean    remove build outputs (keeps .venv and _vendor)
#   make distclean  also remove .venv and the copied MathJax and Thebe
# Everything runs from .venv, created on first use from requirements.txt.

PYTHON  ?= python3.11
VENV    := .venv
BIN     := $(CURDIR)/$(VENV)/bin
STAMP   := $(VENV)/.installed
# Executables run with the venv first on PATH, so notebook kernels and subprocesses use it.
RUN     := PATH="$(BIN):$$PATH"
# The book's builds: always full size (DPFDA_QUICK removed: the execution cache in
# _build/.jupyter_cache is keyed by the notebooks' code only, so a quick-mode build would
# hand its small-sample outputs to the next full build), with the results store of
# dpfda_book.simulation.store in _build/.dpfda_store (the chapters share simulated settings through it,
# and an unchanged setting is not simulated again; `make clean` empties it).
STORE   := $(CURDIR)/_build/.dpfda_store
RUN_BOOK := env -u DPFDA_QUICK DPFDA_STORE="$(STORE)" $(RUN)
JB_FLAGS := -W -n --keep-going

# MathJax 3, served from the book itself (no network when reading it).
MATHJAX_VERSION := 3.2.2
MATHJAX_DIR     := _vendor/mathjax
MATHJAX         := $(MATHJAX_DIR)/tex-chtml-full.js

# Thebe (the "Live Code" button), served from the book itself: the PyPI package
# teachbooks-sphinx-thebe 1.0.2 (installed by requirements.txt) ships a webpack build of Thebe
# 0.9 in its _thebe_static folder; only those files are used, not its Sphinx extension.
# _ext/thebe_local.py points the pages at _build/html/thebe/.
THEBE_DIR     := _vendor/thebe
THEBE         := $(THEBE_DIR)/index.js

# axe-core (the accessibility engine of the browser test), the npm package from the npm
# registry with the machine's npm, into the git-ignored _build/npm; the test serves its
# axe.min.js from its own local server (never a CDN). Not part of the book.
AXE_VERSION := 4.14.1
AXE_DIR     := _build/npm/node_modules/axe-core
AXE         := $(AXE_DIR)/axe.min.js

.PHONY: axe thebe venv mathjax book student assignments test test-quick test-static test-unit test-notebooks test-browser test-binder browser-deps pdf pdf-deps test-pdf clean distclean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml machinery/pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --upgrade pip
	$(VENV)/bin/python -m pip install -r requirements.txt
	touch $@

# MathJax 3's es5 bundle (components and fonts) comes from the PyPI package
# django-static-mathjax (a plain copy of MathJax, no Django needed), installed into .venv
# by requirements.txt, so no tool beyond Python is needed. It is copied into the
# git-ignored _vendor/mathjax, which Sphinx copies into _build/html/mathjax.
mathjax: $(MATHJAX)

$(MATHJAX): $(STAMP)
	rm -rf $(MATHJAX_DIR)
	$(VENV)/bin/python -c "import importlib.metadata as md, pathlib, shutil, mathjax; \
	src = pathlib.Path(mathjax.__file__).parent / 'static' / 'mathjax' / 'es5'; \
	dist = md.distribution('django-static-mathjax'); \
	assert dist.version.startswith('$(MATHJAX_VERSION)'), dist.version; \
	shutil.copytree(src, '$(MATHJAX_DIR)'); \
	lic = [f for f in dist.files if f.name == 'LICENSE']; \
	shutil.copyfile(lic[0].locate(), '$(MATHJAX_DIR)/LICENSE')"
	test -f $@ && touch $@

# Thebe's index.js and its code-split chunks (*.index.js, loaded from the same folder when a
# reader clicks "Live Code"), its CSS and licences; not thebe-lite, its wheels or source maps.
# _ext/mathjax2-shim.js lets Thebe typeset live LaTeX outputs with the book's MathJax 3.
thebe: $(THEBE)

$(THEBE): $(STAMP) _ext/mathjax2-shim.js
	rm -rf $(THEBE_DIR)
	$(VENV)/bin/python -c "import pathlib, shutil, teachbooks_sphinx_thebe as tb; \
	src = pathlib.Path(tb.__file__).parent / '_thebe_static'; \
	text = (src / 'index.js').read_text(); \
	assert 'window.thebelab=window.thebe' in text and 't.bootstrap=function' in text, 'not a Thebe 0.9 build'; \
	dst = pathlib.Path('$(THEBE_DIR)'); dst.mkdir(parents=True); \
	files = [f for f in src.iterdir() if f.name == 'index.js' or f.name.endswith('.index.js') \
	         or f.name == 'thebe.css' or f.name.endswith('index.js.LICENSE.txt')]; \
	[shutil.copyfile(f, dst / f.name) for f in files]; \
	print(len(files), 'thebe files')"
	cp _ext/mathjax2-shim.js $(THEBE_DIR)/
	test -f $@ && touch $@

# The notebooks are executed first, two (the number of CPUs) at a time, into the execution cache
# (tools/execute_notebooks.py, as myst-nb would execute them); jupyter-book then finds them there.
# A failed chapter never reaches a page: a notebook that fails is not cached and stops the
# build here; a notebook Sphinx would execute itself raises (execute.raise_on_error in
# _config.yml), so no failed run is kept; and tools/check_pages.py fails the build on any page
# showing a traceback or an error output (but in cells tagged raises-exception) and removes it.
# What the two builds need first; tests/test_build_failures.py sets BUILD_DEPS= on the command
# line (sub-makes inherit it) to run these same recipes on a three-page book.
BUILD_DEPS := venv mathjax thebe assignments

book: $(BUILD_DEPS)
	$(RUN_BOOK) python tools/execute_notebooks.py
	$(RUN_BOOK) jupyter-book build . $(JB_FLAGS)
	$(RUN) python tools/check_pages.py _build/html
	$(MAKE) student BUILD_DEPS=

# Autograded assignments, one per Part (book/assignments/part*.ipynb, otter-grader master
# notebooks; their hidden checks are in book/assignments/hidden_checks.py, which goes into the
# autograder zips only). `otter assign` writes, for each, _build/assignments/NAME/student/NAME.ipynb
# (the questions with `...` and the public checks) and _build/assignments/NAME/autograder/ (the
# reference solution and NAME-autograder_*.zip with the hidden tests); the student notebook is
# also zipped to _build/assignments/NAME-student.zip, which the course guide links. dpfda and the
# book's package dpfda_book (the assignments draw from its data models) are built as wheels
# (_build/assignments/wheel/, from a copy of their sources: no build/ left in the tree) and
# tools/autograder_env.py puts them into every autograder zip with pinned requirements on
# Python 3.11 (requirements.txt, environment.yml), so
# the zip alone sets up a grader (Gradescope, or a venv). Grade a submission offline, without Docker:
#   mkdir -p OUT && .venv/bin/otter run -a _build/assignments/NAME/autograder/NAME-autograder_*.zip -o OUT SUBMISSION.ipynb
assignments: venv
	rm -rf _build/assignments
	mkdir -p _build/assignments/src
	cp -r pyproject.toml README.md LICENSE dpfda machinery _build/assignments/src/
	rm -rf _build/assignments/src/machinery/*.egg-info
	$(BIN)/python -m pip wheel --no-deps -q -w _build/assignments/wheel _build/assignments/src
	$(BIN)/python -m pip wheel --no-deps -q -w _build/assignments/wheel _build/assignments/src/machinery
	rm -rf _build/assignments/src
	for src in book/assignments/part*.ipynb; do \
	  name=$$(basename $$src .ipynb); \
	  $(RUN) otter assign $$src _build/assignments/$$name || exit 1; \
	  $(BIN)/python -m zipfile -c _build/assignments/$$name-student.zip _build/assignments/$$name/student/$$name.ipynb || exit 1; \
	done
	$(BIN)/python tools/autograder_env.py _build/assignments _build/assignments/wheel/dpfda-*.whl \
	  _build/assignments/wheel/dpfda_book-*.whl book/assignments
	$(BIN)/python tools/grading_power.py book/assignments _build/assignments/grading-power.md > /dev/null

# Student edition: the same book with every solution left out (sphinx-exercise's
# hide_solutions, made to cover gated solutions by _ext/student_edition.py). Jupyter Book 1
# has no command-line config override, so tools/student_export.py writes a copy of
# _config.yml with the override to _build/, passed with --config. It reuses the main build's
# execution cache, which holds successful runs only: the notebooks are executed into it
# first, as for `make book`, so a failing chapter stops this build too, and its pages are
# checked the same way. The same script writes the solution-free chapters to
# _build/student_repository/, a git repository with one
# commit (book/NAME.ipynb, requirements.txt, runtime.txt, the wheels of dpfda and dpfda_book, the licences): push it
# to STUDENT_REPOSITORY, a public repository, and the student edition's Binder button and
# repository link open it (never the book's own repository, which holds the solutions).
# `make student STUDENT_REPOSITORY=` builds an edition with neither.
STUDENT_REPOSITORY ?= https://github.com/dpfda/dpfda-book-student
# HTML: _build/student/_build/html/index.html, copied to _build/html/student/ (when the main
# edition exists) so the main edition's preface links to it. `make book` ends with it, with
# BUILD_DEPS= (it has just made them: `assignments` is phony and would be rebuilt otherwise).
student: $(BUILD_DEPS)
	$(RUN_BOOK) python tools/execute_notebooks.py
	$(BIN)/python tools/student_export.py _config.yml _build/_config_student.yml --repository "$(STUDENT_REPOSITORY)"
	$(RUN_BOOK) jupyter-book build . --config _build/_config_student.yml --path-output _build/student $(JB_FLAGS)
	$(RUN) python tools/check_pages.py _build/student/_build/html
	if [ -d _build/html ]; then rm -rf _build/html/student && cp -r _build/student/_build/html _build/html/student; fi

# Static checks, first in `make test`: ruff (lint, import order, numpy-style docstrings; rules in
# pyproject.toml), mypy on both packages (every function annotated: disallow_untyped_defs), and the
# examples in the docstrings of dpfda and dpfda_book.
test-static: venv
	$(RUN) ruff check .
	$(RUN) mypy
	$(RUN) pytest -p no:cacheprovider --doctest-modules dpfda machinery/dpfda_book

# Unit and property tests. pytest exits 5 when it collects nothing: accepted only when
# tests/ holds no test files at all. The browser test (marker `browser`) needs the built
# book and runs in `test-browser` instead.
test-unit: venv
	@if [ -n "$$(find tests \( -name 'test_*.py' -o -name '*_test.py' \) -print -quit 2>/dev/null)" ]; then \
	  $(RUN) pytest -m "not browser" --durations=30 tests/; \
	else \
	  echo "tests/: no test files yet"; \
	fi

# Every notebook under book/ (the chapters and the assignments' master notebooks) runs without
# error, in quick mode (small sizes), with nbval in .venv; NOTEBOOKS=... runs only those.
# `make test` leaves this out: its Binder replay runs the same notebooks in quick mode, in a
# fresh environment.
NOTEBOOKS ?= book/
test-notebooks: venv
	@if [ -n "$$(find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' -print -quit)" ]; then \
	  DPFDA_QUICK=1 $(RUN) pytest --nbval-lax --durations=10 $(NOTEBOOKS); \
	else \
	  echo "book/: no notebooks yet"; \
	fi

# The edit-test loop, a few minutes: the static checks; the unit tests but those marked `slow`
# (the seeded Monte Carlo checks and every test that took 5 s of CPU or more when last measured:
# fresh environments, builds of a small book, the assignments' grading, ...; benchmarks/README.md
# lists the slowest with their times), in quick mode; and, in quick mode, the notebooks under
# book/ that differ from the last commit HEAD shares with QUICK_BASE, or are not committed yet
# (none: nothing run). `make test` runs everything.
QUICK_BASE ?= main
test-quick: venv
	$(MAKE) test-static
	DPFDA_QUICK=1 $(RUN) pytest -q -m "not browser and not slow" tests/
	@base=$$(git merge-base HEAD $(QUICK_BASE) 2>/dev/null || echo HEAD); \
	nbs=$$( { git diff --name-only $$base -- 'book/*.ipynb'; git ls-files --others --exclude-standard -- 'book/*.ipynb'; } \
	        | sort -u | while read -r f; do if [ -f "$$f" ]; then echo "$$f"; fi; done ); \
	if [ -n "$$nbs" ]; then \
	  echo "notebooks changed since $$base:" $$nbs; \
	  DPFDA_QUICK=1 $(RUN) pytest -q --nbval-lax $$nbs; \
	else \
	  echo "no notebook under book/ changed since $$base"; \
	fi

# Everything: the static checks, the unit tests, the Binder replay (every notebook in quick mode
# in a fresh Binder-like environment), then the full book build (-W -n: a warning, a broken
# reference or a failing cell fails it; every notebook at full size) with the student edition,
# the browser test of that build, the PDF and its test.
test: venv mathjax thebe
	$(MAKE) test-static
	$(MAKE) test-unit
	$(MAKE) test-binder
	$(MAKE) book
	$(MAKE) test-browser
	$(MAKE) pdf
	$(MAKE) test-pdf

# The built book in a real browser (tests/browser/test_rendering.py): _build/html served on
# 127.0.0.1 and every page opened in headless Chromium (Debian's, driven by Playwright for
# Python; no browser download) with no other network; axe-core checks every page for
# WCAG 2.1 AA (report: _build/test-artifacts/axe-report.md); math must be
# typeset by the book's own MathJax, theorem boxes and figures shown, nothing fetched from
# elsewhere. Screenshots go to _build/test-artifacts/. Run after `make book`: it fails
# (does not skip) when the build or Chromium is missing. DPFDA_HTML=<folder> tests another
# build, e.g. DPFDA_HTML=_build/student/_build/html after `make student`.
test-browser: venv browser-deps axe
	DPFDA_AXE=$(CURDIR)/$(AXE_DIR) $(RUN) pytest -m browser -rA tests/browser

axe: $(AXE)

$(AXE):
	@command -v npm >/dev/null || (apt-get update && apt-get install -y npm)
	mkdir -p _build/npm
	npm install --prefix _build/npm --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
	  axe-core@$(AXE_VERSION)
	test -f $@ && touch $@

# Binder's view of the repository (tests/binder/test_binder_replay.py): copy the tracked files,
# create a fresh Python 3.11 environment (runtime.txt), `pip install -r requirements.txt` then
# `pip install .` there (pip's cache reused), and run every notebook under book/ from its folder,
# in quick mode, as many at a time as there are CPUs (the full-size run of each chapter is the
# book build's). DPFDA_BINDER_QUICK=0 runs them at full size, one at a time, timing each chapter
# (a Binder reader's wait). Report: _build/test-artifacts/binder-replay.md. Then the student
# edition's repository (tests/binder/test_student_binder.py): the same install from it alone,
# and the chapters that need more than dpfda and numpy, in quick mode.
test-binder: venv
	$(RUN) pytest -m binder -rA -s tests/binder

# The whole book as one PDF: Jupyter Book's single-page build (from the same execution
# cache, so nothing is re-run) printed to A4 by the browser test's headless Chromium, with a
# title page, a table of contents and a PDF outline (tools/book_pdf.py). No TeX, no network.
# The PDF is also copied next to the HTML book, whose preface links to it.
pdf: venv mathjax browser-deps
	$(RUN_BOOK) jupyter-book build . --builder singlehtml $(JB_FLAGS)
	$(BIN)/python tools/book_pdf.py _build/singlehtml _build/pdf/book.pdf
	if [ -d _build/html ]; then cp _build/pdf/book.pdf _build/html/dpfda-book.pdf; fi

# Debian's poppler-utils (pdftotext, pdfinfo, pdfimages), for the PDF's test.
pdf-deps:
	@if command -v pdftotext >/dev/null && command -v pdfinfo >/dev/null && command -v pdfimages >/dev/null; then \
	  echo "poppler-utils already installed"; \
	else \
	  apt-get update && apt-get install -y poppler-utils; \
	fi

# The PDF of `make pdf` (tests/pdf/test_book_pdf.py): page count, every chapter's title in
# its text, figures embedded, an outline, no raw TeX.
test-pdf: venv pdf-deps
	$(RUN) pytest -m pdf -rA tests/pdf

# Debian's Chromium, for the browser test of the built book (`make test-browser`).
browser-deps:
	@if command -v chromium >/dev/null; then \
	  echo "chromium already installed: $$(command -v chromium)"; \
	else \
	  apt-get update && apt-get install -y chromium; \
	fi

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENV) _vendor
