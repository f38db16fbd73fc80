"""The book's figures and claims.

Its figures and tables, Monte Carlo evidence, and the registry of the paper's claims with
their verdicts.
"""
