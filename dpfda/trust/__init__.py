"""Trust.

Empirical audits of the privacy guarantee, computed from first principles (never through the
code they audit).
"""
