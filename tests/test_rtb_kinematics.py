"""kronjax against Robotics Toolbox for Python (rtb 1.5) on its D-H models.

Each robot is rebuilt with :func:`kronjax.from_dh` from rtb's own link parameters (``d, a, alpha,
offset`` and the joint type are read from ``robot.links``, no table is typed in here), then at 20
random configurations within the joint limits kronjax's frames, Jacobians and Hessians of the last
body are compared to 1e-10 with ``fkine``, ``fkine_all``, ``jacob0``, ``jacobe``, ``hessian0`` and
``hessiane``.

* Base: every robot here has an identity ``robot.base``; the fixture asserts it (kronjax's base
  frame is rtb's world frame).
* Tool: the Panda has a flange ``tool`` (0.103 m along z, -45 deg about z). The main comparisons
  use a deep copy with ``tool = SE3()``, so rtb's end-effector frame is the last D-H frame, kronjax's
  last body. ``test_tool_composed`` then uses the original robot and composes the tool on kronjax's
  side: pose ``T_last * tool``, the tool origin as ``point=`` of the Jacobians/Hessians and the tool
  rotation for the end-effector-frame Jacobian.
* Layouts: rtb's ``hessian0(q)[k, :, j] = dJ0[:, j]/dq_k`` (checked by finite differences in
  ``test_hessian0_layout_by_finite_differences``); kronjax's Khang layout holds
  ``dJ[p, j]/dq_k`` at ``(p, j n + k)``, so ``H_T[p, j n + k] == hessian0[k, p, j]`` and
  ``H_R[p, j n + k] == hessian0[k, 3 + p, j]``.
* ``hessiane`` is NOT ``d(jacobe)/dq``: it is ``hessian0`` with each 3-block rotated into the
  end-effector axes, ``A^T H^(0)`` (the acceleration in end-effector axes). Hence (checked in
  ``test_hessiane_definition_by_finite_differences``):
    - translational: ``hessiane[:, :3]`` equals kronjax ``frame="body*"`` (Khang 58), exactly;
      kronjax ``frame="body"`` (53) is ``d(jacobe[:3])/dq`` and is a different matrix;
    - rotational: kronjax ``frame="body"`` (61) is ``d(jacobe[3:])/dq``; it and ``hessiane[:, 3:]``
      define the same quadratic form (the angular acceleration in end-effector axes), so only
      their symmetric parts ``H[:, j, k] + H[:, k, j]`` are compared; ``hessiane[:, 3:]`` itself
      is compared exactly with ``A^T H_R^(0)`` built from kronjax's base-frame ``H_R``.

Besides the two robots asked for (Puma 560, standard D-H; Panda, modified D-H), the Stanford arm
(a prismatic joint: rtb uses ``d = q + offset`` and ignores ``link.d``) and the AL5D (modified D-H,
non-zero ``theta`` offsets, a tool) exercise the other paths of the table reader.
"""

import copy

import numpy as np
import pytest

rtb = pytest.importorskip("roboticstoolbox")
SE3 = pytest.importorskip("spatialmath").SE3

import jax  # noqa: E402
from checks import assert_close  # noqa: E402
from oracles import dh_rows  # noqa: E402

import kronjax as kj  # noqa: E402

N_CONFIGS = 20
SEED = 20240607
FD_STEP = 1e-6
FD_TOL = 1e-8  # central differences with step 1e-6: roundoff ~ eps / h ~ 1e-10

ROBOTS = {
    "Puma560": "standard",
    "Panda": "modified",
    "Stanford": "standard",
    "AL5D": "modified",
}


def khang_to_rtb(h):
    """``(3, n^2)`` Khang layout ``[p, j n + k]`` -> ``(n, 3, n)`` rtb layout ``[k, p, j]``."""
    h = np.asarray(h)
    n = int(round(np.sqrt(h.shape[1])))
    return h.reshape(3, n, n).transpose(2, 0, 1)


def symmetric_part(h):
    """``H[k, :, j] + H[j, :, k]`` of an rtb-layout Hessian: what ``H (qd ⊗ qd)`` sees."""
    return h + h.transpose(2, 1, 0)


def kronjax_bundle(model, tool_point):
    """Everything about the last body, jit-compiled once per robot."""
    b = model.n_bodies - 1

    @jax.jit
    def bundle(q):
        rotations, origins = kj.forward_kinematics(model, q)
        out = {"R": rotations, "p": origins}
        for frame in ("base", "body"):
            out[f"JT_{frame}"] = kj.translational_jacobian(model, q, b, frame=frame)
            out[f"JR_{frame}"] = kj.rotational_jacobian(model, q, b, frame=frame)
            out[f"HR_{frame}"] = kj.rotational_hessian(model, q, b, frame=frame)
        for frame in ("base", "body", "body*"):
            out[f"HT_{frame}"] = kj.translational_hessian(model, q, b, frame=frame)
        # the tool origin as a point fixed on the last body
        out["JT_base_tool"] = kj.translational_jacobian(model, q, b, point=tool_point, frame="base")
        out["JT_body_tool"] = kj.translational_jacobian(model, q, b, point=tool_point, frame="body")
        out["HT_base_tool"] = kj.translational_hessian(model, q, b, point=tool_point, frame="base")
        return out

    return lambda q: {k: np.asarray(v) for k, v in bundle(q).items()}


@pytest.fixture(scope="module", params=list(ROBOTS))
def case(request):
    name, convention = request.param, ROBOTS[request.param]
    robot = getattr(rtb.models.DH, name)()
    assert bool(robot.mdh) == (convention == "modified"), f"{name} is not {convention} D-H in rtb"
    np.testing.assert_array_equal(robot.base.A, np.eye(4), err_msg=f"{name}: non-identity base")
    bare = copy.deepcopy(robot)
    bare.tool = SE3()  # end-effector frame = last D-H frame = kronjax's last body
    assert np.array_equal(bare.tool.A, np.eye(4)) and bare.n == robot.n

    model = kj.from_dh(dh_rows(robot), convention=convention)
    n = robot.n
    assert model.nv == n and model.n_bodies == n
    assert model.kinematics.kinds == tuple("P" if link.isprismatic else "R" for link in robot.links)

    qlim = np.asarray(robot.qlim, dtype=float)
    assert qlim.shape == (2, n) and np.all(np.isfinite(qlim)) and np.all(qlim[0] < qlim[1])
    qs = np.random.default_rng(SEED).uniform(qlim[0], qlim[1], size=(N_CONFIGS, n))

    tool = np.asarray(robot.tool.A)
    bundle = kronjax_bundle(model, tool[:3, 3])
    return {
        "name": name,
        "robot": robot,
        "bare": bare,
        "model": model,
        "tool": tool,
        "qs": qs,
        "kj": [bundle(q) for q in qs],
    }


def test_end_effector_pose(case):
    for q, out in zip(case["qs"], case["kj"]):
        t = np.asarray(case["bare"].fkine(q).A)
        assert_close(out["R"][-1], t[:3, :3], f"{case['name']} fkine rotation")
        assert_close(out["p"][-1], t[:3, 3], f"{case['name']} fkine origin")


def test_all_frames(case):
    bare = case["bare"]
    for q, out in zip(case["qs"], case["kj"]):
        frames = bare.fkine_all(q)
        assert len(frames) == bare.n + 1  # rtb 1.5: the base frame first, then links 1..n
        assert_close(frames[0].A, np.eye(4), f"{case['name']} fkine_all base frame")
        for i in range(bare.n):
            t = np.asarray(frames[i + 1].A)
            assert_close(out["R"][i], t[:3, :3], f"{case['name']} fkine_all rotation of body {i}")
            assert_close(out["p"][i], t[:3, 3], f"{case['name']} fkine_all origin of body {i}")


def test_jacob0(case):
    for q, out in zip(case["qs"], case["kj"]):
        j0 = case["bare"].jacob0(q)  # rows [v; w], base frame
        assert_close(out["JT_base"], j0[:3], f"{case['name']} jacob0 translational")
        assert_close(out["JR_base"], j0[3:], f"{case['name']} jacob0 rotational")


def test_jacobe(case):
    for q, out in zip(case["qs"], case["kj"]):
        je = case["bare"].jacobe(q)  # rows [v; w], end-effector axes
        assert_close(out["JT_body"], je[:3], f"{case['name']} jacobe translational")
        assert_close(out["JR_body"], je[3:], f"{case['name']} jacobe rotational")


def _central_difference(fn, q):
    """``[k] = d fn / dq_k`` by central differences (stacked along a new first axis)."""
    steps = FD_STEP * np.eye(q.shape[0])
    return np.stack([(fn(q + e) - fn(q - e)) / (2 * FD_STEP) for e in steps])


def test_hessian0_layout_by_finite_differences(case):
    """rtb's ``hessian0(q)[k, :, j] == d jacob0(q)[:, j] / dq_k`` (not the transpose: the
    rotational block is not symmetric in ``j, k``), and so is kronjax's base Hessian."""
    bare, q, out = case["bare"], case["qs"][0], case["kj"][0]
    fd = _central_difference(bare.jacob0, q)  # [k, :, j]
    h0 = bare.hessian0(q)
    assert h0.shape == (bare.n, 6, bare.n)
    assert_close(h0, fd, f"{case['name']} hessian0 vs d(jacob0)/dq", FD_TOL)
    assert np.max(np.abs(h0.transpose(2, 1, 0) - fd)) > 1e-3  # the layout claim is testable
    assert_close(khang_to_rtb(out["HT_base"]), fd[:, :3], f"{case['name']} kronjax H_T base vs FD", FD_TOL)
    assert_close(khang_to_rtb(out["HR_base"]), fd[:, 3:], f"{case['name']} kronjax H_R base vs FD", FD_TOL)


def test_hessian0(case):
    for q, out in zip(case["qs"], case["kj"]):
        h0 = case["bare"].hessian0(q)
        # H_T[p, j n + k] == hessian0[k, p, j]
        assert_close(khang_to_rtb(out["HT_base"]), h0[:, :3], f"{case['name']} hessian0 translational")
        assert_close(khang_to_rtb(out["HR_base"]), h0[:, 3:], f"{case['name']} hessian0 rotational")


def test_hessiane_definition_by_finite_differences(case):
    """Which kronjax body-frame Hessian ``hessiane`` coincides with (see the module docstring)."""
    bare, q, out = case["bare"], case["qs"][0], case["kj"][0]
    fd = _central_difference(bare.jacobe, q)  # [k, :, j] = d jacobe[:, j] / dq_k
    he, h0 = bare.hessiane(q), bare.hessian0(q)
    rot = np.asarray(bare.fkine(q).A)[:3, :3]
    # kronjax "body" Hessians are the derivatives of the body-frame Jacobians ...
    assert_close(khang_to_rtb(out["HT_body"]), fd[:, :3], f"{case['name']} kronjax H_T body vs FD", FD_TOL)
    assert_close(khang_to_rtb(out["HR_body"]), fd[:, 3:], f"{case['name']} kronjax H_R body vs FD", FD_TOL)
    # ... rtb's hessiane is not ...
    assert np.max(np.abs(he[:, :3] - fd[:, :3])) > 1e-3
    assert np.max(np.abs(he[:, 3:] - fd[:, 3:])) > 1e-3
    # ... it is hessian0 rotated into end-effector axes, A^T H^(0), blockwise
    assert_close(he[:, :3], np.einsum("ip,kij->kpj", rot, h0[:, :3]), f"{case['name']} hessiane T = A^T hessian0 T")
    assert_close(he[:, 3:], np.einsum("ip,kij->kpj", rot, h0[:, 3:]), f"{case['name']} hessiane R = A^T hessian0 R")
    # and the rotational ones still agree as quadratic forms
    assert_close(symmetric_part(he[:, 3:]), symmetric_part(fd[:, 3:]), f"{case['name']} sym hessiane R vs FD", FD_TOL)


def test_hessiane(case):
    for q, out in zip(case["qs"], case["kj"]):
        he = case["bare"].hessiane(q)
        assert_close(khang_to_rtb(out["HT_body*"]), he[:, :3], f"{case['name']} hessiane translational vs body*")
        # exact: rtb's rotational hessiane is A^T H_R^(0) (kronjax has no "body*" for H_R)
        rot = out["R"][-1]
        assert_close(khang_to_rtb(rot.T @ out["HR_base"]), he[:, 3:], f"{case['name']} hessiane rotational vs A^T H_R base")
        assert_close(
            symmetric_part(khang_to_rtb(out["HR_body"])),
            symmetric_part(he[:, 3:]),
            f"{case['name']} hessiane rotational vs body (symmetric parts)",
        )


def test_tool_composed(case):
    """The original robot, tool included, against kronjax with the tool composed in.

    ``hessiane`` is left out: rtb 1.5's ``DHRobot.hessiane`` applies the tool twice
    (``DHRobot.ets()`` already ends with the tool and ``RobotKinematics.hessiane`` passes
    ``tool=self.tool`` again), so it does not match its own ``hessian0`` for the Panda.
    """
    robot, tool = case["robot"], case["tool"]
    tool_r = tool[:3, :3]
    for q, out in zip(case["qs"], case["kj"]):
        t_last = np.eye(4)
        t_last[:3, :3], t_last[:3, 3] = out["R"][-1], out["p"][-1]
        assert_close(t_last @ tool, robot.fkine(q).A, f"{case['name']} fkine with tool")
        j0 = robot.jacob0(q)
        assert_close(out["JT_base_tool"], j0[:3], f"{case['name']} jacob0 T with tool")
        assert_close(out["JR_base"], j0[3:], f"{case['name']} jacob0 R with tool")
        je = robot.jacobe(q)
        assert_close(tool_r.T @ out["JT_body_tool"], je[:3], f"{case['name']} jacobe T with tool")
        assert_close(tool_r.T @ out["JR_body"], je[3:], f"{case['name']} jacobe R with tool")
        h0 = robot.hessian0(q)
        assert_close(khang_to_rtb(out["HT_base_tool"]), h0[:, :3], f"{case['name']} hessian0 T with tool")
        assert_close(khang_to_rtb(out["HR_base"]), h0[:, 3:], f"{case['name']} hessian0 R with tool")
