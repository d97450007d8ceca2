"""Dynamics against Pinocchio on three 6-7 joint arms and a branched tree, 20 random states each:
M vs crba, C qd vs computeCoriolisMatrix @ qd, g vs computeGeneralizedGravity, inverse dynamics
(both methods) vs rnea, forward dynamics vs aba (tree7 with rotor inertias: Pinocchio's
``model.armature``). Max relative error <= 1e-10.

XLA compilation dominates the runtime: kronjax's side is compiled once per arm for one state (an
unbatched program compiles faster than its ``vmap``; batching is checked in
test_dynamics_principles.py) and called on each."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj

pin = pytest.importorskip("pinocchio")
rtb = pytest.importorskip("roboticstoolbox")

from oracles import from_rtb, random_arm, relative_error, symmetric_from_upper, to_pinocchio  # noqa: E402

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

ARMS = {
    "puma560": lambda: from_rtb(rtb.models.DH.Puma560()),
    "panda": lambda: from_rtb(rtb.models.DH.Panda()),
    "random7": lambda: random_arm(0),
    "tree7": lambda: random_arm(1, parents=(-1, 0, 1, 2, 3, 2, 5), prismatic=(4,), armature=True),  # rotor inertias
}
N_STATES = 20
# random7 is tree7 without the branch (same generator: random axes, placements, full inertias, a
# prismatic joint), and test_dynamics_principles.py checks it against first principles; the PUMA's
# M, C qd, g and rnea against Pinocchio and rtb are in test_real_arms.py (fast tier): slow tier
SLOW = ("random7", "puma560")


@pytest.fixture(scope="module", params=[pytest.param(a, marks=pytest.mark.slow) if a in SLOW else a for a in ARMS])
def arm(request):
    model = ARMS[request.param]()
    rng = np.random.default_rng(42)
    states = [rng.uniform(-2, 2, (N_STATES, model.nv)) for _ in range(4)]

    @jax.jit
    def ours(q, qd, qdd, tau):
        return dict(
            M=kj.mass_matrix(model, q),
            Cqd_truc=kj.coriolis_matrix(model, q, qd, form="truc") @ qd,
            Cqd_kane=kj.coriolis_matrix(model, q, qd, form="kane") @ qd,
            Cqd_tuan=kj.coriolis_matrix(model, q, qd, form="tuan") @ qd,
            Cstar_qdqd=kj.coriolis_star(model, q) @ jnp.kron(qd, qd),
            g=kj.gravity(model, q),
            id_kron=kj.inverse_dynamics(model, q, qd, qdd, method="kron"),
            id_rnea=kj.inverse_dynamics(model, q, qd, qdd, method="rnea"),
            fd=kj.forward_dynamics(model, q, qd, tau),
        )

    values = [ours(*state) for state in zip(*states)]
    return request.param, model, to_pinocchio(model), states, {k: np.stack([v[k] for v in values]) for k in values[0]}


def test_against_pinocchio(arm):
    name, model, pm, (qs, qds, qdds, taus), ours = arm
    data = pm.createData()
    errors = {key: 0.0 for key in ours}
    for s in range(N_STATES):
        q, qd, qdd, tau = qs[s], qds[s], qdds[s], taus[s]
        expected = {
            "M": symmetric_from_upper(pin.crba(pm, data, q)),
            "g": pin.computeGeneralizedGravity(pm, data, q),
            "aba": pin.aba(pm, data, q, qd, tau),
            "rnea": pin.rnea(pm, data, q, qd, qdd),
        }
        cqd = pin.computeCoriolisMatrix(pm, data, q, qd) @ qd
        for key, ref in [
            ("M", expected["M"]),
            ("Cqd_truc", cqd),
            ("Cqd_kane", cqd),
            ("Cqd_tuan", cqd),
            ("Cstar_qdqd", cqd),
            ("g", expected["g"]),
            ("id_kron", expected["rnea"]),
            ("id_rnea", expected["rnea"]),
            ("fd", expected["aba"]),
        ]:
            errors[key] = max(errors[key], relative_error(ours[key][s], ref))
    print(f"\n{name}: max relative errors vs Pinocchio: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) <= 1e-10, errors
