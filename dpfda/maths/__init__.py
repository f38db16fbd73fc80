"""The paper's mathematics.

Function spaces and grids, least squares in a ball, the generative models of the
simulations, and exact sums with their rounding bounds.
"""
