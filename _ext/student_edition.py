"""The student edition of the book: every solution left out (a Sphinx extension).

Loaded through ``sphinx: local_extensions`` in ``_config.yml``. sphinx-exercise's
``hide_solutions`` option drops ``{solution}`` blocks, but for the *gated* form
(``{solution-start}`` ... ``{solution-end}``, used when a solution holds code cells) it drops
only the start marker: the content and the end marker stay, and the HTML writer then fails on
the orphan end node ("departing unknown node type: solution_end_node", sphinx-exercise issue
#89, open in 1.2.1). This extension makes a hidden ``{solution-start}`` leave a marker, and a
transform removes the marker, the gated content and the ``{solution-end}``. The same holds for
``:hidden:`` on a gated solution.

In the student edition a page's download button offers its solution-free notebook
(``notebooks/NAME.ipynb``). In the book's own edition the extension sets the Sphinx tag
``instructor``, so ``{only} instructor`` blocks (the course guide's rubric key steps and what it
says of the instructor's files) are left out of the student edition; a notebook cell tagged
``instructor-only`` appears in the book's own edition only, one tagged ``student-only`` in the
student edition only.

The student edition's configuration, its solution-free notebooks and the solution-free
repository for Binder are written by ``tools/student_export.py`` (``make student``).
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform


class hidden_gated_solution(nodes.Element):
    """Marks where a hidden ``{solution-start}`` stood; removed before writing."""


def _hiding_solution_start_directive():
    from sphinx_exercise.directive import SolutionStartDirective

    class HidingSolutionStartDirective(SolutionStartDirective):
        def run(self):
            result = super().run()
            # sphinx-exercise returns no node when the solution is hidden (hide_solutions
            # or :hidden:) or its label is a duplicate (already reported as a warning).
            return result if result else [hidden_gated_solution()]

    return HidingSolutionStartDirective


class RemoveHiddenGatedSolutions(SphinxTransform):
    """Remove a hidden gated solution: marker, content and ``{solution-end}``.

    Runs after sphinx-exercise's structure check (priority 1) and before it merges the
    gated solutions that remain visible (priority 10).
    """

    default_priority = 5

    def apply(self, **kwargs) -> None:
        from sphinx_exercise.nodes import solution_end_node

        for marker in list(self.document.findall(hidden_gated_solution)):
            parent = marker.parent
            start = parent.index(marker)
            end = next(
                (i for i in range(start + 1, len(parent)) if isinstance(parent[i], solution_end_node)),
                None,
            )
            # A missing end was already reported by sphinx-exercise's structure check.
            stop = start if end is None else end
            for child in list(parent.children[start : stop + 1]):
                parent.remove(child)


class RemoveOtherEditionsCells(SphinxTransform):
    """Remove the notebook cells tagged for the other edition.

    A code cell tagged ``instructor-only`` appears in the book's own edition only, one tagged
    ``student-only`` in the student edition only (the preface's citation: the book's edition
    gives the address of the book's repository, the student edition none). myst-nb gives each
    cell's container the class ``tag_<tag>``.
    """

    default_priority = 5

    def apply(self, **kwargs) -> None:
        other = "tag_instructor-only" if self.config.hide_solutions else "tag_student-only"
        for node in list(self.document.findall(nodes.container)):
            if other in node.get("classes", []) and node.parent is not None:
                node.parent.remove(node)


def point_download_at_solution_free_notebook(app, pagename, templatename, context, doctree):
    """In the student edition, the page's download button offers the solution-free notebook.

    With ``html_copy_source`` off the theme's "download source" entry points at a missing
    ``_sources/``; it is pointed at ``notebooks/NAME.ipynb`` when that notebook was exported,
    and dropped otherwise."""
    if not app.config.hide_solutions:
        return
    name = pagename.rsplit("/", 1)[-1] + ".ipynb"
    exported = any((Path(folder) / "notebooks" / name).is_file() for folder in app.config.html_extra_path)
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        kept = []
        for button in group.get("buttons", []):
            if button.get("label") in ("download-source-button", "download-notebook-button"):
                if not exported:
                    continue
                button = {**button, "url": context["pathto"](f"notebooks/{name}", 1), "text": ".ipynb",
                          "tooltip": "Download this chapter as a notebook without solutions"}
            kept.append(button)
        group["buttons"] = kept


def tag_instructor_edition(app, config):
    """Set the tag ``instructor`` in the book's own edition, not in the student edition:
    ``{only} instructor`` blocks (the rubric's key steps) appear in the first only."""
    if not config.hide_solutions:
        app.tags.add("instructor")


def setup(app):
    app.setup_extension("sphinx_exercise")
    app.connect("config-inited", tag_instructor_edition)
    app.connect("html-page-context", point_download_at_solution_free_notebook, priority=900)
    app.add_node(hidden_gated_solution)
    app.add_directive("solution-start", _hiding_solution_start_directive(), override=True)
    app.add_transform(RemoveHiddenGatedSolutions)
    app.add_transform(RemoveOtherEditionsCells)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
