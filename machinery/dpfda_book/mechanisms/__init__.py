"""The book's own mechanisms, beyond the library's FTP and PTF.

The design space between the two pipelines (``designs``, with the noise metric and extent
of a design's set, ``whitening``, its projections, ``projections``, and post-processings
of a release, ``postprocess``), and the mechanisms broken on purpose that the audit must
catch (``broken``).  Each is a :class:`dpfda.Mechanism`; the audit of :mod:`dpfda.trust`
checks them from first principles.
"""
