"""Zero-phase low-pass filtering and filtered differentiation of uniformly sampled measurements,
and cubic splines through commanded positions: host-side NumPy/SciPy in float64."""

from __future__ import annotations

import math

import equinox as eqx
import numpy as np
import scipy.interpolate
import scipy.signal
from jaxtyping import ArrayLike, Float

_METHODS = ("butterworth", "savgol")


def as_samples(x, name: str, rows: int | None = None) -> np.ndarray:
    """``x`` as a float64 array of samples along its first axis, every entry finite."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or (rows is not None and x.shape[0] != rows):
        expected = "(N, ...)" if rows is None else f"({rows}, ...) (one row per time stamp)"
        raise ValueError(f"{name} must have shape {expected}, got {x.shape}")
    bad = ~np.isfinite(x.reshape(x.shape[0], -1)).all(axis=1)
    if bad.any():
        raise ValueError(
            f"{name} has non-finite entries (NaN or inf) in {int(bad.sum())} rows, the first at row "
            f"{int(np.argmax(bad))}: drop those rows (with their time stamps) before preprocessing"
        )
    return x


class LowPass(eqx.Module):
    """A zero-phase low-pass filter of measurements sampled at ``rate`` Hz, and the filtered
    derivatives: the one filter for ``q`` and ``tau`` alike.

    Filtering the positions before differentiating them changes their amplitude (and would
    change their phase, were the filter causal); the torques must go through the *same* filter, so
    that the regressor built from the filtered motion and the filtered torques see the same
    attenuation (Gautier's "parallel decimation": the same low-pass on every column of the
    identification model, Gautier 1997; Gautier and Poignet 2001; Khalil and Dombre 2002, ch. 12). Hence one object:
    ``q, v, vd = f.derivatives(q)`` and ``tau = f(tau)``.

    Two methods:

    * ``"butterworth"`` (default): a Butterworth filter of ``order`` with its -3 dB frequency at
      ``cutoff``, run forward and backward (``scipy.signal.butter`` + ``sosfiltfilt``): no phase
      lag, the gain squared (``-6`` dB at ``cutoff``, ``2 order`` poles of roll-off); the signal is
      continued ``2 rate / cutoff`` samples beyond each end by a cubic fitted to its samples there
      (then scipy's odd reflection), so that the ends disturb about ``1 / cutoff`` seconds of the
      derivatives rather than several times that. Derivatives are central differences of the filtered signal
      (``np.gradient``, second order; the second derivative is the gradient of the first): their
      gain ``sin(w h) / (w h)`` is within ``1e-3`` of 1 below ``rate / 40``, far above a cut-off
      chosen by the rule below.
    * ``"savgol"``: Savitzky-Golay (``scipy.signal.savgol_filter``): a least-squares polynomial of
      ``polyorder`` over a window of ``window`` samples, differentiated analytically
      (``deriv=1, 2``). Exact for polynomials up to ``polyorder`` (no bias on slow signals, good
      at the ends), but a soft roll-off with stop-band ripples, so more noise passes above the
      cut-off than with Butterworth. The window is chosen from ``cutoff`` by Schafer's
      approximation of its -3 dB frequency, ``f_c / (rate / 2) = (polyorder + 1) / (3.2 M -
      4.6)`` for a window of ``2 M + 1`` samples (Schafer 2011).

    The cut-off is the user's. The usual rule in robot identification (Gautier 1997; Khalil and
    Dombre 2002, ch. 12): well above the frequencies of the motion, about 10 times the highest
    frequency of the excitation (the highest harmonic of a Fourier excitation) or the joint servo's
    bandwidth, so that the filter leaves the dynamics untouched and removes the noise that
    differentiation amplifies (:func:`preprocess` applies it).

    Attributes:
        rate: sampling rate in Hz (the samples must be uniform: :func:`resample`).
        cutoff: cut-off frequency in Hz, ``0 < cutoff < rate / 2``.
        order: the Butterworth filter's order (each pass).
        method: ``"butterworth"`` or ``"savgol"``.
        polyorder: the Savitzky-Golay polynomial's degree (at least 2 for ``vd``).

    Example:
        A sine of 1 Hz sampled at 1 kHz with noise, filtered at 10 Hz: its derivatives come back
        without phase lag (the analytic ones are ``2 pi cos`` and ``-(2 pi)^2 sin``):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> t = np.arange(4000) / 1000.0
        >>> x = np.sin(2 * np.pi * t) + 1e-4 * np.random.default_rng(0).normal(size=t.size)
        >>> f = kj.identify.LowPass(rate=1000.0, cutoff=10.0)
        >>> x_f, xd, xdd = f.derivatives(x)
        >>> inner = slice(500, -500)  # away from the ends
        >>> print(np.round(np.max(np.abs(xd - 2 * np.pi * np.cos(2 * np.pi * t))[inner]), 2))
        0.0
        >>> print(np.round(np.max(np.abs(xdd + (2 * np.pi) ** 2 * np.sin(2 * np.pi * t))[inner]), 1))
        0.1
        >>> kj.identify.LowPass(rate=1000.0, cutoff=10.0, method="savgol").window  # samples
        129
    """

    rate: float = eqx.field(static=True, converter=float)
    cutoff: float = eqx.field(static=True, converter=float)
    order: int = eqx.field(static=True, default=4, converter=int)
    method: str = eqx.field(static=True, default="butterworth")
    polyorder: int = eqx.field(static=True, default=3, converter=int)

    def __check_init__(self):
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"rate must be a positive number of Hz, got {self.rate}")
        if not 0 < self.cutoff < self.rate / 2:
            raise ValueError(
                f"cutoff must lie strictly between 0 and the Nyquist frequency rate / 2 = {self.rate / 2:g} Hz, "
                f"got {self.cutoff:g} Hz"
            )
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        if self.order < 1 or self.polyorder < 2:
            raise ValueError(f"order must be >= 1 and polyorder >= 2 (for vd), got {self.order} and {self.polyorder}")

    @property
    def window(self) -> int:
        """The Savitzky-Golay window (odd, samples) whose -3 dB frequency is about ``cutoff``."""
        half = ((self.polyorder + 1) * self.rate / (2 * self.cutoff) + 4.6) / 3.2
        return 2 * max(math.ceil(half), self.polyorder // 2 + 1) + 1

    def __call__(self, x: Float[ArrayLike, "N ..."]) -> Float[np.ndarray, "N ..."]:
        """The filtered samples (along the first axis) of ``x`` ``(N, ...)``."""
        x = self._samples(x)
        if self.method == "savgol":
            return scipy.signal.savgol_filter(x, self.window, self.polyorder, axis=0)
        sos = scipy.signal.butter(self.order, self.cutoff, fs=self.rate, output="sos")
        pad = min(math.ceil(2 * self.rate / self.cutoff), x.shape[0])
        padded = scipy.signal.sosfiltfilt(sos, _extrapolated(x, pad), axis=0, padlen=pad)
        return padded[pad : pad + x.shape[0]]

    def derivatives(
        self, x: Float[ArrayLike, "N ..."]
    ) -> tuple[Float[np.ndarray, "N ..."], Float[np.ndarray, "N ..."], Float[np.ndarray, "N ..."]]:
        """``(x, xd, xdd)``: the filtered samples of ``x`` ``(N, ...)`` and their first and second
        time derivatives (units of ``x`` per second and per second squared)."""
        x = self._samples(x)
        if self.method == "savgol":
            w, p, h = self.window, self.polyorder, 1.0 / self.rate
            return tuple(scipy.signal.savgol_filter(x, w, p, deriv=d, delta=h, axis=0) for d in (0, 1, 2))
        smooth = self(x)
        xd = np.gradient(smooth, 1.0 / self.rate, axis=0, edge_order=2)
        return smooth, xd, np.gradient(xd, 1.0 / self.rate, axis=0, edge_order=2)

    def _samples(self, x) -> np.ndarray:
        x = as_samples(x, "the signal")
        # sosfiltfilt pads 3 (2 sections + 1) samples at each end; Savitzky-Golay needs a window
        needed = self.window if self.method == "savgol" else 3 * (2 * ((self.order + 1) // 2) + 1) + 1
        if x.shape[0] < needed:
            raise ValueError(
                f"{x.shape[0]} samples are too few for this filter ({needed} needed): a longer log, or a higher cutoff"
            )
        return x


def _extrapolated(x: np.ndarray, pad: int) -> np.ndarray:
    """``x`` continued ``pad`` samples beyond each end by the cubic fitted (least squares) to its
    ``pad`` samples nearest that end. Filtering runs into the ends; scipy's odd extension alone
    keeps the value and the slope there but flips the curvature, and the filter spreads that kink
    over about ``1 / cutoff`` seconds of the derivatives (0.17 rad/s of error in the velocity of a
    1 rad sine of 0.2 Hz at 500 Hz filtered at 6.7 Hz over the first 0.1 s; 4e-4 with the cubic
    ahead of it)."""
    flat = x.reshape(x.shape[0], -1)
    k = np.arange(pad) / pad
    outside = np.arange(1, pad + 1) / pad
    head = np.polynomial.polynomial.polyfit(k, flat[:pad], 3)
    tail = np.polynomial.polynomial.polyfit(k, flat[-1 : -pad - 1 : -1], 3)
    before = np.polynomial.polynomial.polyval(-outside, head).T[::-1]
    after = np.polynomial.polynomial.polyval(-outside, tail).T
    return np.concatenate([before, flat, after]).reshape(x.shape[0] + 2 * pad, *x.shape[1:])


def spline_derivatives(
    t: Float[ArrayLike, " N"],
    q: Float[ArrayLike, "N n"],
    *,
    at: Float[ArrayLike, " M"] | None = None,
    smoothing: float | None = 0.0,
) -> tuple[Float[np.ndarray, "M n"], Float[np.ndarray, "M n"], Float[np.ndarray, "M n"]]:
    """Positions, velocities and accelerations from a cubic spline through sampled positions: the
    analytic route for a commanded, non-periodic excitation (for a periodic one,
    :meth:`FourierTrajectory.fit`).

    Commanded positions are exact numbers, so the default interpolates them
    (``scipy.interpolate.CubicSpline``, not-a-knot ends): ``q`` is reproduced at the samples and
    ``v``, ``vd`` are the spline's derivatives, continuous, with an error ``O(h^3)`` and ``O(h^2)``
    for a smooth motion sampled every ``h`` seconds. With ``smoothing=None`` a smoothing spline
    whose penalty on ``int vd^2`` is chosen by generalized cross-validation
    (``scipy.interpolate.make_smoothing_spline``, Wahba 1990) goes through noisy samples instead; a
    number is that penalty (scipy's ``lam``). Evaluate at the measured samples' (delay-corrected)
    time stamps to pair the commanded motion with measured torques.

    Args:
        t: ``(N,)`` strictly increasing time stamps in seconds (need not be uniform).
        q: ``(N, n)`` positions (rad or m).
        at: ``(M,)`` the instants at which to evaluate, within ``[t[0], t[-1]]``; default ``t``.
        smoothing: ``0.0`` interpolates; ``None`` smooths with a penalty chosen by cross-validation;
            a positive number is the penalty.

    Returns:
        ``(q, v, vd)``, each ``(M, n)`` float64 (units of ``q``, per second, per second squared).

    Example:
        ``q = sin(t)`` sampled every 50 ms: the spline's derivatives are ``cos(t)`` and
        ``-sin(t)`` to about ``1e-4`` and ``1e-2`` between the samples:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> t = np.arange(0.0, 6.0, 0.05)
        >>> at = np.linspace(1.0, 5.0, 7)
        >>> q, v, vd = kj.identify.spline_derivatives(t, np.sin(t)[:, None], at=at)
        >>> bool(np.allclose(v[:, 0], np.cos(at), atol=1e-4)), bool(np.allclose(vd[:, 0], -np.sin(at), atol=1e-2))
        (True, True)
    """
    t = as_samples(t, "t")
    q = as_samples(q, "q", t.shape[0])
    if t.ndim != 1 or q.ndim != 2:
        raise ValueError(f"t must be (N,) and q (N, n), got {t.shape} and {q.shape}")
    if not np.all(np.diff(t) > 0):
        raise ValueError("t must increase strictly: drop repeated samples first (repeated_samples)")
    at = t if at is None else as_samples(at, "at")
    if at.ndim != 1 or at.min() < t[0] or at.max() > t[-1]:
        raise ValueError(f"at must be (M,) instants within [{t[0]:g}, {t[-1]:g}] s (no extrapolation)")
    if smoothing == 0.0:
        spline = scipy.interpolate.CubicSpline(t, q, axis=0)
        return spline(at), spline(at, 1), spline(at, 2)
    # one spline per joint: each joint's penalty is its own cross-validated choice
    splines = [scipy.interpolate.make_smoothing_spline(t, column, lam=smoothing) for column in q.T]
    return tuple(np.stack([s(at, nu) for s in splines], axis=1) for nu in (0, 1, 2))
