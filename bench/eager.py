"""One call at a time, outside ``jax.jit``: what a user who calls kronjax like Pinocchio pays per call
(after the first call, which compiles), against Pinocchio's per-call functions from Python.

``python -m bench.eager [--repeats R]``: the Panda, float64, one random state; each row the median
(and range) over ``R`` rounds of :func:`bench._timing.rounds`. Not part of ``python -m bench``:
batched work (``jit`` of ``vmap``) is the library's fast path; this measures the Python and
dispatch overhead around one call.
"""

from __future__ import annotations

import argparse

import numpy as np

from bench import models
from bench._timing import rounds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.eager", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timing rounds per row (default 5)")
    args = parser.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import kronjax as kj

    model = models.panda()
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, model.nv))
    x = [jnp.asarray(a) for a in (q, qd, qdd)]
    rows = {
        "inverse_dynamics": (lambda: kj.inverse_dynamics(model, *x), "rnea"),
        "forward_dynamics": (lambda: kj.forward_dynamics(model, *x), "aba"),
        "mass_matrix": (lambda: kj.mass_matrix(model, x[0]), "crba"),
        "jacobians (all bodies)": (lambda: kj.jacobians(model, x[0]), "computeJointJacobians"),
        "hessians (all bodies)": (lambda: kj.hessians(model, x[0]), "computeJointKinematicHessians"),
        "inverse_dynamics_derivatives": (lambda: kj.inverse_dynamics_derivatives(model, *x), "computeRNEADerivatives"),
        "forward_dynamics_derivatives": (lambda: kj.forward_dynamics_derivatives(model, *x), "computeABADerivatives"),
        "forward_kinematics": (lambda: kj.forward_kinematics(model, x[0]), "forwardKinematics"),
    }
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
        print("Pinocchio is not installed: kronjax's rows only")
    if pin is not None:
        pm = pin.buildModelFromXML(models.panda_urdf())
        pd = pm.createData()

        def pinocchio(name):
            if name == "computeJointKinematicHessians":  # needs the Jacobians first, as kronjax's does
                return lambda: (pin.computeJointJacobians(pm, pd, q), pin.computeJointKinematicHessians(pm, pd, q))
            fn = getattr(pin, name)
            wants = 1 if name in ("crba", "computeJointJacobians", "forwardKinematics") else 3
            return lambda: fn(pm, pd, *(q, qd, qdd)[:wants])

    def stats(fn):
        times = np.array(rounds(lambda: jax.block_until_ready(fn()), repeats=args.repeats)) * 1e6
        return f"{np.median(times):10.1f} us ({times.min():.1f}-{times.max():.1f})"

    print(f"Panda, float64, one state per call, median (range) of {args.repeats} rounds, after the first call")
    for label, (fn, peer) in rows.items():
        line = f"{label:30s} kronjax {stats(fn)}"
        if pin is not None:
            line += f"   pin.{peer} {stats(pinocchio(peer))}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
