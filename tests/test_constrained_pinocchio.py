"""Constrained dynamics of a spatial closed chain against Pinocchio (independent implementation).

The mechanism: a 7-joint tree with random axes, placements and full inertias, two branches from
the base (R-R-P-R and R-R-R), closed between the ends of the branches (kronjax bodies ``b3`` and
``b6``) by

* a spherical joint: Pinocchio's own ``constraintDynamics`` with a ``CONTACT_3D``
  ``RigidConstraintModel`` between the two joints, placements at the joint's point;
* a weld (6 equations, written by the user with :func:`kronjax.constrained.holonomic`):
  ``constraintDynamics`` with ``CONTACT_6D``;
* a revolute joint: Pinocchio's KKT system assembled here from ``crba``, ``nonLinearEffects``,
  ``getFrameJacobian`` and ``getFrameClassicalAcceleration`` (the acceleration drift), solved with
  numpy.

Every case at ``N_STATES`` random consistent states (``project``ed from random guesses), with random
velocities and torques and gravity. Compared: ``qdd`` and the constraint forces.

Conventions (checked, not assumed: the tests fail on any other sign or frame):

* kronjax: ``M qdd + C qd + g = tau + A^T lambda``; a loop closure's position rows are
  ``d = p_a - p_b`` in the base frame, so ``lambda[:3]`` is the force on body a in the base frame.
* Pinocchio: ``M qdd + nle = tau + J^T lambda_c`` with ``J`` the velocity of contact frame 1
  relative to contact frame 2, so ``lambda_c`` is the (spatial) force on contact frame 1 (body a).
  ``CONTACT_3D`` with ``LOCAL``: expressed in contact frame 1, ``lambda_kj = R_a lambda_c``;
  with ``LOCAL_WORLD_ALIGNED``: ``lambda_kj = lambda_c``. ``CONTACT_6D`` ``LOCAL``:
  ``[f; n]`` in contact frame 1; the weld's rotation rows here are
  ``vee(R_a^T R_c - R_c^T R_a) / 2``, whose rate at the assembled state is
  ``R_a^T (omega_c - omega_a)``, so ``lambda_kj[3:] = -n``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import constrained as kc

pin = pytest.importorskip("pinocchio")

from oracles import SPATIAL_CLOSURE_BODIES, SPATIAL_CLOSURE_SPEC, spatial_joints, symmetric_from_upper, to_pinocchio  # noqa: E402 (after the importorskip above)

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

N_STATES = 4
TOL = 1e-8
A_BODY, B_BODY = SPATIAL_CLOSURE_BODIES  # kronjax bodies closed by the joint (Pinocchio joints 4 and 7)


def spatial_chain(frame=None) -> kj.Model:
    """The open tree of :func:`oracles.spatial_joints`; with ``frame=(R, p)`` a massless fixed
    body ``b6_frame`` on ``b6`` (a copy of ``b3``'s frame at the assembled configuration)."""
    return kj.from_joints(*spatial_joints(frame), gravity=(0.3, -0.2, -9.81))


@pytest.fixture(scope="module")
def setup():
    """The model, an assembled configuration ``q_star`` and the joint's point/axis there."""
    rng = np.random.default_rng(7)
    q_star = rng.uniform(-1.0, 1.0, len(SPATIAL_CLOSURE_SPEC))
    rot, org = (np.asarray(x) for x in spatial_chain().poses(jnp.asarray(q_star)))
    frame = (rot[B_BODY].T @ rot[A_BODY], rot[B_BODY].T @ (org[A_BODY] - org[B_BODY]))
    model = spatial_chain(frame)
    point_a = rng.normal(size=3) * 0.2  # the joint's point in b3's frame
    point_b = frame[1] + frame[0] @ point_a  # the same point in b6's frame at q_star
    axis_a = rng.normal(size=3)
    axis_a /= np.linalg.norm(axis_a)
    axis_b = frame[0] @ axis_a
    guesses = q_star + rng.normal(size=(N_STATES, len(SPATIAL_CLOSURE_SPEC))) * 0.2
    qd_guesses = rng.normal(size=(N_STATES, len(SPATIAL_CLOSURE_SPEC)))
    taus = rng.normal(size=(N_STATES, len(SPATIAL_CLOSURE_SPEC))) * 3.0
    return dict(
        model=model,
        frame=frame,
        point_a=point_a,
        point_b=point_b,
        axis_a=axis_a,
        axis_b=axis_b,
        guesses=guesses,
        qd_guesses=qd_guesses,
        taus=taus,
    )


def solve_batch(model, cons, guesses, qd_guesses, taus):
    """kronjax: project the guesses onto the constraints and solve (Lagrange) at each state."""
    cons = kc.Constraints((cons,))

    @jax.vmap
    def run(q, qd, tau):
        q, qd = kc.project(model, cons, q, qd, iterations=12)
        sol = kc.solve(model, cons, q, qd, tau)
        rot, _ = model.poses(q)
        return dict(
            q=q,
            qd=qd,
            qdd=sol.vd,
            lam=sol.forces,
            gen=sol.generalized_force,
            rot_a=rot[A_BODY],
            phi=jnp.max(jnp.abs(cons.residual(q))),
            v=jnp.max(jnp.abs(cons.velocity_residual(q, qd))),
        )

    args = [jnp.asarray(x) for x in (guesses, qd_guesses, taus)]
    # compiled with XLA's backend optimisations off: compilation is nearly all the time of this
    # file, and the function runs once
    lowered = jax.jit(run).lower(*args)
    try:
        compiled = lowered.compile({"xla_backend_optimization_level": 0})
    except (RuntimeError, ValueError, TypeError):  # an XLA without this debug option
        compiled = lowered.compile()
    out = {k: np.asarray(v) for k, v in compiled(*args).items()}
    assert out["phi"].max() < 1e-12 and out["v"].max() < 1e-12, (out["phi"], out["v"])
    return out


def rel(got, expected) -> float:
    return float(np.max(np.abs(np.asarray(got) - expected)) / max(np.max(np.abs(expected)), 1e-300))


def constraint_dynamics(pm, kind, placements, reference, q, qd, tau):
    """Pinocchio's constrained forward dynamics: ``(qdd, lambda_c)``."""
    data = pm.createData()
    cm = pin.RigidConstraintModel(kind, pm, A_BODY + 1, placements[0], B_BODY + 1, placements[1], reference)
    models = pin.StdVec_RigidConstraintModel()
    models.append(cm)
    datas = pin.StdVec_RigidConstraintData()
    datas.append(cm.createData())
    pin.initConstraintDynamics(pm, data, models, datas)
    settings = pin.ProximalSettings(1e-14, 0.0, 1)  # mu = 0: the exact KKT solution
    qdd = pin.constraintDynamics(pm, data, q, qd, tau, models, datas, settings)
    return np.array(qdd), np.array(data.lambda_c)


def test_spherical_closure_vs_constraint_dynamics(setup):
    """Spherical closure vs Pinocchio's constraintDynamics (CONTACT_3D, in the LOCAL and the
    LOCAL_WORLD_ALIGNED frames): qdd and the force on body a, converted from Pinocchio's contact
    frame to the base frame."""
    s = setup
    model = s["model"]
    cons = kc.loop_closure(model, "b3", s["point_a"], "b6", s["point_b"], "spherical")
    out = solve_batch(model, cons, s["guesses"], s["qd_guesses"], s["taus"])
    pm = to_pinocchio(model)  # Pinocchio joint i + 1 moves kronjax body i (no fixed joint before b6)
    placements = (pin.SE3(np.eye(3), s["point_a"]), pin.SE3(np.eye(3), s["point_b"]))
    errors = {}
    for reference in ("LOCAL", "LOCAL_WORLD_ALIGNED"):
        ref_frame = getattr(pin.ReferenceFrame, reference)
        errors[f"qdd {reference}"] = errors[f"lambda {reference}"] = 0.0
        for k in range(N_STATES):
            qdd, lam_c = constraint_dynamics(
                pm, pin.ContactType.CONTACT_3D, placements, ref_frame, out["q"][k], out["qd"][k], s["taus"][k]
            )
            lam = out["rot_a"][k] @ lam_c if reference == "LOCAL" else lam_c
            errors[f"qdd {reference}"] = max(errors[f"qdd {reference}"], rel(out["qdd"][k], qdd))
            errors[f"lambda {reference}"] = max(errors[f"lambda {reference}"], rel(out["lam"][k], lam))
    print(f"\nspherical (CONTACT_3D): max relative errors vs Pinocchio {errors}")
    assert max(errors.values()) < TOL, errors


def test_weld_vs_constraint_dynamics_6d(setup):
    """A weld closure (6 equations) vs Pinocchio's CONTACT_6D: qdd, force and moment. Its rotation
    rows ``log(R_b^T R_a)`` are minus Pinocchio's (``log(R_a^T R_b)`` to first order), so the
    moment is Pinocchio's with the sign turned."""
    s = setup
    model = s["model"]
    # the same coordinates in b3 and in b6_frame (aligned frames)
    cons = kc.loop_closure(model, A_BODY, s["point_a"], "b6_frame", s["point_a"], "weld")
    out = solve_batch(model, cons, s["guesses"], s["qd_guesses"], s["taus"])
    pm = to_pinocchio(model)
    rot_f, pos_f = s["frame"]
    placements = (pin.SE3(np.eye(3), s["point_a"]), pin.SE3(rot_f, pos_f + rot_f @ s["point_a"]))
    errors = {"qdd": 0.0, "force": 0.0, "moment": 0.0}
    for k in range(N_STATES):
        qdd, lam_c = constraint_dynamics(
            pm, pin.ContactType.CONTACT_6D, placements, pin.ReferenceFrame.LOCAL, out["q"][k], out["qd"][k], s["taus"][k]
        )
        errors["qdd"] = max(errors["qdd"], rel(out["qdd"][k], qdd))
        errors["force"] = max(errors["force"], rel(out["lam"][k][:3], out["rot_a"][k] @ lam_c[:3]))
        errors["moment"] = max(errors["moment"], rel(out["lam"][k][3:], lam_c[3:]))
    print(f"\nweld (CONTACT_6D): max relative errors vs Pinocchio {errors}")
    assert max(errors.values()) < TOL, errors


def test_revolute_closure_vs_pinocchio_kkt(setup):
    """Revolute closure vs the KKT system built from Pinocchio's M, nle, frame Jacobians and
    classical accelerations: rows ``v_a - v_b`` of the joint's point (base frame) and
    ``e_i . (omega_a - omega_b)`` for two unit vectors ``e_i`` normal to the axis carried by body
    a; drift ``-(a_a - a_b)`` and ``-(e_i . (alpha_a - alpha_b) + (omega_a x e_i) . (omega_a -
    omega_b))``. kronjax's rotation rows are other combinations of the same motions, so compared:
    qdd, the force on body a (rows 0-2), the magnitude of the constraint moment and ``A^T lambda``."""
    s = setup
    model = s["model"]
    cons = kc.loop_closure(model, "b3", s["point_a"], "b6", s["point_b"], "revolute", s["axis_a"], axis_b=s["axis_b"])
    out = solve_batch(model, cons, s["guesses"], s["qd_guesses"], s["taus"])
    pm = to_pinocchio(model)
    data = pm.createData()
    ja, jb = A_BODY + 1, B_BODY + 1
    pa, pb = pin.SE3(np.eye(3), s["point_a"]), pin.SE3(np.eye(3), s["point_b"])
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    errors = {"qdd": 0.0, "force": 0.0, "moment_norm": 0.0, "A^T lambda": 0.0}
    for k in range(N_STATES):
        q, qd, tau = out["q"][k], out["qd"][k], s["taus"][k]
        mass = symmetric_from_upper(pin.crba(pm, data, q))
        nle = pin.nonLinearEffects(pm, data, q, qd)
        pin.computeJointJacobians(pm, data, q)
        pin.forwardKinematics(pm, data, q, qd, np.zeros(pm.nv))
        jac_a, jac_b = (pin.getFrameJacobian(pm, data, j, x, world) for j, x in ((ja, pa), (jb, pb)))
        acc_a, acc_b = (pin.getFrameClassicalAcceleration(pm, data, j, x, world) for j, x in ((ja, pa), (jb, pb)))
        omega_a, omega_b = jac_a[3:] @ qd, jac_b[3:] @ qd
        axis = data.oMi[ja].rotation @ s["axis_a"]
        e = np.linalg.svd(axis[None])[2][1:]  # two unit vectors normal to the axis
        rows = np.concatenate([jac_a[:3] - jac_b[:3], e @ (jac_a[3:] - jac_b[3:])])
        drift = np.concatenate(
            [
                -(acc_a.linear - acc_b.linear),
                -(e @ (acc_a.angular - acc_b.angular) + np.cross(omega_a, e) @ (omega_a - omega_b)),
            ]
        )
        kkt = np.block([[mass, -rows.T], [rows, np.zeros((5, 5))]])
        x = np.linalg.solve(kkt, np.concatenate([tau - nle, drift]))
        qdd, mu = x[: pm.nv], x[pm.nv :]
        errors["qdd"] = max(errors["qdd"], rel(out["qdd"][k], qdd))
        errors["force"] = max(errors["force"], rel(out["lam"][k][:3], mu[:3]))
        errors["moment_norm"] = max(errors["moment_norm"], rel(np.linalg.norm(out["lam"][k][3:]), np.linalg.norm(mu[3:])))
        errors["A^T lambda"] = max(errors["A^T lambda"], rel(out["gen"][k], rows.T @ mu))
    print(f"\nrevolute (KKT from Pinocchio): max relative errors {errors}")
    assert max(errors.values()) < TOL, errors
