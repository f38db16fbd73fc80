"""Mechanisms and their guarantees.

The Mechanism type, FTP and PTF (Algorithms 1 and 2), the designs between them, GDP
accounting, OpenDP's samplers and the error bounds of Theorems 10-15.
"""
