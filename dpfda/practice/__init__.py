"""Your own data.

Public domains and value ranges, and a table of curves to one published release.
"""
