"""Precision at condition numbers 1e8-1e14 (issue 18, part 4): forward dynamics, the constrained
solvers and least-squares identification, against the *exact* solution of the same float64 linear
systems.

Oracle: the float64 inputs (Pinocchio's ``crba`` and ``rnea`` for ``M`` and the bias, the
constraint Jacobian and bias, the regressor) read as rational numbers and solved exactly with
:class:`fractions.Fraction` (Gauss-Jordan; least squares through the exact normal equations). The
error measured is then the error of kronjax's solve alone; the bounds asserted are those the
docstrings state (relative error about ``cond * eps``, or better where the structure allows), and
the cases where no digit is left end in an error or a warning, never in a silent number.
"""

import warnings
from fractions import Fraction

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import kronjax as kj
from kronjax import constrained as kc
from kronjax import identify as ki
from kronjax.models import four_bar

pin = pytest.importorskip("pinocchio")

from oracles import jit_once, to_pinocchio  # noqa: E402

EPS = float(np.finfo(np.float64).eps)


def _gauss_jordan(rows: list[list[Fraction]]) -> np.ndarray:
    """Exact Gauss-Jordan elimination of the augmented rational system ``[A | b]``, the solution
    rounded once to float64 at the end."""
    n = len(rows)
    for c in range(n):
        pivot = max(range(c, n), key=lambda r: abs(rows[r][c]))
        rows[c], rows[pivot] = rows[pivot], rows[c]
        for r in range(n):
            if r != c and rows[r][c]:
                f = rows[r][c] / rows[c][c]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[c])]
    return np.array([float(rows[r][n] / rows[r][r]) for r in range(n)])


def exact_solve(a, b) -> np.ndarray:
    """The exact solution of ``a x = b`` for float64 ``a`` and ``b`` taken as rationals."""
    return _gauss_jordan(
        [[Fraction(float(v)) for v in row] + [Fraction(float(w))] for row, w in zip(np.asarray(a), np.asarray(b))]
    )


def exact_least_squares(w, t) -> np.ndarray:
    """The exact minimiser of ``|w x - t|`` (full column rank), from the exact normal equations."""
    wf = [[Fraction(float(x)) for x in row] for row in np.asarray(w)]
    tf = [Fraction(float(x)) for x in np.asarray(t)]
    p = len(wf[0])
    gram = [[sum(row[i] * row[j] for row in wf) for j in range(p)] for i in range(p)]
    moment = [sum(row[i] * ti for row, ti in zip(wf, tf)) for i in range(p)]
    return _gauss_jordan([gram[i] + [moment[i]] for i in range(p)])


def rel(x, ref) -> float:
    return float(np.linalg.norm(np.asarray(x, float) - ref) / np.linalg.norm(ref))


def pinocchio_system(model, q, qd, tau):
    """``M`` (symmetrised) and ``tau - C qd - g`` from Pinocchio."""
    pm = to_pinocchio(model)
    data = pm.createData()
    m = pin.crba(pm, data, q).copy()
    m = np.triu(m) + np.triu(m, 1).T
    return m, tau - pin.rnea(pm, data, q, qd, np.zeros_like(q))


FORWARD = jit_once(kj.forward_dynamics)  # one compilation per model structure (the two-link ones share one)


# --------------------------------------------------------------------------------------------
# Forward dynamics
# --------------------------------------------------------------------------------------------


def light_distal_link(name, ratio):
    """The model with its last body ``ratio`` times lighter (mass and inertia)."""
    model = {"double_pendulum": kj.models.double_pendulum, "panda": kj.models.panda}[name]()
    scale = jnp.ones(model.n_bodies).at[-1].set(ratio)
    ine = model.inertials
    lighter = (ine.mass * scale, ine.inertia * scale[:, None, None])
    return eqx.tree_at(lambda m: (m.inertials.mass, m.inertials.inertia), model, lighter)


@pytest.mark.parametrize(
    "name, ratio",
    [
        ("double_pendulum", 1e-8),
        ("double_pendulum", 1e-14),
        pytest.param("panda", 1e-8, marks=pytest.mark.slow),
        pytest.param("panda", 1e-14, marks=pytest.mark.slow),
    ],
)
def test_light_distal_link_costs_no_precision(name, ratio):
    """The last body ``ratio`` times lighter: ``cond(M)`` grows as ``1 / ratio`` (Panda 5.8e10
    and 5.8e16 for link 7) but the scaling is diagonal, which the articulated-body
    algorithm does not feel (nor would a Cholesky factorisation: van der Sluis); the error follows
    the componentwise condition number ``|| |M^-1| |M| ||`` (about 60 for the Panda) and stays at
    rounding level (measured 1e-16 to 3e-16, as Pinocchio's aba)."""
    model = light_distal_link(name, ratio)
    n = model.nv
    rng = np.random.default_rng(0)
    q, qd, tau = rng.uniform(-1, 1, n), rng.normal(size=n), rng.normal(size=n)
    m, f = pinocchio_system(model, q, qd, tau)
    reference = exact_solve(m, f)
    cond = np.linalg.cond(m)
    err = rel(FORWARD(model, q, qd, tau), reference)
    print(f"\n{name}, ratio {ratio:.0e}: cond(M) {cond:.1e}, relative error {err:.1e}")
    assert cond > 0.1 / ratio
    assert err <= 1e-14


# cond(M) ~ 1.3 / ratio: 1.3e8, 1.3e10, 1.3e12, 1.3e14; measured errors 9e-9, 5e-7, 2e-5, 3e-3
COINCIDENT_RATIOS = [1e-8, 1e-10, 1e-12, 1e-14]


def coincident_axes(ratio):
    """Two revolute joints about the same axis through the same point, the body between them
    ``ratio`` times lighter than the one after: the joints move the heavy body almost alike, ``M``
    is nearly singular (``det M ~ ratio``) and no scaling helps."""
    joints = [kj.Joint("R", -1, (0, 0, 1)), kj.Joint("R", 0, (0, 0, 1))]
    inertials = [
        kj.Inertial(mass=ratio, com=(0, 0, 0), inertia=(ratio, ratio, ratio)),
        kj.Inertial(mass=1.0, com=(0.5, 0.2, 0), inertia=(0.01, 0.02, 0.03)),
    ]
    return kj.from_joints(joints, inertials, gravity=(0, -9.81, 0))


def test_nearly_singular_mass_matrix_loses_cond_eps():
    """A mass matrix that is nearly singular for a kinematic reason: the relative error of
    ``forward_dynamics`` grows as ``cond(M) eps`` (the docstring's rule; measured 0.02-0.2 of it,
    as Pinocchio's aba), so about ``16 - log10 cond`` digits are left."""
    q, qd, tau = np.array([0.3, -0.7]), np.array([0.5, -1.0]), np.array([0.4, 0.1])
    for ratio in COINCIDENT_RATIOS:
        model = coincident_axes(ratio)
        m, f = pinocchio_system(model, q, qd, tau)
        cond = np.linalg.cond(m)
        err = rel(FORWARD(model, q, qd, tau), exact_solve(m, f))
        print(f"\nratio {ratio:.0e}: cond(M) {cond:.1e}, relative error {err:.1e}, cond eps {cond * EPS:.1e}")
        assert 0.5 / ratio < cond < 5 / ratio
        assert err <= cond * EPS


# --------------------------------------------------------------------------------------------
# Constrained solvers
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parallelogram():
    """The change-point four-bar (a parallelogram), at crank angles ``t`` near its flattened
    configuration ``t = 0``: ``q = (t, -t, t)`` closes the loop exactly, ``qd = (1, -1, 1)`` is
    admissible, and ``cond(Phi_q) ~ 4.3 / t``. With Lagrange's and the null-space solution,
    compiled once (eagerly, op by op, the two cost twice as long)."""
    mech = four_bar(variant="change_point")
    model, cons = mech.model, mech.constraints
    both = jit_once(lambda q, qd, tau: (kc.solve(model, cons, q, qd, tau), kc.solve(model, cons, q, qd, tau, "nullspace")))
    return model, cons, both


def parallelogram_state(t):
    return np.array([t, -t, t]), np.array([1.0, -1.0, 1.0]), np.array([0.3, 0.0, 0.0])


def kkt_reference(model, cons, q, qd, tau):
    """The exact solution ``(qdd, lambda)`` of ``[[M, -A^T], [A, 0]] [qdd; lambda] = [f; gamma]``."""
    m, f = pinocchio_system(model, q, qd, tau)
    a = np.asarray(cons.jacobian(jnp.asarray(q)))
    kkt = np.block([[m, -a.T], [a, np.zeros((a.shape[0], a.shape[0]))]])
    x = exact_solve(kkt, np.concatenate([f, np.asarray(cons.bias(jnp.asarray(q), jnp.asarray(qd)))]))
    return x[: model.nv], x[model.nv :], np.linalg.cond(a)


@pytest.mark.parametrize("t", [pytest.param(1e-8, marks=pytest.mark.slow), 1e-11])
def test_constrained_solvers_near_a_singular_configuration(parallelogram, t):
    """``cond(Phi_q)`` 4.3e8 and 4.3e11 (of the KKT matrix 4e15 and 4e21): Lagrange's
    accelerations and multipliers and the null-space accelerations stay at rounding level
    (measured 1e-15 to 4e-14); the null-space multipliers (from ``(A^+)^T (M qdd - f)``) lose up to
    ``cond(Phi_q) eps`` (measured 2.6e-8 at 4.3e8, 3.6e-5 at 4.3e11)."""
    model, cons, both = parallelogram
    q, qd, tau = parallelogram_state(t)
    qdd, lam, cond = kkt_reference(model, cons, q, qd, tau)
    lagrange, nullspace = both(q, qd, tau)
    errors = [rel(lagrange.vd, qdd), rel(lagrange.forces, lam), rel(nullspace.vd, qdd), rel(nullspace.forces, lam)]
    print(f"\nt {t:.0e}: cond(Phi_q) {cond:.1e}; lagrange, nullspace (qdd, lambda): {np.array(errors)}")
    assert 1 / t < cond < 10 / t
    assert max(errors[:3]) <= 1e-13
    assert errors[3] <= cond * EPS
    assert int(lagrange.rank) == int(nullspace.rank) == 2


def test_constrained_solvers_refuse_digitless_results(parallelogram):
    """At ``t = 1e-12`` (``cond(Phi_q)`` 4.3e12, above ``1 / rtol = eps^-0.75 = 5.5e11``) the
    Lagrange and null-space systems are singular to working precision: they raise, naming the
    rank, under ``jit`` too, instead of returning multipliers without digits."""
    _, _, both = parallelogram
    with pytest.raises(Exception, match="rank 1 < 2 equations"):
        both(*parallelogram_state(1e-12))


@pytest.mark.slow
def test_huang_step_near_a_singular_configuration(parallelogram):
    """Huang's step system ``Phi_Q`` (cond 1.7e11 at ``t = 1e-8``) is solved to rounding level
    (measured 2e-13) against its exact solution; at ``t = 1e-10`` (cond 1.7e13, above
    ``1 / rtol``) the step reports rank 1 of 2: the least-squares step, documented, whose
    reactions differ from the (digit-less) exact ones."""
    model, cons, _ = parallelogram
    dt = 1e-3
    for t, rank in ((1e-8, 2), (1e-10, 1)):
        q, qd, tau = parallelogram_state(t)
        system = kc.huang_system(model, cons, q, qd, tau, dt)
        huang = kc.solve(model, cons, q, qd, tau, "huang", dt=dt)
        assert int(huang.rank) == rank
        if rank == 2:
            reactions = exact_solve(system.phi_q, -np.asarray(system.psi))
            m, f = pinocchio_system(model, q, qd, tau)
            print(f"\nhuang: cond(Phi_Q) {np.linalg.cond(system.phi_q):.1e}, Q {rel(huang.forces, reactions):.1e}")
            assert rel(huang.forces, reactions) <= 1e-11
            assert rel(huang.vd, exact_solve(m, f + np.asarray(system.z).T @ reactions)) <= 1e-11


# --------------------------------------------------------------------------------------------
# Identification
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_regressor():
    """Six independent columns (QR with column pivoting) of Pinocchio's regressor of the double
    pendulum over 40 random states (80 rows; its 20 columns have rank 6), with a unit vector
    that a seventh, nearly dependent column is built from, and parameters."""
    model = kj.models.double_pendulum()
    pm = to_pinocchio(model)
    data = pm.createData()
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-np.pi, np.pi, (40, 2)), rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    y = np.concatenate([pin.computeJointTorqueRegressor(pm, data, *s).copy() for s in zip(q, qd, qdd)])
    _, _, order = scipy.linalg.qr(y, pivoting=True)
    w = y[:, np.sort(order[:6])]
    assert np.linalg.cond(w) < 1e3
    noise = rng.normal(size=w.shape[0])
    return w, noise / np.linalg.norm(noise), rng.normal(size=7)


def nearly_dependent(w, unit, delta):
    """``w`` with a column ``delta`` (relative) away from its first one: ``cond ~ 2.6 / delta``."""
    scale = np.linalg.norm(w[:, 1])
    column = w[:, 0] / np.linalg.norm(w[:, 0]) * scale + delta * scale * unit
    return np.concatenate([w, column[:, None]], axis=1)


@pytest.mark.parametrize("delta", [1e-8, 1e-12])
def test_least_squares_loses_cond_eps(base_regressor, delta):
    """Regressor condition numbers 2.6e8 and 2.6e12: the estimate's relative error is within
    ``cond eps`` (measured 6e-9 and 4e-5) of the exact least-squares solution, with no warning."""
    w, unit, beta = base_regressor
    y = nearly_dependent(w, unit, delta)
    tau = y @ beta
    cond = np.linalg.cond(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate = ki.least_squares(y, tau)
    err = rel(estimate, exact_least_squares(y, tau))
    print(f"\ndelta {delta:.0e}: cond {cond:.1e}, relative error {err:.1e}")
    assert 1 / delta < cond < 10 / delta
    assert err <= cond * EPS


def test_least_squares_warns_without_digits(base_regressor):
    """Where the smallest singular value is at rounding level (cond 2.6e14 in float64, above
    ``1 / (eps rows)`` = 5.6e13; 2.6e6 in float32, above 1.1e5) the estimate has no correct digit
    along it (error 0.65 against the exact solution): a ``UserWarning`` names the regressor's
    condition number. Under ``jit`` the same minimum-norm estimate comes back, finite, silently."""
    w, unit, beta = base_regressor
    y = nearly_dependent(w, unit, 1e-14)
    tau = y @ beta
    with pytest.warns(UserWarning, match=r"least_squares: the regressor has condition number .* float64"):
        estimate = ki.least_squares(y, tau)
    assert rel(estimate, exact_least_squares(y, tau)) > 0.1
    assert np.all(np.isfinite(np.asarray(jax.jit(ki.least_squares)(y, tau))))
    y32 = nearly_dependent(w, unit, 1e-6).astype(np.float32)
    with pytest.warns(UserWarning, match=r"condition number .* float32"):
        ki.least_squares(y32, (y32 @ beta.astype(np.float32)))
    with pytest.warns(UserWarning, match="weighted_least_squares"):
        ki.weighted_least_squares(y.reshape(40, 2, 7), tau.reshape(40, 2))
