"""The timing helpers of bench/ (``rounds``, ``best_time``), AOT compilation with its wall time, and the
record every measurement becomes."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any


def rounds(fn: Callable[[], Any], repeats: int = 3, min_seconds: float = 0.2, max_seconds: float = 30.0) -> list[float]:
    """Mean wall time of one call of ``fn()`` in each of ``repeats`` rounds, each at least
    ``min_seconds`` long (calls repeated within a round), after one warm-up call (its result is
    discarded); fewer rounds (at least one) when a single call is so slow that ``repeats`` rounds
    would exceed ``max_seconds``."""
    start = time.perf_counter()
    fn()
    warm = time.perf_counter() - start
    if warm > 0:
        repeats = max(1, min(repeats, int(max_seconds / warm)))
    out = []
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        out.append(elapsed / calls)
    return out


def best_time(fn: Callable[[], Any], repeats: int = 3, min_seconds: float = 0.2, max_seconds: float = 30.0) -> float:
    """Best mean wall time of one call of ``fn()`` over ``repeats`` rounds, each at least
    ``min_seconds`` long (calls repeated within a round).

    One warm-up call runs first (its result is discarded). When a single call is so slow that
    ``repeats`` rounds would exceed ``max_seconds``, fewer rounds run (at least one).
    """
    return min(rounds(fn, repeats, min_seconds, max_seconds))


def compile_split(fn: Callable, *args) -> tuple[Any, dict[str, float]]:
    """``jax.jit(fn)`` lowered and compiled for ``args`` (arrays, or ``jax.ShapeDtypeStruct`` shapes
    where only the compilation is measured) ahead of time: ``(compiled, {"trace_lower_s": ...,
    "xla_compile_s": ...})``, tracing with lowering and XLA's compilation timed apart."""
    import jax

    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    traced = time.perf_counter()
    compiled = lowered.compile()
    return compiled, {"trace_lower_s": traced - start, "xla_compile_s": time.perf_counter() - traced}


def compile_jit(fn: Callable, *args):
    """``jax.jit(fn)`` lowered and compiled for ``args`` ahead of time: ``(compiled, seconds)``,
    the seconds covering tracing, lowering and XLA compilation."""
    compiled, split = compile_split(fn, *args)
    return compiled, sum(split.values())


def median_fields(times: list[float]) -> dict:
    """Record fields of per-call times: the median, and the range in ``extra``."""
    extra = {"seconds_per_call_range": [float(min(times)), float(max(times))], "rounds": len(times)}
    return {"seconds_per_call": float(statistics.median(times)), "extra": extra}


def outputs_alone(fn: Callable, *sample) -> Callable:
    """A function of one sample that only writes new arrays of ``fn``'s output shapes and dtypes at
    ``sample`` (each filled with the sample's first input's first number): what a JAX function
    pays under ``vmap`` for its outputs alone. At batch 10^4 a new output is fresh memory at each
    call (tens of MB: glibc maps it anew), and its first touch (page faults, pages zeroed by the
    kernel) costs more than the writes themselves; Pinocchio's per-call loop writes into the same
    buffers at every call."""
    import jax
    import jax.numpy as jnp

    shapes = jax.eval_shape(fn, *sample)

    def write(*sample):
        value = sample[0].ravel()[0]
        return jax.tree.map(lambda s: jnp.full(s.shape, value, s.dtype), shapes)

    return write


def time_compiled(fn: Callable, args: tuple, timing: dict) -> tuple[dict, float, Any]:
    """``jax.jit(fn)`` compiled for ``args`` and timed over rounds: ``(record fields of
    :func:`median_fields` with :func:`compile_split`'s two times in ``extra``, compile seconds, output)``."""
    import jax

    compiled, split = compile_split(fn, *args)
    out = jax.block_until_ready(compiled(*args))
    fields = median_fields(rounds(lambda: jax.block_until_ready(compiled(*args)), **timing))
    fields["extra"].update(split)
    return fields, sum(split.values()), out


def time_jax(fn: Callable, args: tuple, timing: dict) -> tuple[float, float, Any]:
    """Compile ``fn`` for ``args`` and time a call: ``(seconds per call, compile seconds, output)``.
    ``timing``: keyword arguments of :func:`best_time`."""
    import jax

    compiled, compile_s = compile_jit(fn, *args)
    out = jax.block_until_ready(compiled(*args))
    per_call = best_time(lambda: jax.block_until_ready(compiled(*args)), **timing)
    return per_call, compile_s, out


@dataclasses.dataclass
class Record:
    """One measurement: an operation of one library at one batch size and precision."""

    operation: str  # "inverse_dynamics", "forward_dynamics", "coriolis", "scaling", "compile"
    library: str  # "kronjax", "pinocchio", "adam", "jaxsim", "mjx"
    method: str  # e.g. "rnea", "kron", "rneaInParallel(2)", "coriolis_star"
    batch: int
    precision: str  # "float64" / "float32"
    seconds_per_call: float | None = None
    compile_s: float | None = None
    rel_err: float | None = None  # max relative error against Pinocchio on the same samples
    n_dof: int = 7
    model: str = "panda"
    note: str = ""
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def seconds_per_sample(self) -> float | None:
        return None if self.seconds_per_call is None else self.seconds_per_call / self.batch

    @property
    def samples_per_s(self) -> float | None:
        t = self.seconds_per_sample
        return None if not t else 1.0 / t

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["seconds_per_sample"] = self.seconds_per_sample
        d["samples_per_s"] = self.samples_per_s
        return d
