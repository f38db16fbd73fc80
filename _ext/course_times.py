"""Reading and run times per chapter, measured by the build (the course guide's table).

A Sphinx extension (``sphinx: local_extensions`` in ``_config.yml``). The directive

    ```{course-times}
    book/gdp
    book/functional_data
    ```

lists chapters, one document name a line. It is replaced, once every document has been read
and executed, by a table with, for each chapter: a link to it, the words of its prose (text
outside code cells, their outputs and math), the reading time at ``WORDS_PER_MINUTE``, and the
time its notebook took to execute in the build, as myst-nb records it (for a notebook taken
from the execution cache: the time of the execution that filled the cache). Nothing in the
table is typed. A listed document that does not exist, has no recorded execution or whose
execution failed is a warning, so the ``-W`` build fails rather than show a gap.
"""

from __future__ import annotations

import math

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

LOGGER = logging.getLogger(__name__)
# Technical prose with formulas is read more slowly than plain text (about 200-250 words a minute).
WORDS_PER_MINUTE = 150
# myst-nb re-resolves documents with this flag when a notebook was executed again.
FLAG = "has_exec_table"
SKIP = (nodes.literal_block, nodes.math, nodes.math_block, nodes.raw, nodes.comment)


class course_times_node(nodes.General, nodes.Element):
    """Placeholder for the table, filled in by :class:`FillCourseTimes`."""


class CourseTimes(SphinxDirective):
    has_content = True

    def run(self):
        from myst_nb.sphinx_ import NbMetadataCollector

        NbMetadataCollector.set_doc_data(self.env, self.env.docname, FLAG, True)
        node = course_times_node()
        node["docnames"] = [line.strip() for line in self.content if line.strip()]
        return [node]


def _in_code(node) -> bool:
    while node is not None:
        if isinstance(node, SKIP):
            return True
        if isinstance(node, nodes.container) and "cell" in node.get("classes", []):
            return True
        node = node.parent
    return False


def prose_words(doctree) -> int:
    """Words of the page's prose: text outside code cells, outputs, code and math."""
    return sum(len(t.astext().split()) for t in doctree.findall(nodes.Text) if not _in_code(t.parent))


def count_words(app, doctree) -> None:
    if not hasattr(app.env, "course_words"):
        app.env.course_words = {}
    # A notebook run that raised (kept with allow_errors) shows a traceback: no time for it.
    failed = any("traceback" in node.get("classes", []) for node in doctree.findall(nodes.Element))
    app.env.course_words[app.env.docname] = None if failed else prose_words(doctree)


def purge(app, env, docname) -> None:
    getattr(env, "course_words", {}).pop(docname, None)


def merge(app, env, docnames, other) -> None:
    if not hasattr(env, "course_words"):
        env.course_words = {}
    env.course_words.update({d: w for d, w in getattr(other, "course_words", {}).items() if d in docnames})


def _cell(content) -> nodes.entry:
    entry = nodes.entry()
    entry += content if isinstance(content, nodes.paragraph) else nodes.paragraph(text=str(content))
    return entry


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


class FillCourseTimes(SphinxPostTransform):
    default_priority = 8  # before the references are resolved (9, 10)

    def run(self, **kwargs) -> None:
        from myst_nb.sphinx_ import NbMetadataCollector

        data = NbMetadataCollector.get_doc_data(self.env)
        words = getattr(self.env, "course_words", {})
        for node in list(self.document.findall(course_times_node)):
            # Filled in when the page is written, after Sphinx has numbered the tables, so
            # this one has a caption but no number (the browser test knows it by its class).
            table = nodes.table(classes=["colwidths-auto", "course-times"])
            table["ids"] = ["course-times-table"]
            table += nodes.title(text="Words, reading time and run time of each chapter, measured by this build")
            tgroup = nodes.tgroup(cols=4)
            table += tgroup
            for _ in range(4):
                tgroup += nodes.colspec(colwidth=25)
            head = nodes.row()
            for name in ("Chapter", "Words of prose", f"Reading time ({WORDS_PER_MINUTE} words/min)",
                         "Run time in the build"):
                head += _cell(name)
            tgroup += nodes.thead("", head)
            body = nodes.tbody()
            tgroup += body
            total_read = total_run = 0.0
            for doc in node["docnames"]:
                exec_data = data.get(doc, {}).get("exec_data") or {}
                # Only a successful execution's time: a failed run stops early.
                runtime = exec_data.get("runtime") if exec_data.get("succeeded", True) else None
                if words.get(doc) is None or runtime is None:
                    LOGGER.warning(f"course-times: no word count or successful execution for {doc!r}",
                                   location=node)
                    continue
                link = pending_xref("", refdoc=self.env.docname, reftype="doc", refdomain="std",
                                    reftarget="/" + doc, refexplicit=False, refwarn=True)
                link += nodes.inline(text=doc)
                par = nodes.paragraph()
                par += link
                read = math.ceil(words[doc] / WORDS_PER_MINUTE)
                total_read += read
                total_run += runtime
                row = nodes.row()
                for content in (par, words[doc], f"{read} min", minutes(runtime)):
                    row += _cell(content)
                body += row
            row = nodes.row()
            for content in ("All of them", "", f"{total_read / 60:.1f} h", minutes(total_run)):
                row += _cell(content)
            body += row
            node.replace_self(table)


def setup(app):
    app.add_node(course_times_node)
    app.add_directive("course-times", CourseTimes)
    app.connect("doctree-read", count_words)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.add_post_transform(FillCourseTimes)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
