"""The command line: argument parsing, rendering and exit codes. The only place that configures logging
and turns errors into exit codes.

Exit codes (every command): 0 clean, 1 findings at or above the threshold (or: no root cause found),
2 usage error, 3 the operation could not run here (missing root/torch, unreadable input).
"""

import argparse
import math

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

__all__ = ["EXIT_FINDINGS", "EXIT_OK", "EXIT_UNAVAILABLE", "EXIT_USAGE", "finite"]


def finite(text: str) -> float:
    """argparse type of a number option: ``inf`` and ``nan`` are refused where a finite number is meant."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value
