"""dpfda_book — the machinery of the book, beside the library :mod:`dpfda`.

Everything the book's chapters need beyond releasing and auditing a private mean curve.  A
practitioner needs only :mod:`dpfda` (``pip install .``); this package imports it, never the
other way round.  It is built in layers, as the library is (``tests/test_architecture.py``
holds the graph and checks it, and that no module takes part in an import cycle); any layer
may import the library and the shared top-level modules, ``settings`` (``DPFDA_QUICK``,
``DPFDA_JOBS``, ``DPFDA_STORE``), ``montecarlo`` (the tolerances the chapters assert with)
and ``interrupt`` (stopping a run cleanly on a signal):

``mechanisms`` — the book's own mechanisms
    ``designs`` (the design space between PTF's box and FTP's ellipsoid, with its
    ``projections`` and the noise metric and extent of a set, ``whitening``),
    ``postprocess`` (post-processings of a release) and ``broken`` (mechanisms broken on
    purpose, which the library's audit must catch).
``simulation`` — the Monte Carlo study (imports ``mechanisms``)
    ``models`` (the paper's data models), ``studies`` (settings and studies), ``seeding``
    (random streams), ``engine`` (the one simulation loop over mechanisms), ``schedule``
    (planning, joblib and Dask), ``tabulate`` (results tables), ``store`` (the book's results
    store), ``design_runs`` (the designs' simulations).
``report`` — the book's figures and claims (imports ``simulation``)
    ``style``, ``tables``, ``study_figures``, ``chapter_figures``, ``figure_checks``,
    ``explorer``, ``plots`` (all of the figures' names from one place), ``evidence`` (Monte
    Carlo checks), ``activation_bounds``, ``claim_encodings``, ``claim_registry``,
    ``claim_labels``, ``claim_verdicts``, ``law_runs``, ``claims`` (all of the claims' names
    from one place).
``cli`` — the book's command line (imports ``simulation`` and ``report``)
    ``python -m dpfda_book reproduce``.
"""

__version__ = "0.1.1"
"""The version of dpfda_book: always dpfda's, which it requires exactly (``tests/test_licence.py``)."""

__all__ = ["__version__"]
