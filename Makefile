# dpfda-book: build the book, run the tests.
#   make book     full-size build of the book into _build/html
#   make test     unit tests, notebook tests (quick mode), then the full book build
#   make student  the student edition (solutions hidden) into _build/student/_build/html
#   make clean    remove build outputs (keeps .venv and _vendor)
#   make distclean  also remove .venv and the fetched MathJax
# Everything runs from .venv, created on first use from requirements.txt.

PYTHON  ?= python3.11
VENV    := .venv
BIN     := $(CURDIR)/$(VENV)/bin
STAMP   := $(VENV)/.installed
# Executables run with the venv first on PATH, so notebook kernels and subprocesses use it.
RUN     := PATH="$(BIN):$$PATH"
JB_FLAGS := -W -n --keep-going

# MathJax 3, served from the book itself (no network when reading it).
MATHJAX_VERSION := 3.2.2
MATHJAX_DIR     := _vendor/mathjax
MATHJAX         := $(MATHJAX_DIR)/tex-chtml-full.js

.PHONY: venv mathjax book student test test-unit test-notebooks browser-deps clean distclean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --upgrade pip
	$(VENV)/bin/python -m pip install -r requirements.txt
	touch $@

# Fetch MathJax's es5 bundle (components, fonts) from the npm registry with npm's own
# client, once; the folder is git-ignored and copied into _build/html/_static by Sphinx.
mathjax: $(MATHJAX)

$(MATHJAX):
	@command -v npm >/dev/null || { echo "npm is needed to fetch MathJax (apt-get install -y npm)"; exit 1; }
	rm -rf $(MATHJAX_DIR) _vendor/.mathjax-tmp
	mkdir -p _vendor/.mathjax-tmp
	cd _vendor/.mathjax-tmp && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null
	tar -xzf _vendor/.mathjax-tmp/mathjax-$(MATHJAX_VERSION).tgz -C _vendor/.mathjax-tmp package/es5 package/LICENSE
	mv _vendor/.mathjax-tmp/package/es5 $(MATHJAX_DIR)
	mv _vendor/.mathjax-tmp/package/LICENSE $(MATHJAX_DIR)/LICENSE
	rm -rf _vendor/.mathjax-tmp
	test -f $@

book: venv mathjax
	$(RUN) jupyter-book build . $(JB_FLAGS)

# Student edition: the same book with every solution left out (sphinx-exercise's
# hide_solutions, made to cover gated solutions by _ext/student_edition.py). Jupyter Book 1
# has no command-line config override, so a copy of _config.yml with the override is
# written to _build/ and passed with --config. It reuses the main build's execution cache.
# HTML: _build/student/_build/html/index.html
student: venv mathjax
	$(BIN)/python _ext/student_edition.py _config.yml _build/_config_student.yml
	$(RUN) jupyter-book build . --config _build/_config_student.yml --path-output _build/student $(JB_FLAGS)

# Unit and property tests. pytest exits 5 when it collects nothing: accepted only when
# tests/ holds no test files at all.
test-unit: venv
	@if [ -n "$$(find tests \( -name 'test_*.py' -o -name '*_test.py' \) -print -quit 2>/dev/null)" ]; then \
	  $(RUN) pytest tests/; \
	else \
	  echo "tests/: no test files yet"; \
	fi

# Every notebook of the book runs without error, in quick mode (small sizes).
test-notebooks: venv
	@if [ -n "$$(find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' -print -quit)" ]; then \
	  DPFDA_QUICK=1 $(RUN) pytest --nbval-lax --durations=10 book/; \
	else \
	  echo "book/: no notebooks yet"; \
	fi

# Everything: unit tests, notebooks, then the full book build (-W -n: a warning, a broken
# reference or a failing cell fails it), then the student edition from the same cache.
test: venv mathjax
	$(MAKE) test-unit
	$(MAKE) test-notebooks
	$(MAKE) book
	$(MAKE) student

# Debian's Chromium, for a browser test of the built book (not yet part of `make test`).
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
