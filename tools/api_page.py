"""Write the book's API reference page, book/api.md, from dpfda.__all__ and the modules' __all__
of both packages: the library dpfda first, then the book's own package dpfda_book.

Run `.venv/bin/python tools/api_page.py` after a public name is added or removed;
tests/test_api_page.py fails while the committed page differs from what this script writes.
The page holds autodoc directives only: the docstrings themselves are read when the book is
built (sphinx.ext.autodoc, napoleon for the numpy-style sections, autosummary tables).
"""

import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "machinery")]

import dpfda  # noqa: E402
from dpfda.maths import spaces  # noqa: E402

GROUPS = [
    ("Releasing a mean curve", ["ReleaseSpec", "FTP", "PTF", "SpecifiedMechanism", "SpecifiedRelease", "SpecError",
                                "CuratorWarning", "Curves"]),
    ("The pipelines step by step", ["ftp", "ptf", "Release", "ftp_sigma", "ptf_sigmas"]),
    ("Mechanisms as objects", ["Mechanism", "ftp_mechanism", "ptf_mechanism"]),
    ("Real data on the paper's terms", ["Domain", "PublicFrame", "legendre_derivative"]),
    # every name of dpfda.maths.spaces.__all__, in its order: a new space needs no edit here
    ("Function spaces and grids", list(spaces.__all__)),
    ("Fitting in the ball", ["fit_ball", "BallLeastSquares", "BallFit"]),
    ("Privacy accounting", ["tradeoff", "compose", "gaussian_sigma", "epsilon_from_mu", "delta_from_mu",
                            "mu_from_epsilon_delta", "laplace_mechanism", "laplace_scale"]),
    ("Errors", ["AssumptionError"]),
]
# Each package's layers (its subpackages), in the order they import each other, and in each
# the modules with their section titles; "" holds a package's top-level modules: the library's
# command line last, the book's settings and tolerances first and its command line last.
LAYERS = {
    "dpfda": [
        ("", [("validation", "Argument checks shared by every module")]),
        ("maths", [("spaces", "Function spaces"),
                   ("curves", "Curves as data"),
                   ("fitting", "Ball-constrained least squares"),
                   ("summation", "Exact sums and their floating-point bounds"),
                   ("rounding", "Tolerances from rounding-error bounds")]),
        ("mechanisms", [("mechanism_type", "The Mechanism type: one type for every mechanism, the noise rule"),
                        ("parts", "The parts of a mechanism: per-curve maps, calibrations, post-processings"),
                        ("ftp_ptf", "FTP and PTF as mechanisms, and their one-call releases"),
                        ("calibration", "The one calibration: sigma, OpenDP's sensitivity, the limits"),
                        ("pipelines", "The two pipelines, stage by stage"),
                        ("release", "The release: its values anywhere, its noise band, its residual off the grid"),
                        ("bands", "The privacy noise of a release, point by point"),
                        ("irregular", "FTP on curves measured at their own points"),
                        ("radius", "Choosing B' publicly or privately"),
                        ("dimension", "Choosing m from a public proxy"),
                        ("covariance", "Beyond the mean: private covariances and principal components"),
                        ("covariance_theory", "Beyond the mean: the covariances' errors in closed form"),
                        ("privacy", "Gaussian differential privacy"),
                        ("secure", "OpenDP's samplers"),
                        ("theory", "The paper's bounds and limits")]),
        ("trust", [("checks", "Argument checks of the audit and of mechanisms built elsewhere"),
                   ("draws", "Many releases of one dataset, for the audit"),
                   ("recompute", "The audit's own recomputation"),
                   ("audit", "Empirical privacy audits")]),
        ("practice", [("specification", "One way to release: a specification, FTP and PTF"),
                      ("realdata", "Real data"),
                      ("reading", "Curves from a CSV file or a DataFrame"),
                      ("diagnostics", "What only the curator sees"),
                      ("publish", "The record published with a release"),
                      ("ledger", "The budget of a data set across releases"),
                      ("covariance_record", "The record published with a private covariance"),
                      ("examples", "Sample files to try a release on")]),
        ("", [("cli.files", "Writing an output file all or nothing"),
              ("cli.parsing", "Command-line parsing: one-line usage errors, integer options"),
              ("cli", "python -m dpfda release")]),
    ],
    "dpfda_book": [
        ("", [("settings", "Settings of the chapters, from the environment"),
              ("montecarlo", "Monte Carlo tolerances and standard errors")]),
        ("mechanisms", [("projections", "A design's projections"),
                        ("whitening", "A design's noise metric and extent"),
                        ("designs", "The design space between PTF and FTP"),
                        ("postprocess", "Post-processing a release"),
                        ("broken", "Mechanisms broken on purpose")]),
        ("simulation", [("models", "The paper's data models"),
                        ("studies", "The paper's simulation studies"),
                        ("seeding", "Random streams of the simulations"),
                        ("engine", "The simulation engine: one loop over mechanisms"),
                        ("schedule", "Planning and running simulations"),
                        ("tabulate", "Results tables of simulations"),
                        ("store", "The results store of the book's build"),
                        ("design_runs", "Monte Carlo over the designs")]),
        ("report", [("style", "One style for every figure"),
                    ("tables", "Tables for readers"),
                    ("study_figures", "The paper's study figures"),
                    ("chapter_figures", "The figures of single chapters"),
                    ("figure_checks", "What a drawn figure gets wrong"),
                    ("explorer", "The interactive ratio figure in a static page"),
                    ("plots", "Every figure and table, from one place"),
                    ("evidence", "Monte Carlo evidence for the chapters' checks"),
                    ("activation_bounds", "PTF's activation bounds from the design"),
                    ("claim_encodings", "Each claim as signed comparisons"),
                    ("claim_registry", "The registry of the paper's claims"),
                    ("claim_labels", "The labels of the verdict matrix"),
                    ("claim_verdicts", "From components to verdicts"),
                    ("law_runs", "The claims under every latent law: draws, pilot, pooling"),
                    ("law_components", "The matrix's components, each standard error taken draw by draw"),
                    ("law_null", "The test of the matrix's test: the whole procedure where the truth is known"),
                    ("claims", "The paper's claims, judged, from one place")]),
        ("teaching", [("sandbox", "A submission's code in a process of its own"),
                      ("judging", "Verdicts from plain numbers: distributions and exact answers"),
                      ("grader", "The assignments' autograder: an otter-grader plugin")]),
        ("", [("interrupt", "Stopping a run cleanly on a signal"),
              ("cli", "python -m dpfda_book reproduce")]),
    ],
}
# Public constants that the docstrings refer to but their module's __all__ leaves out.
EXTRA: dict[str, list[str]] = {"spaces": ["SPACE_FAMILIES"]}
# dpfda.__all__ also names three modules, imported on first use; they get their own sections.
LAZY_MODULES = {"audit", "secure", "theory"}

INTRO = """(api)=
# API reference

Every public name of the library `dpfda` and of the book's own package `dpfda_book`, with its
docstring, generated from the code when the book is built. A practitioner needs only the
library: {ref}`the names it exports <api-top>` come first, grouped by what they are for, and
{ref}`its modules <api-modules>` follow, each with its own names beyond those;
`python -m dpfda release` is described under {ref}`dpfda.cli <api-cli>`, and the chapter
{doc}`release` shows the functions a practitioner needs, in the order they are used.
{ref}`The book's package <api-book>` holds the machinery of the chapters (simulations, claims,
figures, the design space, the mechanisms broken on purpose, `python -m dpfda_book reproduce`);
`pip install .` does not install it.

(api-top)=
## The library `dpfda`

```{eval-rst}
.. automodule:: dpfda
   :no-members:
```
"""

LAZY = """### Modules imported on first use

`dpfda.audit`, `dpfda.secure` and `dpfda.theory` are in `dpfda.__all__` too (the modules
`dpfda.trust.audit`, `dpfda.mechanisms.secure` and `dpfda.mechanisms.theory`); each is imported
when first used, if `import dpfda` has not loaded it (`dpfda.trust.audit` needs scipy, which
`import dpfda` never loads). They are documented with the modules below:
{ref}`audit <api-audit>`, {ref}`secure <api-secure>`, {ref}`theory <api-theory>`.

(api-modules)=
### The modules of `dpfda`
"""

BOOK = """(api-book)=
## The book's package `dpfda_book`

```{eval-rst}
.. automodule:: dpfda_book
   :no-members:
```
"""


def directive(qual: str, obj) -> str:
    """The autodoc directive for one object."""
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return f".. autoexception:: {qual}\n"
        call = vars(obj).get("__call__")
        special = "   :special-members: __call__\n" if call is not None and call.__doc__ else ""
        return f".. autoclass:: {qual}\n   :members:\n{special}"
    if callable(obj):
        return f".. autofunction:: {qual}\n"
    return f".. autodata:: {qual}\n   :no-value:\n"


def block(module: str, names: list[str], objects: dict) -> str:
    """An autosummary table of ``names`` and their directives, in ``module``."""
    table = "".join(f"   {n}\n" for n in names)
    body = "\n".join(directive(f"{module}.{n}", objects[n]) for n in names)
    return (f"```{{eval-rst}}\n.. currentmodule:: {module}\n\n.. autosummary::\n\n{table}```\n\n"
            f"```{{eval-rst}}\n{body}```\n")


def modules(package: str, seen: dict, home: dict, top: set) -> list[str]:
    """The sections of every module of ``package``, layer by layer (``seen``/``home``: names documented)."""
    out = []
    level = "####" if package == "dpfda" else "###"
    for layer, mods in LAYERS[package]:
        prefix = "api-layer" if package == "dpfda" else "api-book-layer"
        if layer:
            out.append(f"({prefix}-{layer})=\n{level} `{package}.{layer}`\n\n"
                       f"```{{eval-rst}}\n.. automodule:: {package}.{layer}\n   :no-members:\n```\n")
        else:  # the settings shared by every layer first, the command line last
            title = "The command line" if mods[-1][0] == "cli" else "Shared by every layer"
            out.append(f"({prefix}-{mods[0][0].replace('.', '-')})=\n{level} {title}\n")
        for short, title in mods:
            name = f"{package}.{layer}.{short}" if layer else f"{package}.{short}"
            mod = importlib.import_module(name)
            own = [n for n in mod.__all__ if n in top and getattr(dpfda, n) is getattr(mod, n)]
            extra = [n for n in mod.__all__ if n not in own] + EXTRA.get(short, [])
            reexported = [n for n in extra if n in seen and seen[n] is getattr(mod, n)]
            extra = [n for n in extra if n not in reexported]
            label = (f"api-{short}" if package == "dpfda" else f"api-book-{short}").replace(".", "-")
            text = (f"({label})=\n{level}# `{name}`: {title}\n\n"
                    f"```{{eval-rst}}\n.. automodule:: {name}\n   :no-members:\n```\n\n")
            if own:
                text += ("Exported by `dpfda` and documented {ref}`above <api-top>`: "
                         + ", ".join(f"{{py:obj}}`~dpfda.{n}`" for n in own) + ".\n\n")
            if reexported:
                text += ("Also importable from here, documented where they are defined: "
                         + ", ".join(f"{{py:obj}}`~{home[n]}.{n}`" for n in reexported) + ".\n\n")
            for n in extra:
                seen.setdefault(n, getattr(mod, n))
                home.setdefault(n, name)
            if extra:
                text += block(name, extra, {n: getattr(mod, n) for n in extra})
            out.append(text)
    return out


def render() -> str:
    """The page's MyST text."""
    top = set(dpfda.__all__)
    listed = [n for _, names in GROUPS for n in names]
    unlisted = top - LAZY_MODULES - set(listed)
    if unlisted:
        raise SystemExit(f"add these names of dpfda.__all__ to a group in GROUPS: {sorted(unlisted)}")
    out = [INTRO]
    for title, names in GROUPS:
        out.append(f"### {title}\n\n" + block("dpfda", names, {n: getattr(dpfda, n) for n in names}))
    out.append(LAZY)
    seen: dict = {}
    home: dict = {}
    out += modules("dpfda", seen, home, top)
    out.append(BOOK)
    out += modules("dpfda_book", seen, home, top)
    return "\n".join(out)


if __name__ == "__main__":
    (ROOT / "book" / "api.md").write_text(render(), encoding="utf-8")
    print("wrote book/api.md")
