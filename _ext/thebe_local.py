"""Live Code from the book's own files: Thebe served locally, Binder or a reader's own server.

Jupyter Book's "Live Code" button comes from sphinx-thebe 0.3, which writes two things into
every page: an inline script ``const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/..."``
that the button loads when clicked, and a ``<script type="text/x-thebe-config">`` block
(Binder repository, kernel name). This extension changes four things and nothing else:

* ``THEBE_JS_URL`` points at ``thebe/index.js`` of the built book (``make thebe`` copies the
  Thebe 0.9 build shipped by the PyPI package teachbooks-sphinx-thebe into ``_vendor/thebe``,
  which ``html_extra_path`` publishes), resolved from the page's ``data-content_root``;
  Thebe loads its code-split chunks from the same folder.
* The Thebe configuration gains ``useBinder: true`` (the published site's kernels still come
  from Binder, as before) and ``mathjaxUrl`` = ``thebe/mathjax2-shim.js``: LaTeX in live
  outputs is typeset by the book's MathJax 3, not by MathJax 2 from a CDN.
* A reader (or the browser test) may run the cells on their own Jupyter server instead of
  Binder: open a page with ``?thebe-server=http://127.0.0.1:8888&thebe-token=...``. A small
  inline script then rewrites the page's Thebe configuration before the button is clicked
  (``useBinder: false`` and ``serverSettings``) and passes the same options to Thebe's
  ``bootstrap``.
* sphinx-thebe calls ``thebelab.bootstrap()`` without options, and Thebe 0.9 then requests
  no kernel at all (and forces Binder); the same inline script wraps ``bootstrap`` so that
  it asks for a kernel, as the page's configuration says. Only URLs on the loopback interface are
  accepted, so a link cannot send a reader's code to someone else's server.
"""

from __future__ import annotations

import json
import re

from docutils import nodes

THEBE_JS = "thebe/index.js"
MATHJAX_SHIM = "thebe/mathjax2-shim.js"

# Runs in every page; before sphinx-thebe's button can be clicked.
LOCAL_SERVER_JS = r"""
(function () {
  // Options for Thebe's bootstrap(). sphinx-thebe calls thebelab.bootstrap() with none; Thebe
  // 0.9 then forces useBinder: true and requests no kernel unless the call asks for one. So
  // bootstrap is wrapped as soon as Thebe defines window.thebelab (below).
  var override = {requestKernel: true};
  var params = new URLSearchParams(window.location.search);
  var server = params.get("thebe-server");
  if (server) {
    var url = null;
    try { url = new URL(server); } catch (e) { console.warn("[dpfda] thebe-server is not a URL:", server); }
    if (url && !(/^https?:$/.test(url.protocol) && /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(url.hostname))) {
      console.warn("[dpfda] thebe-server must be on this computer (127.0.0.1, localhost or [::1]):", server);
      url = null;
    }
    if (url) {
      var base = url.origin + url.pathname.replace(/\/*$/, "/");
      var settings = {baseUrl: base, wsUrl: base.replace(/^http/, "ws"), token: params.get("thebe-token") || "",
                      appendToken: true};
      override = {requestKernel: true, useBinder: false, serverSettings: settings,
                  savedSessionOptions: {enabled: false}};
      var apply = function () {
        var el = document.querySelector('script[type="text/x-thebe-config"]');
        if (!el) return;
        var cfg = (new Function("return (" + el.textContent + ")"))();
        delete cfg.binderOptions;
        el.textContent = JSON.stringify(Object.assign(cfg, override));
        window.DPFDA_THEBE_SERVER = base;
      };
      if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", apply);
      else apply();
    }
  }
  var current;
  Object.defineProperty(window, "thebelab", {
    configurable: true,
    get: function () { return current; },
    set: function (t) {
      if (t && typeof t.bootstrap === "function" && !t.dpfdaBootstrap) {
        var bootstrap = t.bootstrap;
        t.bootstrap = function (options) { return bootstrap.call(this, Object.assign({}, options || {}, override)); };
        t.dpfdaBootstrap = override;
      }
      current = t;
    }
  });
})();
"""


def _root_relative(docname: str) -> str:
    return "../" * docname.count("/")


def _patch_thebe_url(app, pagename, templatename, context, doctree) -> None:
    """Replace the CDN URL in sphinx-thebe's inline configuration script of this page."""
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", None)
        body = attributes.get("body") if attributes else None
        if body and "THEBE_JS_URL" in body and "unpkg.com" in body:
            attributes["body"] = re.sub(
                r'const THEBE_JS_URL = "[^"]*"',
                'const THEBE_JS_URL = new URL((document.documentElement.dataset.content_root || "") + '
                f'"{THEBE_JS}", document.baseURI).href',
                body,
            )


def _patch_thebe_config(app, doctree, docname) -> None:
    """Add useBinder and the local MathJax shim to the page's x-thebe-config block."""
    shim = json.dumps(_root_relative(docname) + MATHJAX_SHIM)
    for raw in doctree.findall(nodes.raw):
        text = raw.astext()
        if "text/x-thebe-config" not in text or "mathjaxUrl" in text:
            continue
        patched = text.replace(
            "requestKernel: true,",
            f'requestKernel: true,\n        useBinder: true,\n        mathjaxUrl: {shim},\n'
            '        mathjaxConfig: "TeX-AMS_CHTML-full,Safe",', 1)
        if patched == text:
            raise RuntimeError("thebe_local: sphinx-thebe's configuration block changed; update _ext/thebe_local.py")
        new = nodes.raw(text=patched, format="html")
        raw.replace_self(new)


def setup(app):
    app.add_js_file(None, body=LOCAL_SERVER_JS, priority=100)
    app.connect("html-page-context", _patch_thebe_url, priority=900)
    # sphinx-thebe appends its block in doctree-resolved (default priority 500): run after it.
    app.connect("doctree-resolved", _patch_thebe_config, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
