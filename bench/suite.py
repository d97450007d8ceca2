"""The benchmark's sections (``SECTIONS``; docs/benchmarks/ says what each measures). Each
measurement becomes a :class:`~bench._timing.Record`: every JAX function is ``jax.jit(jax.vmap(f))``
(kronjax: ``jax.jit(kj.chunked_vmap(f))``) compiled ahead of time and timed by
:func:`~bench._timing.best_time`, and compared with Pinocchio on the same samples.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import kronjax as kj

from . import floating, legged, mjcf, models, second_order
from ._timing import Record, best_time, outputs_alone, time_jax
from .peers import Pinocchio, adam_inverse_dynamics, frax_functions, jaxsim_functions, run_module

SECTIONS = (
    "inverse",
    "forward",
    "coriolis",
    "scaling",
    "compile",
    "kinematics",
    "derivatives",
    "kinematics_scaling",
    "floating",
    "mjcf",
    "legged",
    "second_order",
)
# `legged` compiles for most of an hour on 2 cores (the humanoids' derivatives), `second_order` for
# tens of minutes (the humanoids' jax.hessian): run when named only
DEFAULT_SECTIONS = SECTIONS[:-2]


def _memory() -> int:
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@dataclasses.dataclass
class Config:
    batches: tuple[int, ...] = (1, 1_000, 10_000)  # kronjax and Pinocchio inverse dynamics
    big: int = 10_000  # the batch of the peers, forward dynamics, Coriolis, derivatives and float32
    scaling_n: tuple[int, ...] = (6, 12, 24, 48)
    scaling_rnea_batch: int = 1024  # rnea and jacobians at every n (O(n) and O(n^2) memory a sample)
    scaling_work: int = 2**22  # C*, kron and hessians at n: batch clip(scaling_work // n^3, 16, 1024)
    chain_n: int = 30  # the long chain of the compile-time section
    peers: bool = True
    float32: bool = True
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    check: int = 64  # leading samples compared with Pinocchio
    timing: dict = dataclasses.field(default_factory=lambda: {"repeats": 3, "min_seconds": 0.2, "max_seconds": 20.0})
    mjx_probe: int = 100  # MJX is timed at this batch first; kept when a call at `big` would be slow
    mjx_max_call_s: float = 20.0
    threads: int = 2  # Pinocchio's *InParallel
    legged_batch: int = 10_000  # section legged
    legged_robots: tuple[str, ...] = (*legged.ROBOTS, *legged.COMPILE_ONLY)
    second_order_batch: int = 10_000  # section second_order, where its four tensors fit in:
    second_order_memory: int = 2**30  # bytes, the tensors of one call (second_order.batch_for)
    second_order_robots: tuple[str, ...] = tuple(second_order.ROBOTS)
    second_order_timeout: float = 1200.0  # seconds of one kronjax row's process (compilation included)
    second_order_process_memory: int = dataclasses.field(default_factory=lambda: _memory() // 2)  # its address space

    @classmethod
    def quick(cls, **changes) -> Config:
        """A smoke run: small batches, n up to 24, short timing rounds."""
        base = dict(
            batches=(1, 100),
            big=100,
            scaling_n=(6, 12, 24),
            scaling_rnea_batch=128,
            scaling_work=2**18,
            check=16,
            timing={"repeats": 2, "min_seconds": 0.05, "max_seconds": 5.0},
            mjx_probe=20,
            mjx_max_call_s=5.0,
            legged_batch=500,
            second_order_batch=500,
        )
        return cls(**{**base, **changes})

    def scaling_batch(self, n: int) -> int:
        return int(np.clip(self.scaling_work // n**3, 16, 1024))


class Build:
    """A function that :meth:`Suite.jax_record` builds first: a peer's construction, which may fail."""

    def __init__(self, make: Callable):
        self.make = make

    def __call__(self):
        return self.make()


def _kron_rows(a: np.ndarray) -> np.ndarray:
    """Row-wise ``a ⊗ a``."""
    return np.einsum("bi,bj->bij", a, a).reshape(a.shape[0], -1)


def _pieces_error(ref: tuple):
    """``compare`` of a function with several outputs (a tuple, in the order of ``ref``, Pinocchio's
    on the leading samples): the largest of their relative errors."""
    return lambda head: max(models.relative_error(h, r[: len(h)]) for h, r in zip(head, ref))


def _fmt(x, spec: str, none: str = "-") -> str:
    return none if x is None else format(x, spec)


class Suite:
    """Runs the sections of a :class:`Config` and collects their records."""

    def __init__(self, config: Config, peers: dict[str, dict], log: Callable[[str], None] = print):
        self.config, self.peers, self.log = config, peers, log
        self.records: list[Record] = []
        self.timing = config.timing
        self.urdf = models.panda_urdf()
        self.panda = {"float64": models.panda(jnp.float64), "float32": models.panda(jnp.float32)}
        self.n = self.panda["float64"].nv
        size = max(max(config.batches), config.big, config.check)
        self.samples = models.samples(self.panda["float64"], size, seed=0)
        self.pin = Pinocchio(self.urdf, config.threads)
        head = {k: v[: config.check] for k, v in self.samples.items()}
        self.ref = {  # Pinocchio on the leading samples
            "tau": self.pin.rnea(head["q"], head["qd"], head["qdd"]),
            "qdd": self.pin.aba(head["q"], head["qd"], head["tau"]),
            "C": self.pin.coriolis(head["q"], head["qd"]),
        }
        self.ref["Cqd"] = np.einsum("bij,bj->bi", self.ref["C"], head["qd"])
        self._overhead = None

    def available(self, peer: str) -> bool:
        return self.config.peers and self.peers.get(peer, {}).get("available", False)

    @functools.cached_property
    def frax(self) -> dict:
        return frax_functions(self.urdf)

    @staticmethod
    def body_frames(pin: Pinocchio, model, q) -> list[int]:
        """Frames of ``pin`` at ``model``'s body frames (:meth:`~bench.peers.Pinocchio.body_frames`)."""
        rotations, origins = kj.forward_kinematics(model, jnp.asarray(q))
        return pin.body_frames(model.joint_names, np.asarray(rotations), np.asarray(origins), q)

    # ----------------------------------------------------------------------------------------
    # recording
    # ----------------------------------------------------------------------------------------

    def add(self, record: Record) -> Record:
        self.records.append(record)
        us = record.seconds_per_sample
        self.log(
            f"  {record.library:<9} {record.method:<34} {record.model:<8} {record.batch:>7} {record.precision:<7} "
            f"{_fmt(us and us * 1e6, '>11.3f', '          -')} us/sample {_fmt(record.samples_per_s, '>14,.0f', '             -')}/s "
            f"compile {_fmt(record.compile_s, '6.2f', '     -')} s  err {_fmt(record.rel_err, '.1e')}"
            + (f"  [{record.note}]" if record.note else "")
        )
        return record

    def failed(self, exc: BaseException, **fields) -> Record:
        line = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
        self.log("".join(traceback.format_exception(exc, limit=-3)).rstrip())
        return self.add(Record(**fields, note=line))

    def failed_each(self, exc: BaseException, methods: dict[str, str], **fields) -> None:
        """A failed row for each ``operation: method`` of ``methods``."""
        for operation, method in methods.items():
            self.failed(exc, operation=operation, method=method, **fields)

    def jax_record(self, operation, library, method, fn, arrays, batch, precision, compare, model="panda", n_dof=None):
        """Time ``jit(vmap(fn))`` on the first ``batch`` rows of ``arrays`` (for kronjax its batched
        entry point, ``kj.chunked_vmap``, which is one ``vmap`` at these batches); ``compare(head)`` gives
        the relative error of the leading outputs against Pinocchio (``head`` has the structure of
        ``fn``'s output: an array, or a tuple of arrays). ``fn`` may be a :class:`Build`, called
        first (a peer whose construction fails is a failed row)."""
        fields = dict(operation=operation, library=library, method=method, batch=batch, precision=precision)
        fields.update(model=model, n_dof=n_dof or self.n)
        try:
            fn = fn() if isinstance(fn, Build) else fn
            dtype = jnp.float64 if precision == "float64" else jnp.float32
            args = tuple(jnp.asarray(a[:batch], dtype) for a in arrays)
            batched = kj.chunked_vmap(fn) if library == "kronjax" else jax.vmap(fn)
            per_call, compile_s, out = time_jax(batched, args, self.timing)
            leaves = jax.tree.leaves(out)
            note = "" if all(x.dtype == dtype for x in leaves) else f"output is {leaves[0].dtype}"
            head = jax.tree.map(lambda x: np.asarray(x[: min(batch, self.config.check)], float), out)
            return self.add(Record(**fields, seconds_per_call=per_call, compile_s=compile_s, rel_err=compare(head), note=note))
        except Exception as exc:  # one failing measurement must not stop the suite
            return self.failed(exc, **fields)

    def pin_records(self, operation, name, arrays, batches, model="panda", n_dof=None, pin=None, parallel=True):
        """Pinocchio's ``name`` per call from Python (over ``check`` distinct samples), the same less
        the binding overhead (the C++ estimate), and ``nameInParallel`` at each batch > 1."""
        pin = pin or self.pin
        fields = dict(operation=operation, library="pinocchio", precision="float64", model=model, n_dof=n_dof or self.n)
        if self._overhead is None:
            self._overhead = best_time(self.pin.binding_overhead(), **self.timing)
        run, calls = pin.per_call(name, *[a[: self.config.check] for a in arrays])
        per_call = best_time(run, **self.timing) / calls
        out = [
            self.add(Record(**fields, method=f"{name} (per call)", batch=1, seconds_per_call=per_call, rel_err=0.0)),
            # on a loaded machine the overhead (measured once) can exceed a call of a fast
            # function: no estimate then, rather than a time near zero that ratios and fits take at face value
            self.add(
                Record(
                    **fields,
                    method=f"{name} (per call, C++ est.)",
                    batch=1,
                    seconds_per_call=per_call - self._overhead if per_call > self._overhead else None,
                    rel_err=0.0,
                    note=f"less {self._overhead * 1e6:.2f} us binding overhead"
                    + ("" if per_call > self._overhead else ": more than the call, no estimate"),
                )
            ),
        ]
        if not parallel:
            return out
        for batch in [b for b in batches if b > 1]:
            method = f"{name}InParallel({pin.threads})"
            fn = pin.in_parallel(name, *[a[:batch] for a in arrays])
            if fn is None:
                out.append(
                    self.add(Record(**fields, method=method, batch=batch, note=f"pin.{name}InParallel absent in this Pinocchio"))
                )
                continue
            try:  # a future Pinocchio's variant may take other arguments than rnea's and aba's
                out.append(
                    self.add(
                        Record(**fields, method=method, batch=batch, seconds_per_call=best_time(fn, **self.timing), rel_err=0.0)
                    )
                )
            except Exception as exc:
                out.append(self.failed(exc, **fields, method=method, batch=batch))
        return out

    def frax_record(self, operation, method, function, arrays, compare, derivatives=False):
        """frax's ``function`` (of :func:`~bench.peers.frax_functions`), or with ``derivatives``
        its ``jax.jacfwd`` with respect to every argument, float64 at the peers' batch."""
        argnums = tuple(range(len(arrays)))
        fn = Build(lambda: jax.jacfwd(self.frax[function], argnums) if derivatives else self.frax[function])
        return self.jax_record(operation, "frax", method, fn, arrays, self.config.big, "float64", compare)

    # ----------------------------------------------------------------------------------------
    # sections
    # ----------------------------------------------------------------------------------------

    def run(self) -> list[Record]:
        for section in self.config.sections:
            start = time.perf_counter()
            self.log(f"\n== {section} ==")
            try:
                getattr(self, f"section_{section}")()
            except Exception as exc:  # a broken section must not lose the others' results
                self.failed(exc, operation=section, library="-", method=f"section {section}", batch=0, precision="-")
            self.log(f"   ({time.perf_counter() - start:.0f} s)")
        return self.records

    def _tau_error(self, head):
        return models.relative_error(head, self.ref["tau"][: len(head)])

    def section_inverse(self):
        c, s = self.config, self.samples
        arrays = (s["q"], s["qd"], s["qdd"])
        batches = sorted({*c.batches, c.big})  # kronjax always at the peers' batch too
        runs = [(b, "float64") for b in batches] + ([(c.big, "float32")] if c.float32 else [])
        for batch, precision in runs:
            model = self.panda[precision]
            for method in ("rnea", "kron"):
                fn = lambda q, qd, qdd, m=method, model=model: kj.inverse_dynamics(model, q, qd, qdd, method=m)  # noqa: E731
                self.jax_record("inverse_dynamics", "kronjax", method, fn, arrays, batch, precision, self._tau_error)
        self.pin_records("inverse_dynamics", "rnea", arrays, batches)
        if self.available("adam"):
            for precision in ("float64",) + (("float32",) if c.float32 else ()):
                names, dtype = self.panda["float64"].joint_names, jnp.dtype(precision)
                fn = Build(lambda names=names, dtype=dtype: adam_inverse_dynamics(self.urdf, names, dtype))
                self.jax_record("inverse_dynamics", "adam", "M qdd + h", fn, arrays, c.big, precision, self._tau_error)
        if self.available("jaxsim"):
            fn = Build(lambda: jaxsim_functions(self.urdf)[0])
            self.jax_record("inverse_dynamics", "jaxsim", "inverse_dynamics", fn, arrays, c.big, "float64", self._tau_error)
        if self.available("frax"):
            self.frax_record("inverse_dynamics", "rnea", "inverse_dynamics", arrays, self._tau_error)
        if self.available("mjx"):
            self.mjx()

    def mjx(self):
        """MJX in subprocesses (:mod:`bench._mjx`): default XLA flags and ``--xla_cpu_use_fusion_emitters=false``."""
        c = self.config
        variants = [("default XLA flags", False, "float64"), ("no fusion emitters", True, "float64")]
        variants += [("no fusion emitters", True, "float32")] if c.float32 else []
        with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
            urdf, samples = Path(tmp, "panda.urdf"), Path(tmp, "samples.npz")
            urdf.write_text(self.urdf)
            np.savez(samples, **{k: self.samples[k][: c.big] for k in ("q", "qd", "qdd")})
            spec = {"urdf": str(urdf), "samples": str(samples), "batch": c.big, "probe": c.mjx_probe, "timing": self.timing}
            spec.update(max_call_s=c.mjx_max_call_s, check=c.check, out=str(Path(tmp, "result.json")))
            for label, no_fusion, precision in variants:
                fields = dict(operation="inverse_dynamics", library="mjx", method=f"inverse ({label})", precision=precision)
                try:
                    r = run_module("bench._mjx", {**spec, "precision": precision}, no_fusion, tmp)
                except Exception as exc:
                    self.failed(exc, **fields, batch=c.big)
                    continue
                r["extra"] = {**r["extra"], "xla_flags": r["xla_flags"], "dtype": r["dtype"]}
                floating.subprocess_record(self, r, self._tau_error, **fields, batch=r["batch"])

    def section_forward(self):
        c, s = self.config, self.samples
        arrays = (s["q"], s["qd"], s["tau"])
        error = lambda head: models.relative_error(head, self.ref["qdd"][: len(head)])  # noqa: E731
        runs = [(b, "float64") for b in sorted({min(c.batches), c.big})] + ([(c.big, "float32")] if c.float32 else [])
        for batch, precision in runs:
            model = self.panda[precision]
            fn = lambda q, qd, tau, model=model: kj.forward_dynamics(model, q, qd, tau)  # noqa: E731
            self.jax_record("forward_dynamics", "kronjax", "forward_dynamics", fn, arrays, batch, precision, error)
        self.pin_records("forward_dynamics", "aba", arrays, (c.big,))
        if self.available("frax"):
            self.frax_record("forward_dynamics", "forward_dynamics (CRBA + Cholesky)", "forward_dynamics", arrays, error)

    def section_coriolis(self):
        c, s = self.config, self.samples
        qd_head = s["qd"][: c.check]

        def star_error(head):  # C* (qd ⊗ qd) against Pinocchio's C qd
            return models.relative_error(
                np.einsum("bij,bj->bi", head, _kron_rows(qd_head[: len(head)])), self.ref["Cqd"][: len(head)]
            )

        def matrix_error(head):  # C against Pinocchio's C (the same matrix, Truc 52)
            return models.relative_error(head, self.ref["C"][: len(head)])

        def force_error(head):  # C qd: any factorisation of C
            return models.relative_error(np.einsum("bij,bj->bi", head, qd_head[: len(head)]), self.ref["Cqd"][: len(head)])

        for precision in ("float64",) + (("float32",) if c.float32 else ()):
            model = self.panda[precision]
            fn = lambda q, model=model: kj.coriolis_star(model, q)  # noqa: E731
            self.jax_record("coriolis", "kronjax", "coriolis_star", fn, (s["q"],), c.big, precision, star_error)
        model = self.panda["float64"]
        fn = lambda q, qd: kj.coriolis_matrix(model, q, qd)  # noqa: E731
        self.jax_record("coriolis", "kronjax", "coriolis_matrix", fn, (s["q"], s["qd"]), c.big, "float64", matrix_error)
        self.pin_records("coriolis", "computeCoriolisMatrix", (s["q"], s["qd"]), (), parallel=False)
        if self.available("jaxsim"):
            fn = Build(lambda: jaxsim_functions(self.urdf)[1])
            method = "free_floating_coriolis_matrix"
            record = self.jax_record("coriolis", "jaxsim", method, fn, (s["q"], s["qd"]), c.big, "float64", force_error)
            if not record.note.startswith("failed"):
                record.note = (record.note + "; " if record.note else "") + "err of C qd (another factorisation of C)"

    def chain(self, n: int):
        """The scaling sections' random arm of ``n`` joints: ``(model, name, samples, Pinocchio's
        model, leading samples)``."""
        c = self.config
        model = models.random_chain(n, seed=n)
        s = models.samples(model, max(c.scaling_rnea_batch, c.scaling_batch(n), c.check), seed=n)
        return model, f"chain{n}", s, Pinocchio(kj.to_urdf(model), c.threads), {k: v[: c.check] for k, v in s.items()}

    def section_scaling(self):
        c = self.config
        for n in c.scaling_n:
            model, name, s, pin, head = self.chain(n)
            tau_ref = pin.rnea(head["q"], head["qd"], head["qdd"])
            cqd_ref = np.einsum("bij,bj->bi", pin.coriolis(head["q"], head["qd"]), head["qd"])
            tau_error = lambda h, ref=tau_ref: models.relative_error(h, ref[: len(h)])  # noqa: E731

            def star_error(h, ref=cqd_ref, qd=head["qd"]):
                return models.relative_error(np.einsum("bij,bj->bi", h, _kron_rows(qd[: len(h)])), ref[: len(h)])

            arrays = (s["q"], s["qd"], s["qdd"])
            common = dict(precision="float64", model=name, n_dof=n)
            fn = lambda q, model=model: kj.coriolis_star(model, q)  # noqa: E731
            self.jax_record(
                "scaling", "kronjax", "coriolis_star", fn, (s["q"],), c.scaling_batch(n), compare=star_error, **common
            )
            for method, batch in (("rnea", c.scaling_rnea_batch), ("kron", c.scaling_batch(n))):
                fn = lambda q, qd, qdd, m=method, model=model: kj.inverse_dynamics(model, q, qd, qdd, method=m)  # noqa: E731
                self.jax_record(
                    "scaling", "kronjax", f"inverse_dynamics {method}", fn, arrays, batch, compare=tau_error, **common
                )
            for fname, args in (("rnea", arrays), ("computeCoriolisMatrix", (s["q"], s["qd"]))):
                self.pin_records("scaling", fname, args, (), model=name, n_dof=n, pin=pin, parallel=False)

    def section_compile(self):
        """``jax.jit`` of one sample's inverse dynamics (no vmap): tracing and lowering, then XLA's
        compilation, and the size of the optimised HLO (lines), for the Panda and a long chain."""
        c = self.config
        for name, model in (
            ("panda", self.panda["float64"]),
            (f"chain{c.chain_n}", models.random_chain(c.chain_n, seed=c.chain_n)),
        ):
            x = jnp.asarray(models.samples(model, 1, seed=1)["q"][0])
            for method in ("rnea", "kron"):
                fields = dict(operation="compile", library="kronjax", method=f"inverse_dynamics {method}", batch=1)
                fields.update(precision="float64", model=name, n_dof=model.nv)
                try:
                    fn = jax.jit(lambda q, qd, qdd, m=method, model=model: kj.inverse_dynamics(model, q, qd, qdd, method=m))
                    start = time.perf_counter()
                    lowered = fn.lower(x, x, x)
                    traced = time.perf_counter()
                    compiled = lowered.compile()
                    done = time.perf_counter()
                    jax.block_until_ready(compiled(x, x, x))
                    lines = len(compiled.as_text().splitlines())
                    extra = {"trace_lower_s": traced - start, "xla_compile_s": done - traced, "hlo_lines": lines}
                    self.add(Record(**fields, compile_s=done - start, extra=extra))
                except Exception as exc:
                    self.failed(exc, **fields)

    def per_call_sections(self, cases: dict, rows: list, frax_rows: list):
        """The Panda rows of the sections measured per call, float64 and float32 at the peers' batch; Pinocchio
        per call; frax (float64). ``cases``: ``{operation: (arguments, Pinocchio's function timed per
        call, its outputs on the leading samples)}``; ``rows``: ``(operation, method, kronjax
        function, whether the row is its jax.jacfwd w.r.t. every argument)``; ``frax_rows``: the same
        with the names of :func:`~bench.peers.frax_functions`."""
        c = self.config
        for precision in ("float64",) + (("float32",) if c.float32 else ()):
            model = self.panda[precision]
            for operation, method, function, derivatives in rows:
                arrays, _, ref = cases[operation]
                fn = functools.partial(getattr(kj, function), model)
                if derivatives:
                    fn = jax.jacfwd(fn, argnums=tuple(range(len(arrays))))
                self.jax_record(operation, "kronjax", method, fn, arrays, c.big, precision, _pieces_error(ref))
                if method == operation:
                    self.output_floor(operation, fn, arrays, precision)
        for operation, (arrays, name, _) in cases.items():
            self.pin_records(operation, name, arrays, (c.big,))
        if self.available("frax"):
            for operation, method, function, derivatives in frax_rows:
                arrays, _, ref = cases[operation]
                self.frax_record(operation, method, function, arrays, _pieces_error(ref), derivatives)

    def output_floor(self, operation, fn, arrays, precision):
        """The row of a JAX function that only writes new arrays of ``fn``'s output shapes
        (:func:`bench._timing.outputs_alone`): what any JAX function pays at this batch for its
        outputs alone."""
        dtype = jnp.float64 if precision == "float64" else jnp.float32
        write = outputs_alone(fn, *(jnp.asarray(a[0], dtype) for a in arrays))
        method = "writing the outputs alone (new arrays of the same shapes)"
        self.jax_record(operation, "jax", method, write, arrays, self.config.big, precision, lambda head: None)

    def section_kinematics(self):
        """Every body's Jacobians, Hessians and Jacobian time derivatives (``frame="base"``) on the
        Panda, against Pinocchio's LOCAL_WORLD_ALIGNED ones of frames placed at kronjax's body
        frames."""
        s, check = self.samples, self.config.check
        frames = self.body_frames(self.pin, self.panda["float64"], s["q"][0])
        cases = {
            "jacobians": ((s["q"],), "computeJointJacobians", self.pin.jacobians(s["q"][:check], frames)),
            "hessians": ((s["q"],), "computeJointKinematicHessians", self.pin.hessians(s["q"][:check], frames)),
            "jacobians_dot": (
                (s["q"], s["qd"]),
                "computeJointJacobiansTimeVariation",
                self.pin.jacobians_dot(s["q"][:check], s["qd"][:check], frames),
            ),
        }
        self.per_call_sections(
            cases,
            [(operation, operation, operation, False) for operation in cases],
            [
                ("jacobians", "_joint_jacobians (all joints)", "jacobians", False),
                ("jacobians_dot", "_frame_jacobian_and_derivative (each joint)", "jacobians_dot", False),
            ],
        )

    def section_derivatives(self):
        """The derivatives of inverse and forward dynamics on the Panda: kronjax's functions and
        ``jax.jacfwd`` of ``inverse_dynamics`` / ``forward_dynamics``, frax's by
        ``jax.jacfwd``, Pinocchio's analytical ones."""
        c, s = self.config, self.samples
        head = {k: v[: c.check] for k, v in s.items()}
        cases = {
            "inverse_dynamics_derivatives": (
                (s["q"], s["qd"], s["qdd"]),
                "computeRNEADerivatives",
                self.pin.rnea_derivatives(head["q"], head["qd"], head["qdd"]),
            ),
            "forward_dynamics_derivatives": (
                (s["q"], s["qd"], s["tau"]),
                "computeABADerivatives",
                self.pin.aba_derivatives(head["q"], head["qd"], head["tau"]),
            ),
        }
        self.per_call_sections(
            cases,
            [(operation, operation, operation, False) for operation in cases]
            + [
                ("inverse_dynamics_derivatives", "jax.jacfwd(inverse_dynamics)", "inverse_dynamics", True),
                ("forward_dynamics_derivatives", "jax.jacfwd(forward_dynamics)", "forward_dynamics", True),
            ],
            [
                ("inverse_dynamics_derivatives", "jax.jacfwd(rnea)", "inverse_dynamics", True),
                ("forward_dynamics_derivatives", "jax.jacfwd(forward_dynamics)", "forward_dynamics", True),
            ],
        )

    def section_kinematics_scaling(self):
        """Growth with n of kronjax's ``jacobians`` and ``hessians`` (all bodies; the outputs grow as
        n^2 and n^3) against Pinocchio's ``computeJointJacobians`` and
        ``computeJointKinematicHessians`` per call, on the random arms of :meth:`section_scaling`."""
        c = self.config
        for n in c.scaling_n:
            model, name, s, pin, head = self.chain(n)
            frames = self.body_frames(pin, model, s["q"][0])
            common = dict(precision="float64", model=name, n_dof=n)
            for function, pin_name, batch, ref in (
                ("jacobians", "computeJointJacobians", c.scaling_rnea_batch, pin.jacobians(head["q"], frames)),
                ("hessians", "computeJointKinematicHessians", c.scaling_batch(n), pin.hessians(head["q"], frames)),
            ):
                fn = functools.partial(getattr(kj, function), model)
                self.jax_record("scaling", "kronjax", function, fn, (s["q"],), batch, compare=_pieces_error(ref), **common)
                self.pin_records("scaling", pin_name, (s["q"],), (), model=name, n_dof=n, pin=pin, parallel=False)

    def section_floating(self):
        """Inverse and forward dynamics of the floating-base humanoid: :mod:`bench.floating`."""
        floating.section(self)

    def section_mjcf(self):
        """kronjax and MJX on the same MJCF files, armature included: :mod:`bench.mjcf`."""
        mjcf.section(self)

    def section_legged(self):
        """Dynamics, Jacobians and derivatives of legged robots against Pinocchio: :mod:`bench.legged`."""
        legged.section(self)

    def section_second_order(self):
        """Second-order derivatives of inverse dynamics against Pinocchio's C++: :mod:`bench.second_order`."""
        second_order.section(self)
