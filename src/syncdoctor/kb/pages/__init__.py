"""Explanation pages, one module per area (E, H, N, P, W, A, G). Each module registers its rules."""
