"""Logs as robots record them, made into states for the regressor: repeated (stale) rows,
irregular time stamps, a constant delay, the ramps around a periodic excitation. Host-side
NumPy/SciPy in float64, outside ``jit`` (the number of samples changes)."""

from __future__ import annotations

import math
from typing import NamedTuple

import equinox as eqx
import jax
import numpy as np
import scipy.interpolate
import scipy.signal
from jaxtyping import ArrayLike, Bool, Float

from ..chain import Model
from ..dynamics import inverse_dynamics
from ._filtering import LowPass, as_samples


def time_stamps(t) -> np.ndarray:
    """``t`` as float64 ``(N,)``, finite, strictly increasing."""
    t = as_samples(t, "t")
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f"t must be (N,) time stamps in seconds with N >= 2, got shape {t.shape}")
    step = np.diff(t)
    if not np.all(step > 0):
        k = int(np.argmax(~(step > 0))) + 1
        raise ValueError(
            f"time stamps must increase strictly, but t[{k}] = {t[k]!r} after t[{k - 1}] = {t[k - 1]!r}: drop "
            "repeated rows first (repeated_samples(q, t)); a log whose clock goes back (a wrapped or reset "
            "counter) must be unwrapped or split there"
        )
    return t


def sampling_interval(t: np.ndarray) -> float:
    """The nominal interval of jittered time stamps: the median interval, refined as the duration
    over the number of median steps it holds (a lost row's interval counts as two), which averages
    the jitter out where the median alone would keep its sampling error."""
    step = np.diff(t)
    median = float(np.median(step))
    return float((t[-1] - t[0]) / np.sum(np.maximum(np.round(step / median), 1.0)))


def repeated_samples(q: Float[ArrayLike, "N n"], t: Float[ArrayLike, " N"] | None = None) -> Bool[np.ndarray, " N"]:
    """The repeated (stale) rows of a log: a logger that re-sends its last packet writes a row whose
    measured positions equal the previous row's.

    Row ``k > 0`` is repeated when every coordinate of ``q[k]`` equals ``q[k - 1]`` exactly (bit for
    bit: a fresh reading of a moving joint with noise or an encoder step never does) and, when
    ``t`` is given, ``t[k] == t[k - 1]`` too (only packets re-sent with their time stamp). In a run
    of equal rows every row after the first is repeated. Assumes the robot moves: rows of a robot at
    rest are dropped too, which :func:`resample` then fills by interpolating between the rows kept
    (the same constant, but for the cubic's overshoot over a long rest).

    Args:
        q: ``(N, n)`` measured positions, one row per time stamp.
        t: ``(N,)`` time stamps (seconds); given, a row must also repeat its time stamp.

    Returns:
        ``(N,)`` bool, ``True`` at the repeated rows (``mask.sum()`` of them): keep ``~mask``.

    Example:
        Rows 2 and 4 repeat their predecessors:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> q = np.array([[0.0, 1.0], [0.1, 1.0], [0.1, 1.0], [0.2, 1.1], [0.2, 1.1], [0.2, 1.2]])
        >>> mask = kj.identify.repeated_samples(q)
        >>> mask.tolist(), int(mask.sum())
        ([False, False, True, False, True, False], 2)
    """
    q = as_samples(q, "q")
    same = np.zeros(q.shape[0], dtype=bool)
    same[1:] = np.all(q[1:].reshape(q.shape[0] - 1, -1) == q[:-1].reshape(q.shape[0] - 1, -1), axis=1)
    if t is not None:
        t = as_samples(t, "t", q.shape[0])
        same[1:] &= t[1:] == t[:-1]
    return same


def resample(
    t: Float[ArrayLike, " N"],
    x: Float[ArrayLike, "N ..."],
    *,
    rate: float | None = None,
    method: str = "cubic",
    max_gap: float | None = None,
) -> tuple[Float[np.ndarray, " M"], Float[np.ndarray, "M ..."]]:
    """Samples at irregular time stamps, interpolated onto a uniform grid.

    The grid starts at ``t[0]`` and steps by ``1 / rate`` up to ``t[-1]``. ``method="cubic"``
    interpolates with a not-a-knot cubic spline (``scipy.interpolate.make_interp_spline``, ``k=3``;
    for positions, which the filter then differentiates: the error is ``O(h^4)`` for a smooth
    motion, and its derivatives are continuous), ``"linear"`` piecewise linearly (``O(h^2)``, never
    overshoots; for signals with steps). Assumes the time stamps are the instants at which the
    values were measured (a constant offset is a delay: :func:`estimate_delay`), strictly
    increasing (repeated rows dropped first: :func:`repeated_samples`), and no gap longer than
    ``max_gap``: across a gap the interpolant invents the motion, so a longer one is refused (split
    the log there and resample each part).

    Args:
        t: ``(N,)`` time stamps in seconds, strictly increasing.
        x: ``(N, ...)`` the samples (any trailing shape), one row per time stamp.
        rate: the grid's rate in Hz; default the reciprocal of the nominal interval of ``t``: the
            median interval, refined as the duration over the number of median steps it holds.
        method: ``"cubic"`` or ``"linear"``.
        max_gap: the longest interval (seconds) interpolated across; default 5 median intervals.

    Returns:
        ``(t_uniform, x_uniform)``: ``(M,)`` and ``(M, ...)`` float64.

    Raises:
        ValueError: time stamps not strictly increasing, a gap above ``max_gap`` (with its time), or
            shapes that do not match.

    Example:
        A cubic ``x = t^3`` at jittered stamps comes back exactly on the 100 Hz grid:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> t = np.arange(101) / 100 + np.random.default_rng(0).uniform(-2e-3, 2e-3, 101)
        >>> tu, xu = kj.identify.resample(t, t**3, rate=100.0)
        >>> bool(np.allclose(np.diff(tu), 0.01) and np.allclose(xu, tu**3, atol=1e-12))
        True
    """
    t = time_stamps(t)
    x = as_samples(x, "x", t.size)
    if method not in ("cubic", "linear"):
        raise ValueError(f"method must be 'cubic' or 'linear', got {method!r}")
    step = np.diff(t)
    median = float(np.median(step))
    rate = 1.0 / sampling_interval(t) if rate is None else float(rate)
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"rate must be a positive number of Hz, got {rate}")
    max_gap = 5.0 * median if max_gap is None else float(max_gap)
    if step.max() > max_gap:
        k = int(np.argmax(step))
        raise ValueError(
            f"a gap of {step[k]:.6g} s in the time stamps after t[{k}] = {t[k]:.6g} s (longer than max_gap = "
            f"{max_gap:.6g} s; the median interval is {median:.6g} s): split the log at the gap and resample each "
            "part, or pass a larger max_gap if interpolating across it is right"
        )
    count = int(math.floor((t[-1] - t[0]) * rate * (1 + 1e-12))) + 1
    grid = t[0] + np.arange(count) / rate
    spline = scipy.interpolate.make_interp_spline(t, x, k=3 if method == "cubic" and t.size > 3 else 1, axis=0)
    return grid, spline(np.minimum(grid, t[-1]))


def estimate_delay(
    reference: Float[ArrayLike, "N ..."],
    delayed: Float[ArrayLike, "N ..."],
    rate: float,
    *,
    max_delay: float | None = None,
) -> float:
    """The constant delay of one signal behind another, by cross-correlation with sub-sample
    (parabolic) refinement: ``delayed(t) = reference(t - delay)`` (commanded and measured
    positions, or measured torques and those predicted from the measured motion by a nominal
    model).

    Both are sampled uniformly at ``rate`` at the same instants (:func:`resample`) and may differ
    by a gain, an offset and noise. For lags ``k`` within ``max_delay``, the middle part of
    ``delayed`` is correlated with ``reference`` shifted by ``k`` samples, each with its mean
    removed and normalised by the norm of the shifted part (Pearson's correlation per lag, whose
    maximum is at the true lag exactly: no bias from the windows' changing means or energies),
    summed over the columns (one delay for all of them). The peak's three values are fitted by a
    parabola, whose vertex is the sub-sample delay: for signals well below the Nyquist frequency
    the correlation is smooth over a sample and the vertex is within 1e-4 of a sample of the true
    delay without noise (this module's tests; with noise, the statistical error).

    Args:
        reference: ``(N, ...)`` the leading signal.
        delayed: ``(N, ...)`` the lagging one, the same shape.
        rate: the sampling rate in Hz.
        max_delay: the largest ``|delay|`` searched, seconds; default a quarter of the duration.

    Returns:
        The delay in seconds (negative when ``delayed`` leads).

    Example:
        A sum of sines at 500 Hz delayed by 23.4 ms (11.7 samples):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> f = lambda t: np.sin(2 * np.pi * 0.7 * t) + 0.5 * np.sin(2 * np.pi * 1.9 * t + 1.0)
        >>> t = np.arange(5000) / 500.0
        >>> delay = kj.identify.estimate_delay(f(t), f(t - 0.0234), 500.0)
        >>> print(round(delay, 5))
        0.0234
    """
    ref = as_samples(reference, "reference")
    lag = as_samples(delayed, "delayed", ref.shape[0])
    if ref.shape != lag.shape:
        raise ValueError(f"reference and delayed must have the same shape, got {ref.shape} and {lag.shape}")
    n = ref.shape[0]
    ref, lag = ref.reshape(n, -1), lag.reshape(n, -1)
    span = n // 4 if max_delay is None else int(math.ceil(abs(float(max_delay)) * float(rate)))
    if not 1 <= span < n // 2 - 1:
        raise ValueError(f"max_delay of {span} samples needs a log of more than {2 * span + 2} samples, got {n}")
    middle = lag[span : n - span] - lag[span : n - span].mean(axis=0)
    width = middle.shape[0]
    # valid correlation: entry m pairs reference[m + i] with delayed[span + i], a lag of span - m;
    # the middle has mean zero, so the reference windows' means drop out of the numerator
    corr = sum(scipy.signal.correlate(ref[:, j], middle[:, j], mode="valid") for j in range(ref.shape[1]))
    sums = np.cumsum(np.concatenate([np.zeros((1, ref.shape[1])), ref]), axis=0)
    squares = np.cumsum(np.concatenate([[0.0], np.sum(ref**2, axis=1)]))
    window_sums = sums[width:] - sums[: 2 * span + 1]
    energy = squares[width:] - squares[: 2 * span + 1] - np.sum(window_sums**2, axis=1) / width
    norm = np.sqrt(np.maximum(energy, np.finfo(float).tiny))
    score = corr / norm
    m = int(np.argmax(score))
    if m in (0, score.size - 1):
        raise ValueError(f"the correlation peaks at the end of the search (|delay| = {span / rate:g} s): a larger max_delay")
    left, mid, right = score[m - 1 : m + 2]
    vertex = 0.5 * (left - right) / (left - 2 * mid + right)
    return float((span - m - vertex) / rate)


def remove_delay(
    t: Float[ArrayLike, " N"], x: Float[ArrayLike, "N ..."], delay: float
) -> tuple[Float[np.ndarray, "M ..."], Bool[np.ndarray, " N"]]:
    """A signal that lags by ``delay`` seconds, moved back into step: ``x(t + delay)`` at the time
    stamps for which it was recorded (cubic spline between the samples, for a delay that is not a
    whole number of samples), and the mask of those time stamps.

    Args:
        t: ``(N,)`` strictly increasing time stamps in seconds.
        x: ``(N, ...)`` the delayed signal.
        delay: seconds (:func:`estimate_delay`); negative for a signal that leads.

    Returns:
        ``(x_aligned, keep)``: ``(M, ...)`` ``x(t[keep] + delay)`` and the ``(N,)`` bool mask of the
        rows where ``t + delay`` lies within the log; trim the other signals with it (``q[keep]``).

    Example:
        A ramp ``x = t`` delayed by 25 ms (2.5 samples of 100 Hz): 3 rows are lost at the end.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> t = np.arange(100) / 100.0
        >>> aligned, keep = kj.identify.remove_delay(t, t - 0.025, 0.025)
        >>> int((~keep).sum()), bool(np.allclose(aligned, t[keep]))
        (3, True)
    """
    t = time_stamps(t)
    x = as_samples(x, "x", t.size)
    delay = float(delay)
    shifted = t + delay
    keep = (shifted >= t[0]) & (shifted <= t[-1])
    if keep.sum() < 4:
        raise ValueError(f"a delay of {delay:g} s leaves fewer than 4 of the {t.size} samples ({t[-1] - t[0]:g} s)")
    spline = scipy.interpolate.make_interp_spline(t, x, k=3, axis=0)
    return spline(shifted[keep]), keep


def whole_periods(
    t: Float[ArrayLike, " N"],
    period: float,
    q: Float[ArrayLike, "N n"] | None = None,
    *,
    start: float | None = None,
    stop: float | None = None,
    tolerance: float = 0.005,
) -> Bool[np.ndarray, " N"]:
    """The rows of a log that cover whole periods of a periodic excitation, its start and end ramps
    left out: what :meth:`FourierTrajectory.fit` and averaging over periods assume.

    Within ``[start, stop)`` (default the whole log), rows from ``start`` on are kept for as many
    whole periods as fit. With ``q``, the window is first narrowed to where the motion repeats:
    ``q(t + period)`` (cubic interpolation) must equal ``q(t)`` within ``tolerance`` times each
    joint's peak-to-peak range; the longest run of such ``t`` (plus the period that follows it) is
    the periodic part, which a ramp from or to rest does not belong to. Assumes the excitation's
    period is known exactly (a wrong one leaves no periodic part: an error says so) and that the
    noise is well below ``tolerance``. A ramp that blends smoothly into the excitation is within
    ``tolerance`` of it over its last part, which is then kept: a smaller ``tolerance`` keeps less
    of it (down to the noise level).

    Args:
        t: ``(N,)`` strictly increasing time stamps, seconds.
        period: the excitation's period in seconds (``FourierTrajectory.period``).
        q: ``(N, n)`` positions, to find the periodic part; ``None``: ``[start, stop)`` as given.
        start: the window's first instant (seconds); default ``t[0]``.
        stop: the window's end (seconds); default just past ``t[-1]``.
        tolerance: with ``q``, the largest mismatch over a period, a fraction of each joint's range.

    Returns:
        ``(N,)`` bool mask of the rows kept: ``t[start <= t < start + k period]`` with ``k`` as large
        as fits.

    Example:
        A 1 s period between ramps of 0.3 s and 0.45 s, sampled at 100 Hz: three whole periods,
        from the end of the first ramp.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> t = np.arange(375) / 100.0
        >>> s = np.clip(t - 0.3, 0.0, 3.0)  # the ramps hold the motion still
        >>> q = np.stack([np.sin(2 * np.pi * s), np.cos(2 * np.pi * s) - 1.0], axis=1)
        >>> keep = kj.identify.whole_periods(t, 1.0, q)
        >>> int(keep.sum()), float(t[keep][0])
        (300, 0.3)
    """
    t = time_stamps(t)
    period = float(period)
    if not (period > 0 and math.isfinite(period)):
        raise ValueError(f"period must be a positive number of seconds, got {period}")
    first = t[0] if start is None else float(start)
    end = t[-1] + 0.5 * float(np.median(np.diff(t))) if stop is None else float(stop)
    if q is not None:
        first, end = _periodic_part(t, as_samples(q, "q", t.size), period, first, end, tolerance)
    count = math.floor((end - first) / period * (1 + 1e-9))
    if count < 1:
        raise ValueError(f"[{first:g}, {end:g}) s holds no whole period of {period:g} s")
    return (t >= first - 1e-9 * period) & (t < first + count * period - 1e-9 * period)


def _periodic_part(t, q, period, first, end, tolerance) -> tuple[float, float]:
    inside = (t >= first) & (t + period <= min(end, t[-1]))
    spline = scipy.interpolate.make_interp_spline(t, q.reshape(t.size, -1), k=3, axis=0)
    spread = np.ptp(q.reshape(t.size, -1), axis=0)
    mismatch = np.max(np.abs(spline(np.where(inside, t + period, t)) - spline(t)) / np.maximum(spread, 1e-300), axis=1)
    good = np.concatenate([[False], inside & (mismatch <= tolerance), [False]])
    edges = np.flatnonzero(np.diff(good.astype(int)))
    if edges.size == 0:
        raise ValueError(
            f"the motion nowhere repeats after {period:g} s within tolerance {tolerance:g}: check the period, "
            "or raise tolerance for noisy positions"
        )
    runs = edges.reshape(-1, 2)
    a, b = runs[np.argmax(runs[:, 1] - runs[:, 0])]
    # the run's last instant is still a period from the end of the periodic part
    return float(t[a]), float(t[b - 1] + period) + 0.5 * float(np.median(np.diff(t)))


class MeasuredStates(NamedTuple):
    """States and torques on a uniform grid, from :func:`preprocess`, with what was done to them.

    Attributes:
        t: ``(M,)`` time stamps, seconds, uniform at ``rate``.
        q, v, vd: ``(M, n)`` filtered positions, velocities and accelerations: the regressor's
            ``q, v, vd``.
        tau: ``(M, n)`` the torques, delay-corrected and filtered like ``q``; ``None`` when not given.
        dropped: the number of repeated rows dropped.
        rate: the grid's rate, Hz.
        cutoff: the filter's cut-off, Hz.
        delay: the delay of the torques behind the motion that was removed, seconds.
        filter: the :class:`LowPass` applied (filter any other signal with it).

    Example:
        See :func:`preprocess`; the fields are read by name:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> t = np.arange(2000) / 500.0
        >>> log = kj.identify.preprocess(t, np.stack([np.sin(t), np.cos(t)], axis=1), cutoff=5.0)
        >>> log.q.shape == log.vd.shape, log.tau is None, log.rate, log.cutoff
        (True, True, 500.0, 5.0)
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    vd: np.ndarray
    tau: np.ndarray | None
    dropped: int
    rate: float
    cutoff: float
    delay: float
    filter: LowPass


def preprocess(
    t: Float[ArrayLike, " N"],
    q: Float[ArrayLike, "N n"],
    *,
    v: Float[ArrayLike, "N n"] | None = None,
    tau: Float[ArrayLike, "N n"] | None = None,
    rate: float | None = None,
    cutoff: float | None = None,
    bandwidth: float | None = None,
    order: int = 4,
    method: str = "butterworth",
    delay: float | None = 0.0,
    model: Model | None = None,
    max_gap: float | None = None,
    drop_repeated: bool = True,
    edge: float | None = None,
) -> MeasuredStates:
    """A measured log made into states for identification: ``q, v, vd`` and ``tau`` on a uniform
    grid, filtered alike, ready for ``regressor(model, q, v, vd)`` and the torques ``tau``.

    The steps, in this order (each one is also a function of its own):

    1. drop the repeated (stale) rows: every coordinate of ``q`` equal to the previous row's
       (:func:`repeated_samples`; ``drop_repeated=False`` keeps them);
    2. resample every signal onto a uniform grid at ``rate`` by a cubic spline (:func:`resample`;
       gaps longer than ``max_gap`` refused);
    3. remove the delay of the torques behind the motion (:func:`remove_delay`): ``delay`` seconds,
       or, with ``delay=None``, the delay estimated (:func:`estimate_delay`) between the torques and
       those a nominal ``model`` predicts from the filtered motion
       (``inverse_dynamics(..., passive=True)``: its parameters may be rough, only the shape of the
       torque matters); the rows left without a partner are trimmed;
    4. filter ``q`` and ``tau`` (and a measured ``v``) with the same zero-phase :class:`LowPass`;
    5. differentiate: ``v`` and ``vd`` from the filtered ``q`` (or, when ``v`` is given, ``vd``
       from the filtered ``v``); then ``edge`` seconds are cut at both ends, where the filter's
       padding shows.

    The cut-off follows the rule of thumb of robot identification (Gautier 1997; Khalil and Dombre
    2002, ch. 12): 10 times the motion's bandwidth, here the user's ``bandwidth`` (the excitation's
    highest frequency or the servo bandwidth, Hz) or, by default, the frequency below which 99.99 %
    of the power of the (detrended, Hann-windowed) positions lies; at most ``0.4 rate``.

    Args:
        t: ``(N,)`` time stamps in seconds (irregular allowed; equal ones only in repeated rows).
        q: ``(N, n)`` measured positions (rad or m).
        v: ``(N, n)`` measured velocities, used instead of differentiating ``q``; ``None``: from ``q``.
        tau: ``(N, n)`` measured joint torques (N m or N); ``None``: none.
        rate: the grid's rate in Hz; default that of the rows kept, as in :func:`resample`.
        cutoff: the filter's cut-off in Hz; default 10 times ``bandwidth``.
        bandwidth: the motion's bandwidth in Hz for the default cut-off; default estimated from ``q``.
        order: the Butterworth filter's order (:class:`LowPass`).
        method: ``"butterworth"`` or ``"savgol"`` (:class:`LowPass`).
        delay: the delay of ``tau`` behind ``q`` in seconds; ``None``: estimated with ``model``.
        model: a nominal :class:`~kronjax.chain.Model`, needed for ``delay=None``.
        max_gap: as in :func:`resample`.
        drop_repeated: drop the repeated rows of step 1.
        edge: seconds cut at each end after filtering; default ``1 / cutoff``.

    Returns:
        A :class:`MeasuredStates`: ``t, q, v, vd, tau`` float64 NumPy arrays and what was done
        (``dropped``, ``rate``, ``cutoff``, ``delay``, ``filter``).

    Raises:
        ValueError: mismatched shapes, non-finite entries, time stamps that do not increase (after
            the repeated rows are dropped), gaps, ``delay=None`` without ``model`` or ``tau``, a
            delay without ``tau``.

    Example:
        A pendulum's swing logged at about 500 Hz with jittered stamps and repeated rows; the
        velocity comes back to about 1e-4 rad/s:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> rng = np.random.default_rng(0)
        >>> t = np.arange(3000) / 500.0 + rng.uniform(0.0, 4e-4, 3000)
        >>> q = np.stack([np.sin(1.3 * t), 0.5 * np.cos(2.1 * t)], axis=1)
        >>> stale = np.arange(100, 3000, 20)
        >>> q[stale] = q[stale - 1]  # 145 stale readings
        >>> log = kj.identify.preprocess(t, q, rate=500.0)
        >>> log.dropped, log.cutoff > 0
        (145, True)
        >>> bool(np.allclose(log.v[:, 0], 1.3 * np.cos(1.3 * log.t), atol=1e-4))
        True
    """
    t, q = as_samples(t, "t"), as_samples(q, "q")
    signals = {"q": q} | {name: x for name, x in (("v", v), ("tau", tau)) if x is not None}
    for name, x in signals.items():
        signals[name] = as_samples(x, name, t.shape[0])
        if signals[name].shape != q.shape or q.ndim != 2:
            raise ValueError(f"{name} must have the shape of q, (N, n) = {q.shape} for t {t.shape}, got {signals[name].shape}")
    if delay is None and (model is None or tau is None):
        raise ValueError("delay=None estimates the torques' delay: it needs tau and a nominal model (model=...)")
    if delay is not None and delay != 0.0 and tau is None:
        raise ValueError(f"delay = {delay:g} s is the torques' delay behind q, but no tau was given")
    repeated = repeated_samples(q) if drop_repeated else np.zeros(t.shape, dtype=bool)
    stamps = time_stamps(t[~repeated])
    if rate is None:
        rate = float(np.round(1.0 / sampling_interval(stamps), 9))
    stacked = np.concatenate([x[~repeated] for x in signals.values()], axis=1)
    grid, stacked = resample(stamps, stacked, rate=rate, max_gap=max_gap)
    signals = dict(zip(signals, np.split(stacked, len(signals), axis=1)))
    cutoff = _default_cutoff(signals["q"], rate, bandwidth) if cutoff is None else float(cutoff)
    low = LowPass(rate=rate, cutoff=cutoff, order=order, method=method)
    if delay is None:
        delay = estimate_delay(_predicted_torques(model, low, signals), low(signals["tau"]), rate)
    if delay != 0.0 and "tau" in signals:
        signals["tau"], keep = remove_delay(grid, signals["tau"], delay)
        grid = grid[keep]
        signals |= {name: x[keep] for name, x in signals.items() if name != "tau"}
    if "v" in signals:
        q_f, (v_f, vd_f, _) = low(signals["q"]), low.derivatives(signals["v"])
    else:
        q_f, v_f, vd_f = low.derivatives(signals["q"])
    tau_f = low(signals["tau"]) if "tau" in signals else None
    cut = int(round((1.0 / cutoff if edge is None else float(edge)) * rate))
    inner = slice(cut, grid.size - cut)
    if grid.size - 2 * cut < 2:
        raise ValueError(f"edge = {cut / rate:g} s at each end leaves no samples of the {grid.size / rate:g} s log")
    return MeasuredStates(
        t=grid[inner],
        q=q_f[inner],
        v=v_f[inner],
        vd=vd_f[inner],
        tau=None if tau_f is None else tau_f[inner],
        dropped=int(repeated.sum()),
        rate=float(rate),
        cutoff=cutoff,
        delay=float(delay),
        filter=low,
    )


def _default_cutoff(q: np.ndarray, rate: float, bandwidth: float | None) -> float:
    """Gautier's rule, 10 times the motion's bandwidth (estimated from ``q`` when not given:
    the frequency below which 99.99 % of the power of its detrended, Hann-windowed samples lies),
    at most ``0.4 rate``."""
    if bandwidth is None:
        x = scipy.signal.detrend(q, axis=0) * np.hanning(q.shape[0])[:, None]
        power = np.abs(np.fft.rfft(x, axis=0)) ** 2
        share = np.cumsum(power, axis=0) / np.maximum(power.sum(axis=0), np.finfo(float).tiny)
        frequencies = np.fft.rfftfreq(q.shape[0], 1.0 / rate)
        bandwidth = float(max(frequencies[np.argmax(share[:, j] >= 0.9999)] for j in range(q.shape[1])))
        bandwidth = max(bandwidth, frequencies[1])
    return min(10.0 * float(bandwidth), 0.4 * rate)


def _predicted_torques(model: Model, low: LowPass, signals: dict) -> np.ndarray:
    """The torques a nominal model predicts from the filtered motion (for the delay's estimate)."""
    q, v, vd = low.derivatives(signals["q"])
    return np.asarray(_inverse_dynamics(model, q, v, vd), dtype=np.float64)


@eqx.filter_jit
def _inverse_dynamics(model: Model, q, v, vd):
    return jax.vmap(lambda q, v, vd: inverse_dynamics(model, q, v, vd, passive=True))(q, v, vd)
