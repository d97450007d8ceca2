"""kronjax.constrained: loop closures, Pfaffian constraints and the three solvers, against
independent oracles.

* Loop closures (every kind) on a spatial closed chain: the residual after ``project``, checked by
  an independent numpy forward kinematics; ``A`` vs finite differences of the residual; ``Phi_qq``
  vs finite differences of ``A``; ``gamma`` vs finite differences of ``A(q) qd`` along ``qd`` and
  vs ``-Phi_qq (qd ⊗ qd)``; full row rank; the joint's freedoms from first principles (the
  relative motion of the two bodies over the null space of ``A``, by finite differences of the
  numpy kinematics).
* Lagrange vs null space (SVD basis and coordinate partitioning): ``qdd`` and ``lambda``; the
  equations of motion (``kronjax.inverse_dynamics``), ``A qdd = gamma`` and Gauss's principle of
  least constraint (a QP solved with numpy).
* Huang's step vs Lagrange with Baumgarte gains ``1/dt``, ``sqrt(2)/dt``: ``O(dt)``, ``O(dt^2)`` at
  rest; the step satisfies the constraints to ``O(dt^3)``.
* Huang's double pendulum (Fig. 8) in Cartesian coordinates: ``Phi_Q`` vs the rederived ``df/dQ``
  of ``tests/data/huang_double_pendulum_dfdq.json``, the determinant's closed form, the printed
  (39)'s singularity; the constrained dynamics vs the joint-space closed form of
  ``tests/data/huang_double_pendulum.json``; the reactions of a hanging pendulum from statics.
* Pfaffian constraints: a knife edge (closed form), holonomic constraints in Pfaffian form.
* Bad input, redundant constraints, float32, ``jit``/``vmap`` without retracing.
"""

import functools
import itertools
import json
import pathlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import SPATIAL_CLOSURE_BODIES, SPATIAL_CLOSURE_SPEC, spatial_joints

import kronjax as kj
from kronjax import constrained as kc

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

DATA = pathlib.Path(__file__).parent / "data"
DFDQ = json.loads((DATA / "huang_double_pendulum_dfdq.json").read_text())
PENDULUM = json.loads((DATA / "huang_double_pendulum.json").read_text())

A_BODY, B_BODY = SPATIAL_CLOSURE_BODIES


def relerr(got, expected) -> float:
    got, expected = np.asarray(got), np.asarray(expected)
    return float(np.max(np.abs(got - expected)) / max(float(np.max(np.abs(expected))), 1e-300))


# --------------------------------------------------------------------------------------------
# A spatial closed chain and an independent numpy forward kinematics
# --------------------------------------------------------------------------------------------


def numpy_fk(joints, q) -> tuple[list, list]:
    """Body rotations and origins in the base frame, straight from the joint list (Rodrigues)."""
    rots, orgs, k = [], [], 0
    for joint in joints:
        r = np.asarray(joint.rotation, float)
        p = np.asarray(joint.translation, float)
        axis = np.asarray(joint.axis, float) / np.linalg.norm(joint.axis)
        if joint.kind == "R":
            w = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            r = r @ (np.eye(3) + np.sin(q[k]) * w + (1 - np.cos(q[k])) * w @ w)
        elif joint.kind == "P":
            p = p + r @ axis * q[k]
        k += joint.kind != "F"
        if joint.parent >= 0:
            r, p = rots[joint.parent] @ r, orgs[joint.parent] + rots[joint.parent] @ p
        rots.append(r)
        orgs.append(p)
    return rots, orgs


def vee(w):
    return 0.5 * np.array([w[2, 1] - w[1, 2], w[0, 2] - w[2, 0], w[1, 0] - w[0, 1]])


@pytest.fixture(scope="module")
def spatial():
    """The chain with ``b6_frame``, a copy of b3's frame at an assembled configuration
    ``q_star``, so a closure between b3 and b6_frame uses the same point and axis coordinates on
    both sides (the default ``axis_b``)."""
    rng = np.random.default_rng(7)
    q_star = rng.uniform(-1.0, 1.0, len(SPATIAL_CLOSURE_SPEC))
    rots, orgs = numpy_fk(spatial_joints()[0], q_star)
    frame = (rots[B_BODY].T @ rots[A_BODY], rots[B_BODY].T @ (orgs[A_BODY] - orgs[B_BODY]))
    joints, inertials = spatial_joints(frame)
    model = kj.from_joints(joints, inertials, gravity=(0.3, -0.2, -9.81))
    point = rng.normal(size=3) * 0.2
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    return dict(
        model=model,
        joints=joints,
        q_star=q_star,
        point=point,
        axis=axis,
        plane_normal=rots[A_BODY] @ axis,
        guesses=q_star + rng.normal(size=(3, len(SPATIAL_CLOSURE_SPEC))) * 0.15,
        qd_guesses=rng.normal(size=(3, len(SPATIAL_CLOSURE_SPEC))),
    )


def closure(s, kind):
    axis = s["plane_normal"] if kind == "planar_point" else s["axis"]
    return kc.loop_closure(s["model"], "b3", s["point"], "b6_frame", s["point"], kind, axis)


# --------------------------------------------------------------------------------------------
# Loop closures: residual, Jacobian, Hessian, gamma, rank, joint semantics
# --------------------------------------------------------------------------------------------


STENCIL = (np.array([-2.0, -1.0, 1.0, 2.0]), np.array([1.0, -8.0, 8.0, -1.0]) / 12.0)


def fd4(f, x, directions, h=1e-3):
    """Fourth-order central differences of ``f`` at ``x`` along each row of ``directions``
    (``(k, n)``), stacked on a last axis; ``f`` is traced once (vmapped over the stencil points)."""
    steps, weights = (jnp.asarray(a, x.dtype) for a in STENCIL)
    points = x + h * steps[None, :, None] * directions[:, None, :]  # (k, 4, n)
    values = jax.vmap(f)(points.reshape(-1, x.shape[0]))
    values = values.reshape(directions.shape[0], 4, *values.shape[1:])
    return jnp.moveaxis(jnp.tensordot(weights, values, axes=(0, 1)) / h, 0, -1)


def compile_fast(fn, *args):
    """``jax.jit(fn)`` compiled for ``args`` with XLA's backend (LLVM) optimisations off. Nearly all
    the time of these tests is XLA compilation of functions that then run once; this halves it.
    Falls back to the default compilation where the option is unknown."""
    lowered = jax.jit(fn).lower(*args)
    try:
        return lowered.compile({"xla_backend_optimization_level": 0})
    except (RuntimeError, ValueError, TypeError):  # an XLA without this debug option
        return lowered.compile()


def run_once(fn, *args):
    """``jax.jit(fn)(*args)`` (compiled by :func:`compile_fast`)."""
    return compile_fast(fn, *args)(*args)


def map_states(compiled, *args):
    """``compiled`` (a function from :func:`compile_fast`, shared by several tests) called state by
    state over the leading axis of ``args``, results stacked. Used instead of ``vmap`` for the
    planar models with prismatic joints below: with jax/jaxlib 0.10.2,
    ``jit(vmap(kronjax.inverse_dynamics))`` (RNEA) of a 2-3 body tree with a prismatic joint makes
    XLA:CPU abort the process (dot_op_emitter "IsMonotonicWithDim0Major" check failure), batch
    sizes > 1."""
    outs = [compiled(*(jnp.asarray(a[i]) for a in args)) for i in range(len(args[0]))]
    return jax.tree.map(lambda *x: jnp.stack(x), *outs)


def assemble(model, cons, guesses, qd_guesses=None):
    """Project guesses of ``q`` (and ``qd``) onto the constraints (batched)."""
    if qd_guesses is None:
        return run_once(jax.vmap(lambda q: kc.project(model, cons, q, iterations=12)[0]), jnp.asarray(guesses))
    return run_once(
        jax.vmap(lambda q, qd: kc.project(model, cons, q, qd, iterations=12)),
        jnp.asarray(guesses),
        jnp.asarray(qd_guesses),
    )


def _derivatives(cons, q, qd):
    """The code's residual, A, Phi_qq, gamma, with finite-difference counterparts (h = 1e-3)."""
    n = q.shape[0]
    eye = jnp.eye(n, dtype=q.dtype)
    fd_a = fd4(cons.residual, q, eye)  # (m, n)
    fd_da = fd4(cons.jacobian, q, jnp.concatenate([eye, qd[None]]))  # (m, n_j, n_k + 1)
    return dict(
        residual=cons.residual(q),
        a=cons.jacobian(q),
        hessian=cons.hessian(q),
        gamma=cons.bias(q, qd),
        fd_a=fd_a,
        fd_hessian=fd_da[..., :n].reshape(fd_da.shape[0], n * n),
        fd_gamma=-fd_da[..., n] @ qd,  # -(d/ds A(q + s qd)) qd
    )


def relative_motion(s, q):
    """Independent kinematics of the joint between body a = b3 and body c = b6_frame: the relative
    rotation ``R_a^T R_c``, c's joint point seen from a (a's frame) and the point gap
    ``p_a - p_c`` in the base frame."""
    rots, orgs = numpy_fk(s["joints"], q)
    ra, rc = rots[A_BODY], rots[-1]
    gap_world = (orgs[A_BODY] + ra @ s["point"]) - (orgs[-1] + rc @ s["point"])
    return ra.T @ rc, ra.T @ (orgs[-1] + rc @ s["point"] - orgs[A_BODY]), gap_world


def relative_twists(s, q, directions, h=1e-4):
    """For each column ``v`` of ``directions``, by central differences of the numpy kinematics along
    ``v``: the relative angular velocity of c w.r.t. a (a's frame), the velocity of c's point seen
    from a (a's frame) and the rate of the gap (base frame); each ``(3, k)``."""
    rot = relative_motion(s, q)[0]
    out = []
    for v in np.asarray(directions).T:
        plus, minus = relative_motion(s, q + h * v), relative_motion(s, q - h * v)
        rates = [(p - m) / (2 * h) for p, m in zip(plus, minus)]
        out.append(np.concatenate([vee(rates[0] @ rot.T), rates[1], rates[2]]))
    out = np.array(out).T
    return out[:3], out[3:6], out[6:]


KINDS = list(kc.LOOP_CLOSURE_KINDS)


@pytest.fixture(scope="module")
def closures(spatial):
    """Per kind: three configurations assembled by ``project`` and random velocities (gamma is
    defined for all). The derivatives and their finite differences of all five kinds come from one
    program, the closures stacked, at all fifteen states (the kinds share the kinematics of the
    two bodies, which dominates the compilation); each kind's rows at its own states are
    compared."""
    s = spatial
    model = s["model"]
    qs = {kind: np.asarray(assemble(model, kc.Constraints((closure(s, kind),)), s["guesses"])) for kind in KINDS}
    qds = {kind: np.random.default_rng(KINDS.index(kind)).normal(size=qs[kind].shape) for kind in KINDS}
    stacked = kc.Constraints(tuple(closure(s, kind) for kind in KINDS))
    batch = run_once(
        jax.vmap(lambda q, qd: _derivatives(stacked, q, qd)),
        jnp.asarray(np.concatenate([qs[k] for k in KINDS])),
        jnp.asarray(np.concatenate([qds[k] for k in KINDS])),
    )
    rows = np.cumsum([0] + [kc.LOOP_CLOSURE_KINDS[k] for k in KINDS])
    derivatives = {
        kind: {k: np.asarray(v)[3 * i : 3 * i + 3, rows[i] : rows[i + 1]] for k, v in batch.items()}
        for i, kind in enumerate(KINDS)
    }
    return qs, qds, derivatives


@pytest.mark.parametrize("kind", KINDS)
def test_loop_closure(spatial, closures, kind):
    """Every loop-closure kind on the spatial chain, at three configurations assembled by
    ``project``: residual, A, Phi_qq, gamma vs finite differences, rank, and the joint's
    constraints and freedoms from an independent numpy kinematics."""
    s = spatial
    u, n = s["axis"], s["model"].nv
    m = closure(s, kind).n_equations
    assert m == kc.LOOP_CLOSURE_KINDS[kind]
    qs, qds, batch = closures[0][kind], closures[1][kind], closures[2][kind]
    errors = dict.fromkeys(["residual", "A", "hessian", "gamma_fd", "gamma_hessian", "position", "semantics"], 0.0)
    for i, (q, qd) in enumerate(zip(qs, qds)):
        d = {k: v[i] for k, v in batch.items()}
        errors["residual"] = max(errors["residual"], float(np.max(np.abs(d["residual"]))))
        errors["A"] = max(errors["A"], relerr(d["a"], d["fd_a"]))
        errors["hessian"] = max(errors["hessian"], relerr(d["hessian"], d["fd_hessian"]))
        errors["gamma_fd"] = max(errors["gamma_fd"], relerr(d["gamma"], d["fd_gamma"]))
        errors["gamma_hessian"] = max(errors["gamma_hessian"], relerr(d["gamma"], -d["hessian"] @ np.kron(qd, qd)))
        # full row rank at these generic states
        sv = np.linalg.svd(d["a"], compute_uv=False)
        assert sv[-1] > 1e-3 * sv[0], (kind, sv)

        # the joint at position level, from the numpy kinematics
        rel_rot, rel_point, gap = relative_motion(s, q)
        gap_a = rel_point - s["point"]  # c's point relative to a's, in a's frame
        position = {
            "spherical": [gap_a],
            "revolute": [gap_a, np.cross(u, rel_rot @ u)],
            "cylindrical": [np.cross(u, rel_rot @ u), np.cross(u, gap_a)],
            "prismatic": [np.cross(u, gap_a), rel_rot - np.eye(3)],
            "planar_point": [np.cross(s["plane_normal"], gap)],
            "weld": [gap_a, rel_rot - np.eye(3)],
        }[kind]
        errors["position"] = max(errors["position"], max(float(np.max(np.abs(x))) for x in position))

        # the joint's freedoms: relative motions of the two bodies over the null space of A
        omega, vel, gap_rate = relative_twists(s, q, np.eye(n))
        assert np.linalg.matrix_rank(np.vstack([omega, vel]), 1e-6) == 6  # the open tree moves c freely
        omega, vel, gap_rate = relative_twists(s, q, np.linalg.svd(d["a"])[2][m:].T)
        if kind == "spherical":
            locked, free = [vel], omega  # the point is held, all three rotations free
        elif kind == "revolute":
            locked, free = [vel, np.cross(u, omega.T).T], u @ omega  # rotation about u only
        elif kind == "cylindrical":
            locked, free = [np.cross(u, omega.T).T, np.cross(u, vel.T).T], np.stack([u @ omega, u @ vel])
        elif kind == "prismatic":
            locked, free = [omega, np.cross(u, vel.T).T], u @ vel  # translation along u only
        elif kind == "weld":
            locked, free = [omega, vel], np.zeros((1, omega.shape[1]))  # no relative motion: rank 0
        else:
            nw = s["plane_normal"]  # the in-plane gap is held; rotations and the normal gap free
            locked, free = [np.cross(nw, gap_rate.T).T], np.vstack([omega, nw @ gap_rate])
        errors["semantics"] = max(errors["semantics"], max(float(np.max(np.abs(x))) for x in locked))
        assert np.linalg.matrix_rank(np.atleast_2d(free), 1e-6) == 6 - m, kind
    print(f"\n{kind}: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert errors["residual"] < 1e-13 and errors["position"] < 1e-13, errors
    assert max(errors[k] for k in ("A", "hessian", "gamma_fd", "gamma_hessian")) < 1e-9, errors
    assert errors["semantics"] < 1e-7, errors  # central differences with h = 1e-4


def test_axis_b_in_the_frame_of_body_b(spatial, closures):
    """A revolute closure written on b6 itself (its point and axis in b6's frame, ``axis_b``) is the
    same joint as on b6_frame: it holds at the same configurations and its Jacobian has the
    same row space (the 10 stacked rows have rank 5)."""
    s = spatial
    model = s["model"]
    rot_f, pos_f = (np.asarray(x) for x in (model.kinematics.pre_rotation[-1], model.kinematics.pre_translation[-1]))
    direct = kc.loop_closure(
        model, "b3", s["point"], "b6", pos_f + rot_f @ s["point"], "revolute", s["axis"], axis_b=rot_f @ s["axis"]
    )
    via_frame = kc.Constraints((closure(s, "revolute"),))
    q = jnp.asarray(closures[0]["revolute"])  # assembled for via_frame
    both = kc.Constraints((via_frame.parts[0], direct))
    res, a = run_once(jax.vmap(lambda q: (both.residual(q), both.jacobian(q))), q)
    assert float(jnp.max(jnp.abs(res))) < 1e-13  # assembled for one, assembled for the other
    for a_k in np.asarray(a):  # the same five velocity constraints
        sv = np.linalg.svd(a_k, compute_uv=False)
        assert sv[4] > 1e-3 * sv[0] and sv[5] < 1e-12 * sv[0], sv


# --------------------------------------------------------------------------------------------
# Solvers at consistent states
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def states(spatial):
    """Three consistent states of the revolute closure (2 DOF), random velocities and torques."""
    s = spatial
    model = s["model"]
    cons = kc.Constraints((closure(s, "revolute"),))
    rng = np.random.default_rng(5)
    q, qd = assemble(model, cons, s["guesses"], s["qd_guesses"])
    tau = jnp.asarray(rng.normal(size=(3, model.nv)) * 3.0)
    return model, cons, q, qd, tau


def independent_coordinates(a_batch):
    """The n - m coordinates whose complement gives the best-conditioned A_d at every state."""
    m, n = a_batch.shape[1:]
    best = max(
        itertools.combinations(range(n), n - m),
        key=lambda idx: min(np.linalg.svd(a[:, [i for i in range(n) if i not in idx]], compute_uv=False)[-1] for a in a_batch),
    )
    return best


HUANG_DTS = 10.0 ** -np.arange(1.0, 9.01, 0.5)


@pytest.fixture(scope="module")
def solutions(states):
    """At ``states`` as they are, then at rest (qd = 0), one program: Lagrange, null space (SVD
    basis) and null space (coordinate partitioning), with what the oracles need (M, the bias
    forces, gamma, A, the EOM residual); and at each step size of ``HUANG_DTS``, Huang's
    solution, Lagrange with Baumgarte gains ``1/dt``, ``sqrt(2)/dt``, the constraint residual after
    Huang's step and the residual of Huang's equations of motion."""
    model, cons, q, qd, tau = states
    q, qd, tau = jnp.concatenate([q, q]), jnp.concatenate([qd, 0 * qd]), jnp.concatenate([tau, tau])

    def kinematics(q, qd):
        return cons.residual(q), cons.velocity_residual(q, qd), cons.jacobian(q)

    residual, velocity, a_batch = (np.asarray(x) for x in run_once(jax.vmap(kinematics), q, qd))
    assert np.max(np.abs(residual)) < 1e-13 and np.max(np.abs(velocity)) < 1e-13  # consistent states
    independent = independent_coordinates(a_batch)

    def run(q, qd, tau):
        lag = kc.solve(model, cons, q, qd, tau, "lagrange")
        ns = kc.solve(model, cons, q, qd, tau, "nullspace")
        nsi = kc.solve(model, cons, q, qd, tau, "nullspace", independent=independent)

        def huang(dt):
            hu = kc.solve(model, cons, q, qd, tau, "huang", dt=dt)
            lb = kc.solve(model, cons, q, qd, tau, "lagrange", baumgarte=(1.0 / dt, np.sqrt(2.0) / dt))
            step = q + qd * dt + 0.5 * dt**2 * hu.vd
            eom = kj.inverse_dynamics(model, q, qd, hu.vd) - tau - hu.generalized_force
            return hu, lb, jnp.max(jnp.abs(cons.residual(step))), jnp.max(jnp.abs(eom))

        hu, lb, step_residual, huang_eom = jax.vmap(huang)(jnp.asarray(HUANG_DTS))
        return dict(
            lag=lag,
            ns=ns,
            nsi=nsi,
            gamma=cons.bias(q, qd),
            mass=kj.mass_matrix(model, q),
            bias=kj.inverse_dynamics(model, q, qd, jnp.zeros_like(qd)),
            eom=kj.inverse_dynamics(model, q, qd, lag.vd) - tau - cons.jacobian(q).T @ lag.forces,
            huang=hu,
            baumgarte=lb,
            step_residual=step_residual,
            huang_eom=huang_eom,
        )

    return a_batch, run_once(jax.vmap(run), q, qd, tau), (q, qd, tau)


def test_lagrange_nullspace_gauss(states, solutions):
    """Lagrange vs null space (SVD basis, coordinate partitioning): qdd and lambda; the equations of
    motion ``M qdd + C qd + g - tau - A^T lambda = 0`` (inverse dynamics); ``A qdd = gamma``;
    Gauss's principle of least constraint, as a QP solved independently in numpy."""
    cons = states[1]
    a_batch, out, (q, _, tau) = solutions
    lag, ns, nsi = out["lag"], out["ns"], out["nsi"]
    errors = dict(
        qdd_ns=relerr(ns.vd, lag.vd),
        qdd_indep=relerr(nsi.vd, lag.vd),
        lambda_ns=relerr(ns.forces, lag.forces),
        lambda_indep=relerr(nsi.forces, lag.forces),
        eom=float(jnp.max(jnp.abs(out["eom"])) / jnp.max(jnp.abs(tau))),  # M qdd + C qd + g - tau - A^T lambda
        constraint=relerr(np.einsum("bij,bj->bi", a_batch, lag.vd), out["gamma"]),  # A qdd = gamma
        gen_force=relerr(lag.generalized_force, np.einsum("bij,bi->bj", a_batch, lag.forces)),
        gauss=0.0,
    )
    assert np.all(np.asarray(lag.rank) == cons.n_equations)
    # Gauss's principle: qdd minimizes (x - M^-1 f)^T M (x - M^-1 f) subject to A x = gamma.
    # Solved here by the null-space method in numpy (particular solution + reduced quadratic).
    for k in range(q.shape[0]):
        mass, a, gamma = np.asarray(out["mass"][k]), a_batch[k], np.asarray(out["gamma"][k])
        free = np.linalg.solve(mass, np.asarray(tau[k] - out["bias"][k]))
        x_p = np.linalg.lstsq(a, gamma, rcond=None)[0]
        basis = np.linalg.svd(a)[2][a.shape[0] :].T
        y = np.linalg.solve(basis.T @ mass @ basis, -basis.T @ mass @ (x_p - free))
        x = x_p + basis @ y
        errors["gauss"] = max(errors["gauss"], relerr(lag.vd[k], x))
        # and it is a minimum: any admissible change raises the Gauss function
        for dy in np.random.default_rng(k).normal(size=(5, basis.shape[1])) * 1e-3:
            z = x + basis @ dy
            assert (z - free) @ mass @ (z - free) > (x - free) @ mass @ (x - free)
    print("\nsolvers: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) < 1e-10, errors


def test_huang_tends_to_lagrange(states, solutions):
    """Huang's qdd (the mean acceleration over [t, t + dt] that meets the constraints at t + dt to
    second order) vs Lagrange with Baumgarte gains alpha = 1/dt, beta = sqrt(2)/dt: O(dt) at
    a moving state, O(dt^2) at rest; the step q + qd dt + qdd dt^2/2 violates the constraints by
    O(dt^3); the reactions Z^T Q vs A^T lambda, and Huang's own equations of motion."""
    n_states = states[2].shape[0]
    dts = HUANG_DTS
    # the states as they are, then at rest
    _, out, (_, _, tau) = solutions
    hu, lb, step_residual, eom, plain = (out[k] for k in ("huang", "baumgarte", "step_residual", "huang_eom", "lag"))
    report = []
    for k in range(2 * n_states):
        moving = k < n_states
        scale = float(jnp.linalg.norm(plain.vd[k]))
        err = np.asarray(jnp.linalg.norm(hu.vd[k] - lb.vd[k], axis=1)) / scale
        force_err = np.asarray(jnp.linalg.norm(hu.generalized_force[k] - lb.generalized_force[k], axis=1)) / float(
            jnp.linalg.norm(plain.generalized_force[k])
        )
        reaction_err = np.asarray(jnp.linalg.norm(hu.forces[k] - lb.forces[k], axis=1)) / float(jnp.linalg.norm(plain.forces[k]))
        # Huang's own equations of motion: M qdd + C qd + g = tau + Z^T Q
        assert float(jnp.max(eom[k])) < 1e-10 * float(jnp.max(jnp.abs(tau))), k
        # truncation regime (below it, round-off ~ eps/dt takes over)
        sel = (dts >= 1e-6) & (dts <= 1e-3)
        slopes = [np.polyfit(np.log10(dts[sel]), np.log10(e[sel]), 1)[0] for e in (err, force_err, reaction_err)]
        order = 1 if moving else 2
        assert all(abs(x - order) < 0.15 for x in slopes), (k, slopes)
        # the step q + qd dt + qdd dt^2 / 2 meets the constraints to third order
        big = (dts >= 1e-3) & (dts <= 1e-1)
        step_slope = np.polyfit(np.log10(dts[big]), np.log10(np.asarray(step_residual[k])[big]), 1)[0]
        assert step_slope > 2.8, (k, step_slope)
        best = [(float(e.min()), float(dts[np.argmin(e)])) for e in (err, force_err, reaction_err)]
        coefficient = float(err[np.isclose(dts, 1e-4)][0]) / 1e-4**order  # err ~ coefficient dt^order
        report.append(
            f"{'moving' if moving else 'at rest'} state {k % n_states}: slope {slopes[0]:.3f}, "
            f"err ~ {coefficient:.2g} dt^{order}; best "
            + ", ".join(f"{name} {e:.1e} (dt {d:.0e})" for name, (e, d) in zip(("qdd", "Z^T Q", "Q"), best))
        )
        # the O(dt) term meets round-off near 1e-8 for a moving state (the reactions solve a system
        # scaled by dt^2, a little less accurate); where depends on the last bits of M: observed
        # 2e-8 ... 1.1e-7 for qdd, 2.7e-7 for Q with two implementations of M agreeing to 2e-15
        limits = (3e-7, 5e-7, 5e-7) if moving else (1e-12, 1e-12, 1e-12)
        assert all(e < limit for (e, _), limit in zip(best, limits)), (k, best)
    print("\nhuang vs lagrange + baumgarte(1/dt, sqrt(2)/dt), relative errors:")
    for row in report:
        print("  ", row)


# --------------------------------------------------------------------------------------------
# Huang's double pendulum (Fig. 8) in Cartesian coordinates
# --------------------------------------------------------------------------------------------

MASS, JZZ, HALF = DFDQ["parameters"]["m"], DFDQ["parameters"]["Izz"], DFDQ["parameters"]["Lc"]


def cartesian_pendulum(gravity) -> tuple[kj.Model, kc.Constraints]:
    """Each link a free planar body: P(x)-P(y)-R(z) from the base through two massless frames,
    body frame at the link's centre of mass; q = [x1, y1, phi1, x2, y2, phi2] (phi counter-
    clockwise). Pins as planar_point closures: joint 1 between link 1's end (-0.61, 0, 0) and the
    base origin, joint 2 between link 1's (0.61, 0, 0) and link 2's (-0.61, 0, 0)."""
    joints, inertials = [], []
    for link in (1, 2):
        base = len(joints)
        joints += [
            kj.Joint("P", -1, (1, 0, 0), body_name=f"x{link}"),
            kj.Joint("P", base, (0, 1, 0), body_name=f"y{link}"),
            kj.Joint("R", base + 1, (0, 0, 1), body_name=f"link{link}"),
        ]
        inertials += [kj.Inertial(0.0), kj.Inertial(0.0), kj.Inertial(MASS, inertia=(0.0, 0.0, JZZ))]
    model = kj.from_joints(joints, inertials, gravity=gravity)
    cons = kc.Constraints(
        (
            kc.loop_closure(model, "link1", (-HALF, 0, 0), "base", (0, 0, 0), "planar_point"),
            kc.loop_closure(model, "link1", (HALF, 0, 0), "link2", (-HALF, 0, 0), "planar_point"),
        )
    )
    return model, cons


def pendulum_state(phi1, phi2, dphi1=0.0, dphi2=0.0):
    """Cartesian q, qd of the assembled pendulum from the absolute link angles (counter-clockwise)."""
    u = lambda p: np.array([np.cos(p), np.sin(p)])
    du = lambda p: np.array([-np.sin(p), np.cos(p)])
    c1, c2 = HALF * u(phi1), 2 * HALF * u(phi1) + HALF * u(phi2)
    v1, v2 = HALF * du(phi1) * dphi1, 2 * HALF * du(phi1) * dphi1 + HALF * du(phi2) * dphi2
    return np.array([*c1, phi1, *c2, phi2]), np.array([*v1, dphi1, *v2, dphi2])


def pins_phi(q):
    """The pendulum's two pins written by hand as a holonomic constraint."""
    x1, y1, p1, x2, y2, p2 = q
    return jnp.stack(
        [
            x1 - HALF * jnp.cos(p1),
            y1 - HALF * jnp.sin(p1),
            x1 + HALF * jnp.cos(p1) - x2 + HALF * jnp.cos(p2),
            y1 + HALF * jnp.sin(p1) - y2 + HALF * jnp.sin(p2),
        ]
    )


def pins_a(q):
    """The pins in Pfaffian form, A(q) qd = 0, A written by hand."""
    s1, c1, s2, c2 = jnp.sin(q[2]), jnp.cos(q[2]), jnp.sin(q[5]), jnp.cos(q[5])
    z = 0.0 * s1
    return jnp.array(
        [
            [1 + z, z, HALF * s1, z, z, z],
            [z, 1 + z, -HALF * c1, z, z, z],
            [1 + z, z, -HALF * s1, -1 + z, z, -HALF * s2],
            [z, 1 + z, HALF * c1, z, -1 + z, HALF * c2],
        ]
    )


PIN_VARIANTS = ("holonomic", "pfaffian", "closures")


@functools.cache
def pendulum_program():
    """What the Cartesian pendulum's tests compute, compiled once for all three (the model, and
    so its gravity, is an argument; the pins three ways): ``solve`` by Lagrange and null space for
    each way of writing the pins, Huang's step and ``huang_system`` with the loop closures; keys
    ``"<variant>/<method>"`` and ``"huang_system"``."""
    model, closures = cartesian_pendulum((0.0, 0.0, 0.0))
    variants = dict(
        holonomic=kc.holonomic(pins_phi, 6, description="pins"),
        pfaffian=kc.pfaffian(pins_a, 6, description="pins"),
        closures=closures,
    )

    def run(model, q, qd, tau):
        out = {f"{c}/{m}": kc.solve(model, variants[c], q, qd, tau, m) for c in PIN_VARIANTS for m in ("lagrange", "nullspace")}
        # Huang's step corrects Phi(q) with gain 2/dt^2, so its reactions carry the round-off
        # of the assembled configuration (~1e-16 m) times m 2/dt^2: a large dt here
        out["closures/huang"] = kc.solve(model, closures, q, qd, tau, "huang", dt=1e-2)
        out["huang_system"] = kc.huang_system(model, closures, q, qd, tau, DFDQ["parameters"]["dt"])
        return out

    return compile_fast(run, model, *(jnp.zeros(6),) * 3)


def pendulum_states(gravity, qs, qds, taus):
    """:func:`pendulum_program` for the pendulum under ``gravity``, state by state."""
    model = cartesian_pendulum(gravity)[0]
    return map_states(functools.partial(pendulum_program(), model), *(np.asarray(x, float) for x in (qs, qds, taus)))


@pytest.mark.slow
def test_huang_double_pendulum_dfdq():
    """``huang_system(...).phi_q`` at rest without forces is Huang's df/dQ (37)-(39), rederived:
    ``[[B1+, B1-], [B1-, B1+ + B2+]]`` with the paper's clockwise theta (body angle = -theta).
    Its determinant is ``a^2 dt^8/16 (a^2 + 6ab + b^2 + 4 b^2 sin^2(theta1 - theta2))``, not the
    printed ``9/2 dt^2``; the printed structure ``B1+ - B2+`` would be singular at
    ``|sin(theta1 - theta2)| = |a - b| / (2b)``, ours is not."""
    dt = DFDQ["parameters"]["dt"]
    a, b = 1.0 / MASS, HALF**2 / JZZ
    refs = DFDQ["dfdQ_reference"]
    qs = np.array([pendulum_state(-r["theta1"], -r["theta2"])[0] for r in refs])
    zero = np.zeros_like(qs)
    system = pendulum_states((0.0, 0.0, 0.0), qs, zero, zero)["huang_system"]
    phi_q = np.asarray(system.phi_q)
    errors = dict(matrix=0.0, det=0.0, det_reference=0.0, printed_det=0.0)
    scale = a**2 * dt**8 / 16
    for r, mat in zip(refs, phi_q):
        delta = r["theta1"] - r["theta2"]
        errors["matrix"] = max(errors["matrix"], relerr(mat, r["dfdQ_rederived_SI"]))
        det = np.linalg.det(mat)
        closed = scale * (a**2 + 6 * a * b + b**2 + 4 * b**2 * np.sin(delta) ** 2)
        errors["det"] = max(errors["det"], abs(det / closed - 1))
        errors["det_reference"] = max(errors["det_reference"], abs(det / r["det_dfdQ_rederived_SI"] - 1))
        # the printed (39) from our blocks: lower-right B1+ - B2+ = 2 B1+ - (B1+ + B2+)
        printed = mat.copy()
        printed[2:, 2:] = 2 * mat[:2, :2] - mat[2:, 2:]
        printed_closed = scale * ((a - b) ** 2 - 4 * b**2 * np.sin(delta) ** 2)
        errors["printed_det"] = max(errors["printed_det"], abs(np.linalg.det(printed) - printed_closed) / closed)
        assert det > 0.5 * scale * (a + b) ** 2  # never singular: a^2 + 6ab + b^2 > (a + b)^2
        if r["name"] == "printed_structure_singular":
            assert abs(abs(np.sin(delta)) - abs(a - b) / (2 * b)) < 1e-12
            assert abs(np.linalg.det(printed)) < 1e-10 * det  # the printed structure is singular here
    # the paper's claim at theta1 = theta2 is off by the factor (dt^2/2)^3
    equal = [np.linalg.det(mat) for r, mat in zip(refs, phi_q) if r["theta1"] == r["theta2"]]
    assert equal and all(abs(d / (scale * (a**2 + 6 * a * b + b**2)) - 1) < 1e-10 for d in equal)
    assert all(d < 1e-20 * 4.5 * dt**2 for d in equal)
    print("\ndouble pendulum df/dQ: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) < 1e-10, errors


def test_double_pendulum_dynamics_and_reactions():
    """The Cartesian pendulum with two planar_point pins reproduces the joint-space closed form
    (M, C, g of the reference, through its tau -> qdd pairs); the reactions of the hanging pendulum
    are the static ones, ``R1 = (0, 2 m g)`` on link 1 at the ground pin and ``R2 = (0, -m g)``
    on link 1 at the elbow, for Lagrange and Huang alike (Q = [R1x, R1y, R2x, R2y])."""
    g0 = PENDULUM["parameters"]["g0"]
    configs = PENDULUM["configurations"]
    qs, qds, taus = [], [], []
    for c in configs:
        (q1, q2), (dq1, dq2), (t1, t2) = c["q"], c["qd"], c["tau"]
        q, qd = pendulum_state(q1, q1 + q2, dq1, dq1 + dq2)
        qs.append(q)
        qds.append(qd)
        taus.append([0, 0, t1 - t2, 0, 0, t2])  # joint torques: tau2 on link 2, its reaction on link 1

    out = pendulum_states((0.0, -g0, 0.0), qs, qds, taus)
    lag, ns, hu = (out[f"closures/{m}"] for m in ("lagrange", "nullspace", "huang"))
    qdd_joint = np.stack([lag.vd[:, 2], lag.vd[:, 5] - lag.vd[:, 2]], axis=1)
    expected = np.array([c["qdd"] for c in configs])
    err = float(np.max(np.abs(qdd_joint - expected)))
    assert err < 1e-10 * max(1.0, float(np.max(np.abs(expected)))), err
    assert relerr(ns.vd, lag.vd) < 1e-10 and relerr(ns.forces, lag.forces) < 1e-10
    hanging = next(i for i, c in enumerate(configs) if c["name"] == "hanging_equilibrium")
    statics = np.array([0.0, 2 * MASS * g0, 0.0, -MASS * g0])
    assert relerr(lag.forces[hanging], statics) < 1e-12, lag.forces[hanging]
    assert relerr(hu.forces[hanging], statics) < 1e-11, hu.forces[hanging]
    assert float(np.max(np.abs(lag.vd[hanging]))) < 1e-12
    print(f"\ndouble pendulum: joint-space qdd error {err:.1e}")


# --------------------------------------------------------------------------------------------
# Pfaffian constraints
# --------------------------------------------------------------------------------------------


def knife_edge_model():
    joints = [
        kj.Joint("P", -1, (1, 0, 0), body_name="x"),
        kj.Joint("P", 0, (0, 1, 0), body_name="y"),
        kj.Joint("R", 1, (0, 0, 1), body_name="blade"),
    ]
    inertials = [kj.Inertial(0.0), kj.Inertial(0.0), kj.Inertial(2.5, inertia=(0.02, 0.03, 0.04))]
    return kj.from_joints(joints, inertials)


def knife_edge(slip):
    """``-sin(phi) xd + cos(phi) yd = slip cos(phi)``."""
    return kc.pfaffian(
        lambda q: jnp.stack([-jnp.sin(q[2]), jnp.cos(q[2]), 0.0 * q[2]])[None],
        3,
        lambda q: slip * jnp.cos(q[2])[None],
        description="knife edge",
    )


@functools.cache
def knife_edge_program():
    """Lagrange and null space on the knife edge, compiled once with the slip an argument (the
    Pfaffian form without ``b`` is the pins' in test_holonomic_in_pfaffian_form)."""
    model = knife_edge_model()

    def run(q, qd, tau, slip):
        return [kc.solve(model, knife_edge(slip), q, qd, tau, m) for m in ("lagrange", "nullspace")]

    return compile_fast(run, *(jnp.zeros(3),) * 3, jnp.zeros(()))


@pytest.mark.parametrize("slip", [0.0, 0.7])
def test_knife_edge(slip):
    """A blade on the plane (the Chaplygin sleigh with its contact at the centre of mass):
    ``-sin(phi) xd + cos(phi) yd = b``, ``b = slip cos(phi)`` (a prescribed sideways slip). Closed form:
    ``lambda = m gamma + sin(phi) tau_x - cos(phi) tau_y`` with ``gamma = phid (v - slip sin(phi))``,
    ``v = cos(phi) xd + sin(phi) yd``; ``m xdd = tau_x - sin(phi) lambda``, ``m ydd = tau_y + cos(phi)
    lambda``, ``J phidd = tau_phi``."""
    mass, jzz = 2.5, 0.04
    rng = np.random.default_rng(2)
    q = rng.normal(size=(4, 3))
    tau = rng.normal(size=(4, 3))
    qd = rng.normal(size=(4, 3))
    phi = q[:, 2]
    qd[:, :2] = np.stack([np.cos(phi), np.sin(phi)], 1) * qd[:, :1] + slip * np.cos(phi)[:, None] * np.stack(
        [-np.sin(phi), np.cos(phi)], 1
    )  # admissible: forward speed qd[:, 0], sideways slip b
    lag, ns = map_states(lambda *state: knife_edge_program()(*state, jnp.asarray(slip)), q, qd, tau)
    v = np.cos(phi) * qd[:, 0] + np.sin(phi) * qd[:, 1]
    gamma = qd[:, 2] * (v - slip * np.sin(phi))
    lam = mass * gamma + np.sin(phi) * tau[:, 0] - np.cos(phi) * tau[:, 1]
    qdd = np.stack([(tau[:, 0] - np.sin(phi) * lam) / mass, (tau[:, 1] + np.cos(phi) * lam) / mass, tau[:, 2] / jzz], 1)
    for sol in (lag, ns):
        assert relerr(sol.vd, qdd) < 1e-12 and relerr(sol.forces[:, 0], lam) < 1e-12
    assert not kc.Constraints((knife_edge(slip),)).is_holonomic


def test_holonomic_in_pfaffian_form():
    """The double pendulum's pins written by hand three ways (holonomic Phi, Pfaffian A with b = 0,
    and the loop closures): the same qdd and multipliers from both solvers."""
    g0 = 9.81
    rng = np.random.default_rng(4)
    states = [pendulum_state(*rng.uniform(-3, 3, 2), *rng.normal(size=2)) for _ in range(3)]
    q, qd = (np.array(x) for x in zip(*states))
    tau = rng.normal(size=(3, 6))
    out = pendulum_states((0.0, -g0, 0.0), q, qd, tau)
    results = {(c, m): out[f"{c}/{m}"] for c, m in itertools.product(PIN_VARIANTS, ("lagrange", "nullspace"))}
    ref = results["holonomic", "lagrange"]
    for key, sol in results.items():
        assert relerr(sol.vd, ref.vd) < 1e-10 and relerr(sol.forces, ref.forces) < 1e-10, key


# --------------------------------------------------------------------------------------------
# Bad input, redundant constraints
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def four_bar():
    """Crank (b0) at the origin, coupler (b1) on it, rocker (b2) at (1, 0, 0); closed at the
    coupler's end and the rocker's end by a pin (planar_point): 1 DOF."""
    joints = [
        kj.Joint("R", -1, body_name="crank"),
        kj.Joint("R", 0, translation=(0.4, 0, 0), body_name="coupler"),
        kj.Joint("R", -1, translation=(1.0, 0, 0), body_name="rocker"),
    ]
    inertials = [kj.Inertial(1.0, com=(0.2, 0, 0), inertia=(0.01, 0.02, 0.02))] * 3
    model = kj.from_joints(joints, inertials, gravity=(0, -9.81, 0))
    pin = kc.loop_closure(model, "coupler", (1.0, 0, 0), "rocker", (0.8, 0, 0), "planar_point")
    q, _ = kc.project(model, pin, jnp.array([1.0, -0.8, 1.6]))
    return model, pin, q


@pytest.mark.usefixtures("without_shape_checks")
def test_bad_input(spatial, four_bar):
    s = spatial
    model = s["model"]
    p = (0.0, 0.0, 0.0)
    with pytest.raises(KeyError, match="no body named 'nope'"):
        kc.loop_closure(model, "nope", p, "b6", p)
    with pytest.raises(IndexError, match="out of range"):
        kc.loop_closure(model, 3, p, 42, p)
    with pytest.raises(ValueError, match="two different bodies"):
        kc.loop_closure(model, "b3", p, 3, p)
    with pytest.raises(ValueError, match="two different bodies"):
        kc.loop_closure(model, "base", p, None, p)
    with pytest.raises(ValueError, match="unknown loop-closure kind 'ball'"):
        kc.loop_closure(model, "b3", p, "b6", p, "ball")
    for kind in ("revolute", "cylindrical", "prismatic"):
        with pytest.raises(ValueError, match="needs its axis"):
            kc.loop_closure(model, "b3", p, "b6", p, kind)
    with pytest.raises(ValueError, match="axis must be non-zero"):
        kc.loop_closure(model, "b3", p, "b6", p, "revolute", (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="axis_b must be non-zero"):
        kc.loop_closure(model, "b3", p, "b6", p, "revolute", (0.0, 0.0, 1.0), axis_b=(0, 0, 0))
    with pytest.raises(ValueError, match="rotation applies to a weld closure"):
        kc.loop_closure(model, "b3", p, "b6", p, rotation=np.eye(3))
    with pytest.raises(ValueError, match="determinant"):
        kc.loop_closure(model, "b3", p, "b6", p, "weld", rotation=-np.eye(3))
    with pytest.raises(ValueError, match="3x3 rotation matrix"):
        kc.loop_closure(model, "b3", p, "b6", p, "weld", rotation=np.eye(2))
    with pytest.raises(ValueError, match="point_a must be a finite 3-vector"):
        kc.loop_closure(model, "b3", (0.0, 0.0), "b6", p)
    with pytest.raises(ValueError, match="point_b must be a finite 3-vector"):
        kc.loop_closure(model, "b3", p, "b6", np.zeros((3, 1)))
    with pytest.raises(ValueError, match="point_a"):
        kc.loop_closure(model, "b3", "abc", "b6", p)
    with pytest.raises(TypeError, match="kronjax Model"):
        kc.loop_closure("model", "b3", p, "b6", p)

    with pytest.raises(TypeError, match="callable"):
        kc.holonomic(np.zeros(3), 7)
    with pytest.raises(ValueError, match="vector"):
        kc.holonomic(lambda q: jnp.outer(q, q), 7)  # a matrix, not a vector
    with pytest.raises(ValueError, match="vector"):
        kc.holonomic(lambda q: jnp.sum(q), 7)  # a scalar
    with pytest.raises(TypeError, match="pure JAX function"):
        kc.holonomic(lambda q: q[:2] @ jnp.ones(3), 7)  # fails to trace
    with pytest.raises(ValueError, match="nv"):
        kc.holonomic(lambda q: q[:2], 0)
    with pytest.raises(ValueError, match=r"matrix \(m, 7\)"):
        kc.pfaffian(lambda q: q[None, :3], 7)
    with pytest.raises(ValueError, match=r"b_fn must return a vector \(1,\)"):
        kc.pfaffian(lambda q: q[None], 7, lambda q: q[:2])

    cons = closure(s, "spherical")
    q0, qd0 = jnp.asarray(s["q_star"]), jnp.zeros(7)
    with pytest.raises(ValueError, match="unknown method 'euler'"):
        kc.solve(model, cons, q0, qd0, qd0, "euler")
    with pytest.raises(ValueError, match="give dt > 0"):
        kc.solve(model, cons, q0, qd0, qd0, "huang")
    with pytest.raises(ValueError, match="dt must be positive"):
        kc.solve(model, cons, q0, qd0, qd0, "huang", dt=-1e-3)
    knife = kc.pfaffian(lambda q: q[None], 7)
    with pytest.raises(ValueError, match="needs holonomic constraints"):
        kc.solve(model, [cons, knife], q0, qd0, qd0, "huang", dt=1e-3)
    with pytest.raises(ValueError, match="needs holonomic constraints"):
        kc.huang_system(model, knife, q0, qd0, qd0, 1e-3)
    with pytest.raises(ValueError, match=r"q must have shape \(7,\)"):
        kc.solve(model, cons, jnp.zeros(6), qd0, qd0)
    with pytest.raises(ValueError, match=r"v must have shape \(7,\)"):
        kc.solve(model, cons, q0, jnp.zeros((7, 1)), qd0)
    with pytest.raises(ValueError, match="independent must name 4 distinct"):
        kc.solve(model, cons, q0, qd0, qd0, "nullspace", independent=(0, 1, 1, 2))
    with pytest.raises(ValueError, match="independent applies"):
        kc.solve(model, cons, q0, qd0, qd0, "lagrange", independent=(0, 1, 2, 3))
    with pytest.raises(TypeError, match="constraints must be"):
        kc.solve(model, "spherical", q0, qd0, qd0)
    four_bar_model = four_bar[0]
    with pytest.raises(ValueError, match="constraints on 7 coordinates for a 3-DOF model"):
        kc.solve(four_bar_model, cons, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3))


def test_redundant_constraints_and_inconsistent_states(spatial, four_bar):
    model, pin, q = four_bar
    # a spherical joint on a planar loop: its z equation is identically satisfied (rank 2 of 3)
    ball = kc.loop_closure(model, "coupler", (1.0, 0, 0), "rocker", (0.8, 0, 0), "spherical")
    with pytest.raises(ValueError, match="3 constraint equations have rank 2"):
        kc.check_state(model, ball, q)
    with pytest.raises(Exception, match="rank 2 < 3 equations"):
        jax.block_until_ready(jax.jit(lambda q: kc.solve(model, ball, q, q * 0, q * 0).vd)(q))
    # a revolute joint on a planar loop: 5 equations on 3 coordinates
    hinge = kc.loop_closure(model, "coupler", (1.0, 0, 0), "rocker", (0.8, 0, 0), "revolute", (0, 0, 1))
    with pytest.raises(ValueError, match="5 constraint equations on 3 coordinates"):
        kc.check_state(model, hinge, q)
    # the same closure twice (on the spatial chain: 4 equations on 7 coordinates, rank 2)
    s = spatial
    twice = [closure(s, "planar_point")] * 2
    with pytest.raises(ValueError, match="4 constraint equations have rank 2"):
        kc.check_state(s["model"], twice, s["q_star"])
    kc.check_state(model, pin, q)  # the assembled four-bar is fine
    # an inconsistent initial state: simulate refuses it and points to project
    with pytest.raises(ValueError, match="violates the constraints.*project"):
        kc.simulate(model, pin, q + 0.1, jnp.zeros(3), dt=1e-3, steps=2)
    a = kc.Constraints((pin,)).jacobian(q)
    bad_qd = jnp.asarray(np.linalg.svd(np.asarray(a))[2][0])  # in the row space: not admissible
    with pytest.raises(ValueError, match="v violates the velocity constraints.*project"):
        kc.simulate(model, pin, q, bad_qd, dt=1e-3, steps=2)
    with pytest.raises(ValueError, match="unknown method"):
        kc.simulate(model, pin, q, jnp.zeros(3), dt=1e-3, steps=2, method="verlet")


# --------------------------------------------------------------------------------------------
# float32, jit / vmap
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def four_bar_batch(four_bar):
    """Five states near the assembled four-bar (the solvers are defined at any state: these are
    not projected onto the constraints), random velocities and torques, and the three solvers'
    results under ``jit(vmap)``."""
    model, pin, q0 = four_bar
    rng = np.random.default_rng(8)
    q = q0 + jnp.asarray(rng.normal(size=(5, 3)) * 0.05)
    qd, tau = (jnp.asarray(rng.normal(size=(5, 3))) for _ in range(2))

    def all_methods(q, qd, tau):
        return [kc.solve(model, pin, q, qd, tau, m, dt=1e-3 if m == "huang" else None) for m in kc.SOLVE_METHODS]

    return all_methods, q, qd, tau, run_once(jax.vmap(all_methods), q, qd, tau)


def test_float32(four_bar, four_bar_batch):
    """Lagrange in float32 (model.astype) agrees with float64 to ~1e-4."""
    model, _, _ = four_bar
    _, q, qd, tau, batch = four_bar_batch
    ref = batch[kc.SOLVE_METHODS.index("lagrange")]
    model32 = model.astype(jnp.float32)
    pin32 = kc.loop_closure(model32, "coupler", (1.0, 0, 0), "rocker", (0.8, 0, 0), "planar_point")
    run32 = jax.vmap(lambda q, qd, tau: kc.solve(model32, pin32, q, qd, tau))
    got = run_once(run32, *(x.astype(jnp.float32) for x in (q, qd, tau)))
    assert got.vd.dtype == jnp.float32 and got.forces.dtype == jnp.float32
    err_qdd, err_lam = relerr(got.vd, ref.vd), relerr(got.forces, ref.forces)
    print(f"\nfloat32 vs float64: qdd {err_qdd:.1e}, lambda {err_lam:.1e}")
    assert err_qdd < 1e-4 and err_lam < 1e-4


def test_jit_vmap_no_retrace(four_bar_batch):
    """The three solvers under ``jit`` and ``vmap`` give the per-state results of a jitted
    single-state call, which is traced once for five states (new values, no retrace)."""
    all_methods, q, qd, tau, batch = four_bar_batch
    single = jax.jit(eqx.debug.assert_max_traces(all_methods, max_traces=1))
    for k in range(5):  # new values each call, one trace
        for one, many in zip(single(q[k], qd[k], tau[k]), batch):
            assert relerr(many.vd[k], one.vd) < 1e-10 and relerr(many.forces[k], one.forces) < 1e-10
            assert int(many.rank[k]) == int(one.rank) == 2
