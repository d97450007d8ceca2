"""Kinematics against Pinocchio: poses, Jacobians, kinematic Hessians and accelerations.

The same random 7-joint arm is built with Pinocchio's Model API and with
:func:`kronjax.from_joints`: revolute joints about the joint frame's z and x axes
(``JointModelRZ``, ``JointModelRX``) and about random unaligned axes
(``JointModelRevoluteUnaligned``), one ``JointModelPrismaticUnaligned``, random proper-rotation
joint placements; once as a serial chain and once as a branched tree. Both libraries place the
body frame at the joint frame after the joint motion, so kronjax body ``i`` is Pinocchio's joint
``i + 1`` (``oMi[i + 1]``) and ``q`` means the same (every joint has ``nq = nv = 1``).

What is compared with what (each definition checked by central differences of Pinocchio's own
Jacobians in :func:`test_pinocchio_hessian_layout`):

* ``LOCAL_WORLD_ALIGNED`` (LWA) Jacobian: linear rows ``d(origin)/dq`` = kronjax ``J_T`` (base),
  angular rows = ``J_R`` (base). Pinocchio's LWA kinematic Hessian is ``d J_LWA / dq`` in full,
  i.e. exactly kronjax's ``"base"`` Hessians, antisymmetric part included.
* ``LOCAL`` Jacobian: the same rows in body axes = kronjax ``frame="body"``. Pinocchio's LOCAL
  kinematic Hessian is ``d J_LOCAL / dq`` (NOT ``A^T d J_LWA / dq``), which is the definition of
  kronjax's ``"body"`` Hessians (Tuan eqs. 53, 61), so again the full tensors are compared.
* kronjax's ``"body*"`` translational Hessian (eq. 58, ``A_0^(i) H_T^(0)``) is not a Pinocchio
  Hessian; it is compared with Pinocchio's LWA linear Hessian rotated into body axes. It differs
  from the LOCAL linear Hessian by the derivative of ``A^T`` (in the quadratic form, by
  ``omega^(i) x v^(i)``), which :func:`test_local_hessian_is_not_rotated_world_hessian` checks.
* Points fixed on a body (kronjax ``point=``) vs Pinocchio's frame Jacobian and frame kinematic
  Hessian of a frame placed at that point (``getFrameJacobian`` / ``getFrameKinematicHessian``
  with a joint id and an ``SE3`` placement with identity rotation, so that LOCAL = body axes).
* Accelerations ``J qdd + H (qd ⊗ qd)`` vs Pinocchio's ``forwardKinematics(q, v, a)`` classical
  accelerations (``getClassicalAcceleration``): an independent recursion, not the Hessian routine.

Pinocchio 4.1's Python binding returns ``getJointKinematicHessian`` (and
``getFrameKinematicHessian``) as a ``6 x n x n`` array whose axes are scrambled: the column-major
Eigen tensor buffer is read with C strides. The true tensor ``T[r, j, k] = dJ[r, j]/dq_k`` is
``H.reshape(-1).reshape(H.shape, order="F")`` (:func:`unscramble`);
:func:`test_pinocchio_hessian_layout` checks that against finite differences and checks that the
raw output is wrong, so a future binding that fixes the layout makes that test fail first.

Khang's layout: ``H[p, j n + k] = T[p, j, k]``, a C-order reshape of ``T`` to ``6 x n^2``.
"""

import functools

import jax.numpy as jnp
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from checks import FD_TOL, assert_close  # noqa: E402
from oracles import jit_once  # noqa: E402

import kronjax as kj  # noqa: E402

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

N = 7
N_CONFIGS = 20
SEED = 7
FD_EPS = 1e-6
# Joint models, by body: Pinocchio's fixed-axis revolute joints about z and x, unaligned revolute
# joints about random axes ("RU") and one unaligned prismatic joint ("PU").
JOINT_TYPES = ("RZ", "RU", "RU", "PU", "RU", "RX", "RU")
PRISMATIC = JOINT_TYPES.index("PU")  # 0-based index of the prismatic joint (3)
PARENTS = {
    "chain": (-1, 0, 1, 2, 3, 4, 5),
    # bodies 5 and 6 (the paper's joints 6-7) branch off body 2 (joint 3): two leaves, 4 and 6
    "tree": (-1, 0, 1, 2, 3, 2, 5),
}
VARIANTS = tuple(PARENTS)
POINT_BODIES = (PRISMATIC, N - 1)  # bodies that also get a point fixed on them
REFERENCE_FRAMES = {"LWA": pin.LOCAL_WORLD_ALIGNED, "LOCAL": pin.LOCAL}


def random_rotation(rng):
    a, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return a * np.sign(np.linalg.det(a))  # a proper rotation (det = +1)


def unit(v):
    return v / np.linalg.norm(v)


class Arm:
    """The same arm as a Pinocchio model and a kronjax model (same random numbers).

    Attributes: ``pin_model``, ``kj_model``, ``points`` ``(N, 3)`` (a point on every body, in body
    coordinates; only those of :data:`POINT_BODIES` are used) and ``parents``.
    """

    def __init__(self, variant):
        rng = np.random.default_rng(SEED)
        self.parents = PARENTS[variant]
        self.pin_model = pin.Model()
        joints = []
        for i, kind in enumerate(JOINT_TYPES):
            random_axis = unit(rng.normal(size=3))
            rotation = random_rotation(rng)
            translation = rng.uniform(-0.4, 0.4, 3)
            joint_model, axis = {
                "RZ": (pin.JointModelRZ(), np.array([0.0, 0.0, 1.0])),
                "RX": (pin.JointModelRX(), np.array([1.0, 0.0, 0.0])),
                "RU": (pin.JointModelRevoluteUnaligned(random_axis), random_axis),
                "PU": (pin.JointModelPrismaticUnaligned(random_axis), random_axis),
            }[kind]
            jid = self.pin_model.addJoint(self.parents[i] + 1, joint_model, pin.SE3(rotation, translation), f"joint{i + 1}")
            assert jid == i + 1
            joints.append(kj.Joint(kind=kind[0], parent=self.parents[i], axis=axis, rotation=rotation, translation=translation))
        assert (self.pin_model.nq, self.pin_model.nv) == (N, N)
        assert tuple(p - 1 for p in self.pin_model.parents[1:]) == self.parents
        self.kj_model = kj.from_joints(joints)
        self.points = rng.uniform(-0.3, 0.3, (N, 3))

    def point_placement(self, body):
        return pin.SE3(np.eye(3), self.points[body])


@functools.cache
def arm(variant):
    return Arm(variant)


def states():
    """``(q, qd, qdd)``, each ``(N_CONFIGS, N)``."""
    rng = np.random.default_rng(SEED + 1)
    qs = rng.uniform(-np.pi, np.pi, (N_CONFIGS, N))
    qs[:, PRISMATIC] = rng.uniform(-0.5, 0.5, N_CONFIGS)
    return qs, rng.uniform(-2, 2, (N_CONFIGS, N)), rng.uniform(-2, 2, (N_CONFIGS, N))


# --------------------------------------------------------------------------------------------
# Pinocchio side
# --------------------------------------------------------------------------------------------


def unscramble(h):
    """``T[r, j, k] = dJ[r, j]/dq_k`` (6 x n x n) from Pinocchio 4.1's scrambled binding output."""
    h = np.asarray(h)
    return h.reshape(-1).reshape(h.shape, order="F")


def pin_jacobian(model, q, jid, rf, placement=None):
    data = model.createData()
    pin.computeJointJacobians(model, data, q)
    if placement is None:
        return pin.getJointJacobian(model, data, jid, rf)
    return pin.getFrameJacobian(model, data, jid, placement, rf)


def pin_hessian(model, data, jid, rf, placement=None):
    """Un-scrambled kinematic Hessian of a joint frame (or of a frame placed on the joint);
    needs ``pin.computeJointKinematicHessians`` at ``q`` first."""
    if placement is None:
        return unscramble(pin.getJointKinematicHessian(model, data, jid, rf))
    return unscramble(pin.getFrameKinematicHessian(model, data, jid, placement, rf))


def pinocchio_results(a: Arm, qs, qds, qdds):
    """Everything Pinocchio computes at the states, stacked ``(configs, bodies, ...)``; Hessians
    in Khang's layout ``6 x n^2``. ``pt_*`` entries: the points of :data:`POINT_BODIES`."""
    model = a.pin_model
    out = {}

    def add(key, value):
        out.setdefault(key, []).append(value)

    for q, qd, qdd in zip(qs, qds, qdds):
        data = model.createData()
        pin.forwardKinematics(model, data, q, qd, qdd)
        add("R", [data.oMi[i + 1].rotation.copy() for i in range(N)])
        add("p", [data.oMi[i + 1].translation.copy() for i in range(N)])
        for name, rf in REFERENCE_FRAMES.items():
            acc = [pin.getClassicalAcceleration(model, data, i + 1, rf) for i in range(N)]
            add(f"acc_{name}", [np.concatenate([m.linear, m.angular]) for m in acc])
        data = model.createData()
        pin.computeJointJacobians(model, data, q)
        pin.computeJointKinematicHessians(model, data, q)
        for name, rf in REFERENCE_FRAMES.items():
            add(f"J_{name}", [pin.getJointJacobian(model, data, i + 1, rf).copy() for i in range(N)])
            add(f"H_{name}", [pin_hessian(model, data, i + 1, rf).reshape(6, N * N) for i in range(N)])
            placements = [a.point_placement(b) for b in POINT_BODIES]
            add(
                f"pt_J_{name}", [pin.getFrameJacobian(model, data, b + 1, m, rf).copy() for b, m in zip(POINT_BODIES, placements)]
            )
            add(
                f"pt_H_{name}",
                [pin_hessian(model, data, b + 1, rf, m).reshape(6, N * N) for b, m in zip(POINT_BODIES, placements)],
            )
    return {k: np.asarray(v) for k, v in out.items()}


# --------------------------------------------------------------------------------------------
# kronjax side: one jitted function of q per model
# --------------------------------------------------------------------------------------------


def kronjax_function(a: Arm):
    """One jitted function of ``(q, qd)`` giving every kronjax quantity compared (not vmapped: that
    compiles faster, and the 20 calls cost nothing next to the compilation): the all-bodies
    functions, and the per-body ones (``single_*``) for the bodies of :data:`POINT_BODIES`."""
    model = a.kj_model
    points = jnp.asarray(a.points)

    def one(q, qd):
        rotations, origins = kj.forward_kinematics(model, q)
        out = {"R": rotations, "p": origins}
        for frame in ("base", "body"):
            out[f"JT_{frame}"], out[f"JR_{frame}"] = kj.jacobians(model, q, frame)
            out[f"HT_{frame}"], out[f"HR_{frame}"] = kj.hessians(model, q, frame)
            out[f"JdT_{frame}"], out[f"JdR_{frame}"] = kj.jacobians_dot(model, q, qd, frame)
            out[f"pt_JT_{frame}"] = kj.jacobians(model, q, frame, points=points)[0][jnp.array(POINT_BODIES)]
            out[f"pt_HT_{frame}"] = kj.hessians(model, q, frame, points=points)[0][jnp.array(POINT_BODIES)]
        out["HT_body*"], hr_star = kj.hessians(model, q, "body*")
        out["HR_body*"] = hr_star
        per_body = {
            "JT_base": lambda b: kj.translational_jacobian(model, q, b, frame="base"),
            "JR_base": lambda b: kj.rotational_jacobian(model, q, b, frame="base"),
            "JT_body": lambda b: kj.translational_jacobian(model, q, b, frame="body"),
            "JR_body": lambda b: kj.rotational_jacobian(model, q, b, frame="body"),
            "HT_base": lambda b: kj.translational_hessian(model, q, b, frame="base"),
            "HR_base": lambda b: kj.rotational_hessian(model, q, b, frame="base"),
            "HT_body": lambda b: kj.translational_hessian(model, q, b, frame="body"),
            "HR_body": lambda b: kj.rotational_hessian(model, q, b, frame="body"),
            "HT_body*": lambda b: kj.translational_hessian(model, q, b, frame="body*"),
            "pt_JT_base": lambda b: kj.translational_jacobian(model, q, b, points[b], frame="base"),
            "pt_JT_body": lambda b: kj.translational_jacobian(model, q, b, points[b], frame="body"),
            "pt_HT_base": lambda b: kj.translational_hessian(model, q, b, points[b], frame="base"),
            "pt_HT_body": lambda b: kj.translational_hessian(model, q, b, points[b], frame="body"),
        }
        for name, fn in per_body.items():
            out[f"single_{name}"] = jnp.stack([fn(b) for b in POINT_BODIES])
        return out

    return jit_once(one)


@functools.cache
def results(variant):
    """(Pinocchio results, kronjax results) at the 20 states; computed once per variant."""
    a = arm(variant)
    qs, qds, qdds = states()
    fn = kronjax_function(a)
    kj_out = [fn(jnp.asarray(q), jnp.asarray(qd)) for q, qd in zip(qs, qds)]
    kj_out = {k: np.stack([np.asarray(o[k]) for o in kj_out]) for k in kj_out[0]}
    return pinocchio_results(a, qs, qds, qdds), kj_out


def max_error(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)))


def rotate_to_body(rotations, h):
    """``A_0^(i) h`` for every config and body: ``rotations`` ``(c, b, 3, 3)``, ``h`` ``(c, b, 3, m)``."""
    return np.einsum("cbji,cbjk->cbik", rotations, h)


# kronjax quantity -> (what it is compared with, the Pinocchio value (configs, bodies, ...))
COMPARISONS = {
    "R": ("rotations vs oMi.rotation", lambda p: p["R"]),
    "p": ("origins vs oMi.translation", lambda p: p["p"]),
    "JT_base": ("J_T base vs LWA linear rows", lambda p: p["J_LWA"][:, :, :3]),
    "JR_base": ("J_R base vs LWA angular rows", lambda p: p["J_LWA"][:, :, 3:]),
    "JT_body": ("J_T body vs LOCAL linear rows", lambda p: p["J_LOCAL"][:, :, :3]),
    "JR_body": ("J_R body vs LOCAL angular rows", lambda p: p["J_LOCAL"][:, :, 3:]),
    "HT_base": ("H_T base vs LWA linear Hessian", lambda p: p["H_LWA"][:, :, :3]),
    "HR_base": ("H_R base vs LWA angular Hessian", lambda p: p["H_LWA"][:, :, 3:]),
    "HT_body": ("H_T body vs LOCAL linear Hessian", lambda p: p["H_LOCAL"][:, :, :3]),
    "HR_body": ("H_R body vs LOCAL angular Hessian", lambda p: p["H_LOCAL"][:, :, 3:]),
    "HT_body*": ("H*_T body* vs A^T (LWA linear Hessian)", lambda p: rotate_to_body(p["R"], p["H_LWA"][:, :, :3])),
    "HR_body*": ("H_R body* (= body, 61) vs LOCAL angular Hessian", lambda p: p["H_LOCAL"][:, :, 3:]),
    "pt_JT_base": ("point J_T base vs LWA frame Jacobian", lambda p: p["pt_J_LWA"][:, :, :3]),
    "pt_JT_body": ("point J_T body vs LOCAL frame Jacobian", lambda p: p["pt_J_LOCAL"][:, :, :3]),
    "pt_HT_base": ("point H_T base vs LWA frame Hessian", lambda p: p["pt_H_LWA"][:, :, :3]),
    "pt_HT_body": ("point H_T body vs LOCAL frame Hessian", lambda p: p["pt_H_LOCAL"][:, :, :3]),
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("quantity", list(COMPARISONS))
def test_against_pinocchio(variant, quantity):
    """Each quantity of the all-bodies functions, every body (or point), 20 random
    configurations, to 1e-10 (float64)."""
    pin_out, kj_out = results(variant)
    what, pin_value = COMPARISONS[quantity]
    assert_close(kj_out[quantity], pin_value(pin_out), f"{variant}: {what}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_single_body_functions_against_pinocchio(variant):
    """``translational_jacobian``, ..., ``rotational_hessian`` of single bodies (and points) equal
    Pinocchio's values too (they index the all-bodies functions)."""
    pin_out, kj_out = results(variant)
    for quantity, (what, pin_value) in COMPARISONS.items():
        if f"single_{quantity}" not in kj_out:
            continue
        expected = pin_value(pin_out)
        if not quantity.startswith("pt_"):
            expected = expected[:, list(POINT_BODIES)]
        assert_close(kj_out[f"single_{quantity}"], expected, f"{variant}: single body {what}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_hessians_give_pinocchio_accelerations(variant):
    """``J qdd + H (qd ⊗ qd)`` of every body, from kronjax's Jacobians and Hessians, equals the
    classical accelerations of Pinocchio's forward kinematics (an independent recursion):
    base Hessians -> LWA; ``body*`` (linear) and ``body`` (angular) -> LOCAL."""
    pin_out, kj_out = results(variant)
    qs, qds, qdds = states()
    qq = np.einsum("cj,ck->cjk", qds, qds).reshape(N_CONFIGS, 1, 1, N * N)

    def acc(j, h):  # (c, b, 3, n), (c, b, 3, n^2) -> (c, b, 3)
        return np.einsum("cbpj,cj->cbp", j, qdds) + np.sum(h * qq, axis=-1)

    assert_close(acc(kj_out["JT_base"], kj_out["HT_base"]), pin_out["acc_LWA"][..., :3], f"{variant}: linear base")
    assert_close(acc(kj_out["JR_base"], kj_out["HR_base"]), pin_out["acc_LWA"][..., 3:], f"{variant}: angular base")
    assert_close(acc(kj_out["JT_body"], kj_out["HT_body*"]), pin_out["acc_LOCAL"][..., :3], f"{variant}: linear body*")
    assert_close(acc(kj_out["JR_body"], kj_out["HR_body"]), pin_out["acc_LOCAL"][..., 3:], f"{variant}: angular body")
    assert_close(acc(kj_out["JR_body"], kj_out["HR_body*"]), pin_out["acc_LOCAL"][..., 3:], f"{variant}: angular body*")


@pytest.mark.parametrize("variant", VARIANTS)
def test_jacobians_dot_give_pinocchio_accelerations(variant):
    """``J qdd + (dJ/dt) qd`` of every body equals Pinocchio's classical accelerations: base frame
    -> LWA; in the body frame ``d(J^(i))/dt`` gives the derivative of the body-axes velocity, so
    ``J^(i) qdd + (dJ^(i)/dt) qd + omega^(i) x v^(i)`` -> LOCAL (linear), and the angular
    acceleration directly (``omega x omega = 0``)."""
    pin_out, kj_out = results(variant)
    qs, qds, qdds = states()

    def acc(j, jd):  # (c, b, 3, n) -> (c, b, 3)
        return np.einsum("cbpj,cj->cbp", j, qdds) + np.einsum("cbpj,cj->cbp", jd, qds)

    assert_close(acc(kj_out["JT_base"], kj_out["JdT_base"]), pin_out["acc_LWA"][..., :3], f"{variant}: linear base")
    assert_close(acc(kj_out["JR_base"], kj_out["JdR_base"]), pin_out["acc_LWA"][..., 3:], f"{variant}: angular base")
    omega = np.einsum("cbpj,cj->cbp", kj_out["JR_body"], qds)
    v = np.einsum("cbpj,cj->cbp", kj_out["JT_body"], qds)
    linear = acc(kj_out["JT_body"], kj_out["JdT_body"]) + np.cross(omega, v)
    assert_close(linear, pin_out["acc_LOCAL"][..., :3], f"{variant}: linear body")
    assert_close(acc(kj_out["JR_body"], kj_out["JdR_body"]), pin_out["acc_LOCAL"][..., 3:], f"{variant}: angular body")


@pytest.mark.parametrize("variant", VARIANTS)
def test_pinocchio_hessian_layout(variant):
    """Pinocchio's kinematic Hessians (joint frames and a frame placed at a point), un-scrambled
    by :func:`unscramble`, are ``dJ/dq`` of its own LWA and LOCAL Jacobians (central
    differences), antisymmetric part included; the raw binding output is not."""
    a = arm(variant)
    model = a.pin_model
    q = states()[0][0]
    data = model.createData()
    pin.computeJointJacobians(model, data, q)
    pin.computeJointKinematicHessians(model, data, q)
    eye = np.eye(N)
    targets = [(jid, None) for jid in range(1, N + 1)] + [(b + 1, a.point_placement(b)) for b in POINT_BODIES]
    for name, rf in REFERENCE_FRAMES.items():
        for jid, placement in targets:
            fd = np.stack(
                [
                    (
                        pin_jacobian(model, q + FD_EPS * eye[k], jid, rf, placement)
                        - pin_jacobian(model, q - FD_EPS * eye[k], jid, rf, placement)
                    )
                    / (2 * FD_EPS)
                    for k in range(N)
                ],
                axis=-1,
            )  # fd[r, j, k] = dJ[r, j]/dq_k
            what = f"{variant} {name} joint {jid}{'' if placement is None else ' point frame'}"
            assert_close(pin_hessian(model, data, jid, rf, placement), fd, f"{what}: un-scrambled Hessian vs FD", tol=FD_TOL)
            if jid == N:  # the last joint has a dense Hessian: the raw array is wrong
                getter = pin.getJointKinematicHessian if placement is None else pin.getFrameKinematicHessian
                raw = np.asarray(getter(model, data, jid, rf) if placement is None else getter(model, data, jid, placement, rf))
                assert max_error(raw, fd) > 1e-3, f"{what}: raw binding output already matches dJ/dq"


def test_local_hessian_is_not_rotated_world_hessian():
    """The definitions behind the "body" comparisons. Pinocchio's LOCAL linear Hessian (= kronjax
    "body", dJ^(i)/dq) differs from A^T times the LWA linear Hessian (= kronjax "body*"), also in
    the quadratic form: ``body*`` gives the acceleration in body axes (eq. 59), ``body`` the
    derivative of the body-frame velocity components (eq. 54); they differ by ``omega^(i) x v^(i)``.
    The angular ones differ too as tensors, but not in the quadratic form (``omega x omega = 0``).
    Except ``H_T`` base (a second derivative), the Hessians are not symmetric, so the full
    comparisons above test more than the symmetric part (the only part that a quadratic form
    ``H (qd ⊗ qd)`` determines)."""
    pin_out, kj_out = results("chain")
    local, lwa = pin_out["H_LOCAL"], pin_out["H_LWA"]
    rotated = rotate_to_body(pin_out["R"], lwa[:, :, :3])
    rotated_angular = rotate_to_body(pin_out["R"], lwa[:, :, 3:])
    assert max_error(local[:, :, :3], rotated) > 1e-2
    assert max_error(local[:, :, 3:], rotated_angular) > 1e-2
    qd = np.random.default_rng(SEED + 2).normal(size=N)
    qq = np.kron(qd, qd)
    assert max_error(local[:, :, :3] @ qq, rotated @ qq) > 1e-2
    omega = pin_out["J_LOCAL"][:, :, 3:] @ qd  # body-axes angular and linear velocities
    v = pin_out["J_LOCAL"][:, :, :3] @ qd
    assert_close(local[:, :, :3] @ qq, rotated @ qq - np.cross(omega, v), "LOCAL vs rotated LWA linear quadratic forms")
    assert_close(local[:, :, 3:] @ qq, rotated_angular @ qq, "LOCAL vs rotated LWA angular quadratic forms")
    assert_close(kj_out["HT_body"] @ qq, local[:, :, :3] @ qq, "body quadratic form")
    assert_close(kj_out["HT_body*"] @ qq, rotated @ qq, "body* quadratic form")
    # H_T base = d^2(origin)/dq^2 is symmetric; the others are not, so comparing them in full
    # tests more than the symmetric part
    assert_close(kj_out["HT_base"], np.asarray(kj.symmetrize(kj_out["HT_base"])), "H_T base symmetric")
    for key in ("HR_base", "HT_body", "HR_body"):
        assert max_error(kj_out[key], np.asarray(kj.symmetrize(kj_out[key]))) > 1e-2, key


@pytest.mark.parametrize("variant", VARIANTS)
def test_branches_are_independent(variant):
    """Columns of joints that are not ancestors of a body vanish in Pinocchio's Jacobians and
    Hessians and in kronjax's (the tree topology is the same in both models)."""
    pin_out, kj_out = results(variant)
    parents = PARENTS[variant]
    for b in range(N):
        ancestors, a = set(), b
        while a >= 0:
            ancestors.add(a)
            a = parents[a]
        others = [k for k in range(N) if k not in ancestors]
        if not others:
            continue
        assert np.all(pin_out["J_LWA"][:, b][:, :, others] == 0)
        h_pin = pin_out["H_LWA"][:, b].reshape(N_CONFIGS, 6, N, N)
        assert np.all(h_pin[:, :, others, :] == 0) and np.all(h_pin[:, :, :, others] == 0)
        np.testing.assert_array_equal(kj_out["JT_base"][:, b][:, :, others], 0)
        np.testing.assert_array_equal(kj_out["JR_base"][:, b][:, :, others], 0)
        for key in ("HT_base", "HR_base"):
            h = kj_out[key][:, b].reshape(N_CONFIGS, 3, N, N)
            np.testing.assert_array_equal(h[:, :, others, :], 0)
            np.testing.assert_array_equal(h[:, :, :, others], 0)
    if variant == "tree":  # the branch exists: body 6's Jacobian ignores joints 3-4
        assert np.all(kj_out["JT_base"][:, 6][:, :, [3, 4]] == 0)
