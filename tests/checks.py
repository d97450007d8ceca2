"""What the tests compare with: the suite's tolerances and its one ``assert_close``.

Tolerances, float64 unless named otherwise:

- ``TOL`` (1e-10): against an independent oracle (Pinocchio, MuJoCo, Robotics Toolbox, automatic
  differentiation of another formulation), for quantities of order one;
- ``EXACT_TOL`` (1e-12): against a closed form of the papers, or two routes through the same
  arithmetic;
- ``FD_TOL`` (1e-7): against central finite differences at step 1e-6 (truncation ~1e-12, round-off
  ~1e-10 relative);
- ``F32_TOL`` (1e-4): a float32 computation against its float64 twin.

A file that needs another keeps it beside the reason (a solver's own precision, a step of its own).
"""

from __future__ import annotations

import numpy as np

TOL = 1e-10
EXACT_TOL = 1e-12
FD_TOL = 1e-7
F32_TOL = 1e-4


def assert_close(actual, expected, what: str = "", tol: float = TOL, relative: bool = False) -> float:
    """Assert ``max |actual - expected| <= tol`` (times ``max(1, max |expected|)`` when
    ``relative``: absolute below magnitude one, relative above), with equal shapes; returns the
    error. ``what`` names the quantity in the message."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if not expected.size:
        return 0.0
    scale = max(1.0, float(np.max(np.abs(expected)))) if relative else 1.0
    err = float(np.max(np.abs(actual - expected)))
    assert err <= tol * scale, f"{what}: max abs error {err:.3e} > {tol:.0e}" + (f" x {scale:.3g}" if relative else "")
    return err
