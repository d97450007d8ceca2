"""Fingerprints of the programs the hot paths lower to, for refactors that must not move them:

    python -m bench.programs AFTER.json                 # write the fingerprints
    python -m bench.programs AFTER.json BEFORE.json     # and list the programs that differ

``jax.jit(jax.vmap(f)).lower(...)``'s StableHLO text of each operation (inverse and forward
dynamics, M, C*, g, dM/dq, both derivatives, ``jax.grad`` of inverse dynamics, every body's
Jacobians, their time derivatives and Hessians) on the Panda and on the floating-base humanoid
(``tests/data/humanoid.urdf`` with a free-flyer), float64, with symbol names canonicalised and
source locations dropped, hashed. Equal hashes: XLA compiles the same program, so the speed is
unchanged by construction, without a noisy timing; run the old tree with ``PYTHONPATH`` pointing
at it for the other file. Lowering only (no XLA compile): about a minute on 2 cores.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import jax

OPERATIONS = {
    "inverse_dynamics": lambda kj, m, q, v, a: kj.inverse_dynamics(m, q, v, a),
    "forward_dynamics": lambda kj, m, q, v, a: kj.forward_dynamics(m, q, v, a),
    "mass_matrix": lambda kj, m, q, v, a: kj.mass_matrix(m, q),
    "coriolis_star": lambda kj, m, q, v, a: kj.coriolis_star(m, q),
    "gravity": lambda kj, m, q, v, a: kj.gravity(m, q),
    "mass_matrix_derivative": lambda kj, m, q, v, a: kj.mass_matrix_derivative(m, q),
    "inverse_dynamics_derivatives": lambda kj, m, q, v, a: kj.inverse_dynamics_derivatives(m, q, v, a),
    "forward_dynamics_derivatives": lambda kj, m, q, v, a: kj.forward_dynamics_derivatives(m, q, v, a),
    "grad_inverse_dynamics": lambda kj, m, q, v, a: jax.grad(lambda q: (kj.inverse_dynamics(m, q, v, a) ** 2).sum())(q),
    "jacobians": lambda kj, m, q, v, a: kj.jacobians(m, q),
    "jacobians_dot": lambda kj, m, q, v, a: kj.jacobians_dot(m, q, v),
    "hessians": lambda kj, m, q, v, a: kj.hessians(m, q),
}
HUMANOID = Path(__file__).resolve().parent.parent / "tests" / "data" / "humanoid.urdf"


def fingerprint(text: str) -> str:
    """The hash of a lowered program with its symbol names numbered in order of appearance and
    its source locations dropped (a moved or renamed function lowers to the same numbers)."""
    symbols: dict[str, str] = {}
    text = re.sub(r"@([A-Za-z_][\w.$-]*)", lambda m: "@" + symbols.setdefault(m.group(1), f"f{len(symbols)}"), text)
    return hashlib.sha1(re.sub(r"loc\([^)]*\)", "", text).encode()).hexdigest()[:16]


def programs() -> dict[str, str]:
    import jax.numpy as jnp

    import kronjax as kj

    robots = {"panda": kj.models.panda(), "humanoid": kj.load_urdf(str(HUMANOID), floating_base=True)}
    out = {}
    for robot, model in robots.items():
        q, v = kj.neutral(model)[None], jnp.zeros((1, model.nv))
        for name, f in OPERATIONS.items():
            if robot == "humanoid" and name in ("coriolis_star", "mass_matrix_derivative", "hessians"):
                continue  # n^3 outputs of a 37-DoF robot: minutes of lowering, the Panda's cover the code
            lowered = jax.jit(jax.vmap(lambda q, v, a: f(kj, model, q, v, a))).lower(q, v, v)
            out[f"{robot}:{name}"] = fingerprint(lowered.as_text())
    return out


def main(argv: list[str]) -> int:
    jax.config.update("jax_enable_x64", True)
    if not 1 <= len(argv) <= 2:
        print(__doc__)
        return 2
    after = programs()
    Path(argv[0]).write_text(json.dumps(after, indent=1) + "\n")
    if len(argv) == 2:
        before = json.loads(Path(argv[1]).read_text())
        differ = sorted(key for key in after if before.get(key) != after[key])
        print(f"{len(after) - len(differ)} of {len(after)} programs identical; differ: {', '.join(differ) or 'none'}")
    else:
        print(f"{len(after)} programs fingerprinted in {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
