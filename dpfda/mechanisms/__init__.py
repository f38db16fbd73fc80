"""Mechanisms and their guarantees.

The Mechanism type, FTP and PTF (Algorithms 1 and 2) on a common grid or on each curve's own
points, B' and m chosen publicly or privately, GDP accounting, OpenDP's samplers, private
covariances and the error bounds of Theorems 10-15.
"""
