"""Each inline ``<script>`` once per page: Sphinx PR #13402, backported to Sphinx 7.

In Sphinx 7.4, ``app.add_js_file(None, body=...)`` called once the HTML builder exists
(sphinx-togglebutton does so in ``builder-inited``, sphinx-thebe in
``env-before-read-docs``) gives the builder the script with filename ``None``; when writing
starts, the builder copies every registered script again, now with filename ``''``. The two
copies compare unequal, so each page carries the inline script twice, and sphinx-thebe's
``const THEBE_JS_URL = ...`` declared twice is a JavaScript SyntaxError on every page (found
by tests/browser/test_rendering.py). Later Sphinx releases pass ``''`` in both places; this
extension makes the builder do the same, which changes nothing where it already does.
"""

from __future__ import annotations


def _register_inline_scripts_once(app) -> None:
    add_js_file = getattr(app.builder, "add_js_file", None)
    if add_js_file is None:  # not an HTML builder
        return

    def add_js_file_normalised(filename, **kwargs):
        return add_js_file(filename or "", **kwargs)

    app.builder.add_js_file = add_js_file_normalised


def setup(app):
    # Before other builder-inited handlers, which may add inline scripts (sphinx-togglebutton).
    app.connect("builder-inited", _register_inline_scripts_once, priority=0)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
