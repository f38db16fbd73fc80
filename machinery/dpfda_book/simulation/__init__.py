"""The Monte Carlo study.

Settings and studies, random streams, the one simulation loop, scheduling, tabulation, the
results store and the runs of the designs.
"""
