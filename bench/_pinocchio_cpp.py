"""Pinocchio's C++ second-order derivatives of inverse dynamics (``ComputeRNEASecondOrderDerivatives``,
which pin's Python bindings do not expose) as a peer of the benchmark and an oracle of a slow test:
:func:`build` compiles ``bench/cpp/second_order.cpp`` against the pin wheel's headers and libraries,
:func:`second_order` runs it on states in Pinocchio's layout.

What it needs besides pin (whose wheel ships Pinocchio's and boost's headers and its libraries): a
C++17 compiler (``$CXX``, else ``g++``) and two header-only wheels that pin was built with but does
not install, ``cmeel-eigen`` (Eigen 3.4.1, with the unsupported Tensor module) and
``cmeel-urdfdom-headers`` (3.0.0): ``pip install cmeel-eigen cmeel-urdfdom-headers``. Any
``cmeel.prefix`` folder on ``sys.path`` is searched for each (``pip install --target DIR`` then
``PYTHONPATH=DIR`` works too); Eigen also in ``/usr/include/eigen3``. Where one is missing
:func:`build` raises :class:`Unavailable` (callers skip). The flags, and why
``-DEIGEN_MAX_ALIGN_BYTES=16 -DEIGEN_MALLOC_ALREADY_ALIGNED=1`` under ``-march=native``, are in the
source's header comment. One compilation takes about 4 minutes (2 cores, g++ 12); its program is
cached under ``cache_dir`` (default ``$XDG_CACHE_HOME/kronjax/pinocchio_cpp``, else
``~/.cache/kronjax/pinocchio_cpp``) in a folder named by a hash of the source, the flags, the
compiler's version and pin's version.

The tensors, as :func:`second_order` returns them: four ``(k, nv, nv, nv)`` float64 arrays indexed
``[sample, i, j, l]`` = Pinocchio's ``tensor(i, j, l)`` (the program writes Eigen::Tensor's own
column-major storage, ``(i, j, l)`` at ``i + nv j + nv^2 l``; read here in C order as
``[l, j, i]`` and transposed). ``i`` is always the torque's row. With ``dtau_dq``, ``dtau_dv`` and
``M`` those of ``pin.computeRNEADerivatives`` (``M`` from ``pin.crba``, symmetrised) and
``q ⊕ d`` = ``pin.integrate(model, q, d)``, tests/test_pinocchio_cpp.py checks against central
differences (h = 1e-5; Panda fixed base, Unitree G1 with a free-flyer; Talos too by hand), errors
below 5e-10 of each tensor's largest entry:

- ``d2tau_dqdq[:, i, j, l]`` = ``d dtau_dq[i, j] / d q_l`` along ``q ⊕ h e_l``, i.e.
  ``d2/(de dd) tau((q ⊕ e e_l) ⊕ d e_j)`` at 0: ``j`` the inner, ``l`` the outer derivative.
  Symmetric in ``(j, l)`` for a fixed base. With a free-flyer (``q ⊕ d = q exp6(d)`` on SE(3))
  it is not, and that is the chart, not a bug (exp(a) exp(b) = exp(a + b + [a, b]/2 + ...)):
  ``d2tau_dqdq[:, j, l] - d2tau_dqdq[:, l, j] = dtau_dq[:, :6] @ [e_l, e_j]`` for ``j, l < 6``,
  the se(3) bracket ``pin.Motion(e_l).cross(pin.Motion(e_j))`` (linear part first), and 0 in
  every other block (to 4e-14 of 250 on the G1); its symmetric part is the Hessian of
  ``d -> tau(q ⊕ d)`` at 0. A symmetric-Hessian peer (second differences of rnea along
  ``q ⊕ d``, or autodiff in exponential coordinates) matches ``(T + T.swapaxes(-1, -2)) / 2``;
  its free-flyer block differs from Pinocchio's by as much as the tensor's scale.
- ``d2tau_dvdv[:, i, j, l]`` = ``d dtau_dv[i, j] / d v_l`` (symmetric in ``j, l``).
- ``dtau_dqdv[:, i, j, l]`` = ``d dtau_dq[i, j] / d v_l`` = ``d dtau_dv[i, l] / d q_j``
  (``d2 tau_i / (d q_j d v_l)``): the configuration index ``j`` (columns), the velocity index
  ``l`` (pages). This is the header's "d (d tau/dq)/dv, with the outer-most derivative the third
  dimension"; the same header's "v along the columns and q along the pages" is wrong (off by
  the tensor's scale). Free-flyer or not: the chart ``q ⊕ d`` does not depend on ``v``, so the
  two mixed partials agree.
- ``dtau_dadq[:, i, j, l]`` = ``d M[i, j] / d q_l`` (both triangles).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).parent / "cpp" / "second_order.cpp"
# pin's CMake targets pinocchio_headers and pinocchio_parsers (lib/cmake/pinocchio/pinocchioTargets.cmake)
# less PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION; then the alignment that keeps the SSE2 wheel's ABI
DEFINES = (
    "-DNDEBUG",
    "-DEIGEN_MAX_ALIGN_BYTES=16",
    "-DEIGEN_MALLOC_ALREADY_ALIGNED=1",
    "-DPINOCCHIO_WITH_URDFDOM",
    "-DPINOCCHIO_URDFDOM_HEADERS_MAJOR_VERSION=3",
    "-DPINOCCHIO_URDFDOM_HEADERS_MINOR_VERSION=0",
    "-DPINOCCHIO_URDFDOM_HEADERS_PATCH_VERSION=0",
    "-DBOOST_MPL_LIMIT_LIST_SIZE=30",
    "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
    "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS",
    "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
)
FLAGS = ("-std=c++17", "-O3", "-march=native", *DEFINES)
TENSORS = ("d2tau_dqdq", "d2tau_dvdv", "dtau_dqdv", "dtau_dadq")  # the order of the output file
TIMINGS = ("rnea", "rnea_derivatives", "second_order", "second_order_setzero", "aba_derivatives")


class Unavailable(RuntimeError):
    """No compiler, or pin's headers or libraries, Eigen or urdfdom's headers are missing: the
    caller skips."""


def _prefixes() -> list[Path]:
    """Every ``cmeel.prefix`` folder on ``sys.path``, in its order."""
    seen, out = set(), []
    for entry in sys.path:
        prefix = Path(entry or ".") / "cmeel.prefix"
        if prefix.is_dir() and prefix.resolve() not in seen:
            seen.add(prefix.resolve())
            out.append(prefix)
    return out


def _find(what: str, candidates: list[Path], probe: str, hint: str) -> Path:
    for candidate in candidates:
        if (candidate / probe).is_file():
            return candidate
    raise Unavailable(f"{what} not found (looked for {probe} in {[str(c) for c in candidates]}): {hint}")


def _toolchain() -> tuple[str, list[str], list[str]]:
    """``(compiler, include and library flags, version key)``; :class:`Unavailable` when a part is missing."""
    compiler = shutil.which(os.environ.get("CXX", "g++"))
    if compiler is None:
        raise Unavailable(f"no C++ compiler ({os.environ.get('CXX', 'g++')}) on PATH")
    try:
        pin_version = importlib.metadata.version("pin")
    except importlib.metadata.PackageNotFoundError:
        raise Unavailable("pin is not installed: pip install pin") from None
    prefixes = _prefixes()
    pin_prefix = _find(
        "pin's headers and libraries",
        prefixes,
        "include/pinocchio/algorithm/rnea-second-order-derivatives.hpp",
        "pip install pin (a wheel that ships its C++ headers)",
    )
    if not (pin_prefix / "lib" / "libpinocchio_parsers.so").is_file():
        raise Unavailable(f"{pin_prefix}/lib/libpinocchio_parsers.so is missing")
    eigen = _find(
        "Eigen (with its Tensor module)",
        [p / "include" / "eigen3" for p in prefixes] + [Path("/usr/include/eigen3")],
        "unsupported/Eigen/CXX11/Tensor",
        "pip install cmeel-eigen",
    )
    urdf = _find(
        "urdfdom's headers",
        [p / "include" / "urdfdom_headers" for p in prefixes],
        "urdf_model/model.h",
        "pip install cmeel-urdfdom-headers",
    )
    lib = pin_prefix / "lib"
    paths = [f"-I{pin_prefix / 'include'}", f"-I{eigen}", f"-I{urdf}", f"-L{lib}", f"-Wl,-rpath,{lib}"]
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    return compiler, paths, [pin_version, version, str(pin_prefix)]


def build(cache_dir: Path | str | None = None) -> Path:
    """The compiled ``second_order`` program, compiled once per source, flags, compiler and pin
    version into ``cache_dir``; :class:`Unavailable` when the compiler or a header is missing, a
    ``RuntimeError`` with the compiler's output when compiling fails."""
    compiler, paths, versions = _toolchain()
    if cache_dir is None:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        cache_dir = Path(base) / "kronjax" / "pinocchio_cpp"
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), *map(str.encode, (*FLAGS, *paths, *versions))):
        digest.update(part + b"\0")
    target = Path(cache_dir) / digest.hexdigest()[:16] / "second_order"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        out = Path(scratch) / "second_order"
        command = [compiler, *FLAGS, str(SOURCE), "-o", str(out), *paths, "-lpinocchio_parsers", "-lpinocchio_default"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {SOURCE.name} failed:\n{' '.join(command)}\n{done.stderr[-5000:]}")
        os.replace(out, target)  # atomic: a concurrent build of the same key writes the same program
    return target


def run(
    urdf: Path | str,
    free_flyer: bool,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    k: int,
    min_seconds: float = 0.2,
    rounds: int = 5,
    program: Path | None = None,
) -> tuple[dict, tuple[np.ndarray, ...]]:
    """The program's whole report (``nq``, ``nv``, ``n_states``, ``timings_us``: per name ``median``,
    ``min``, ``max`` over ``rounds``) and the four tensors of :func:`second_order`."""
    q, v, a = (np.ascontiguousarray(x, dtype=np.float64) for x in (q, v, a))
    if q.ndim != 2 or v.shape != a.shape or v.shape[0] != q.shape[0]:
        raise ValueError(f"q (N, nq), v and a (N, nv) expected, got {q.shape}, {v.shape}, {a.shape}")
    n, nv = v.shape
    if not 0 <= k <= n:
        raise ValueError(f"k = {k} outside 0..{n}")
    program = program or build()
    with tempfile.TemporaryDirectory() as scratch:
        states, out = Path(scratch) / "states.bin", Path(scratch) / "tensors.bin"
        np.concatenate([q, v, a], axis=1).tofile(states)
        args = [str(urdf), "1" if free_flyer else "0", str(states), str(k), str(out), repr(float(min_seconds)), str(rounds)]
        done = subprocess.run([str(program), *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{program.name} {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        report = json.loads(done.stdout)
        if (report["nq"], report["nv"], report["n_states"]) != (q.shape[1], nv, n):
            raise ValueError(f"the model has nq = {report['nq']}, nv = {report['nv']}; q {q.shape}, v {v.shape} were given")
        raw = np.fromfile(out, dtype=np.float64)
    # C order reads Eigen's column-major (i, j, l) as [l, j, i]
    blocks = raw.reshape(k, len(TENSORS), nv, nv, nv).transpose(1, 0, 4, 3, 2)
    return report, tuple(np.ascontiguousarray(block) for block in blocks)


def second_order(
    urdf: Path | str,
    free_flyer: bool,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    k: int,
    min_seconds: float = 0.2,
) -> tuple[dict[str, float], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Timings and tensors of Pinocchio's C++ on ``N`` states (``q`` ``(N, nq)``, ``v``, ``a``
    ``(N, nv)``, Pinocchio's layout) of the robot ``urdf`` (with a free-flyer root if
    ``free_flyer``): ``(timings, (d2tau_dqdq, d2tau_dvdv, dtau_dqdv, dtau_dadq))``.

    ``timings``: microseconds per call, one thread, the median of 5 rounds each looping over the
    ``N`` states for at least ``min_seconds``, of :data:`TIMINGS`: ``rnea``, ``rnea_derivatives``
    (computeRNEADerivatives), ``second_order`` (ComputeRNEASecondOrderDerivatives with the four
    setZero of its outputs that it requires), ``second_order_setzero`` (those setZero alone),
    ``aba_derivatives`` (computeABADerivatives at ``tau`` = rnea of the state). The tensors: of
    the first ``k`` states, each ``(k, nv, nv, nv)``, indexed as the module docstring says."""
    report, tensors = run(urdf, free_flyer, q, v, a, k, min_seconds)
    return {name: stats["median"] for name, stats in report["timings_us"].items()}, tensors
