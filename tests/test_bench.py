"""The benchmark suite (bench/) end to end on a tiny configuration: every section runs, the result
files are written, and kronjax agrees with Pinocchio in every measurement. Timings are not
checked (the targets live in the report's Goals table)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pinocchio")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import kronjax as kj  # noqa: E402
from bench.__main__ import main  # noqa: E402


@pytest.mark.slow
def test_quick_bench_writes_results_that_agree_with_pinocchio(tmp_path, capsys):
    paths = main(
        [
            "--quick",
            "--no-peers",
            "--no-float32",
            "--batches",
            "8",
            "--big",
            "8",
            "--scaling-n",
            "4",
            "6",
            "--chain-n",
            "6",
            "--out",
            str(tmp_path),
            "--sections",
            "inverse",
            "forward",
            "coriolis",
            "scaling",
            "compile",
        ]
    )
    assert {"md", "json", "png"} <= set(paths)
    assert all(Path(p).exists() and Path(p).stat().st_size > 0 for p in paths.values())

    data = json.loads(Path(paths["json"]).read_text())
    records = data["records"]
    assert not [r for r in records if r["note"].startswith("failed")], capsys.readouterr().out
    assert {r["operation"] for r in records} == {"inverse_dynamics", "forward_dynamics", "coriolis", "scaling", "compile"}
    # a C++ estimate is absent where the binding overhead measured more than the call (loaded machine)
    timed = [r for r in records if r["operation"] != "compile" and not r["method"].endswith("C++ est.)")]
    assert all(r["seconds_per_sample"] > 0 and r["samples_per_s"] > 0 for r in timed)
    kron = [r for r in timed if r["library"] == "kronjax"]
    assert kron and all(r["rel_err"] < 1e-9 for r in kron)  # float64, same samples as Pinocchio
    assert {r["method"] for r in kron} >= {"rnea", "kron", "forward_dynamics", "coriolis_star", "coriolis_matrix"}
    compile_rows = [r for r in records if r["operation"] == "compile"]
    assert len(compile_rows) == 4 and all(r["compile_s"] > 0 for r in compile_rows)

    exponents = {(e["library"], e["method"]): e for e in data["exponents"]}
    assert exponents[("kronjax", "coriolis_star")]["n"] == [4, 6]
    assert exponents[("kronjax", "coriolis_star")]["exponent"] is not None
    assert data["goals"] and data["peers"]["pinocchio"]["available"]
    text = Path(paths["md"]).read_text()
    assert "## Inverse dynamics (Panda)" in text and "## Scaling" in text and "fitted exponent" in text


@pytest.mark.slow
def test_quick_kinematics_scaling_agrees_with_pinocchio(tmp_path, capsys):
    """Issue 14's growth of J and H with n (the cheapest of its sections to compile; `kinematics`
    and `derivatives` share its code): every body's J and H against Pinocchio's at frames placed
    on kronjax's body frames (standard D-H arms, where they are not the URDF joint frames), the
    fitted exponents and their goals. A function this kronjax lacks is a skipped record."""
    paths = main(["--quick", "--no-peers", "--scaling-n", "3", "5", "--out", str(tmp_path), "--sections", "kinematics_scaling"])
    data = json.loads(Path(paths["json"]).read_text())
    records = data["records"]
    assert not [r for r in records if r["note"].startswith("failed")], capsys.readouterr().out
    assert {r["model"] for r in records} == {"chain3", "chain5"}
    kron = [r for r in records if r["library"] == "kronjax"]
    assert {r["method"] for r in kron} == {"jacobians", "hessians"}
    timed = [r for r in kron if not r["note"].startswith("skipped")]
    assert all(r["rel_err"] < 1e-9 and r["seconds_per_sample"] > 0 for r in timed)
    pin = {r["method"] for r in records if r["library"] == "pinocchio" and r["seconds_per_call"]}
    assert {"computeJointJacobians (per call)", "computeJointKinematicHessians (per call)"} <= pin
    if all(hasattr(kj, name) for name in ("jacobians", "hessians")):
        assert len(timed) == 4
        exponents = {e["method"]: e for e in data["exponents"] if e["library"] == "kronjax"}
        assert exponents["jacobians"]["n"] == exponents["hessians"]["n"] == [3, 5]
        assert any(g["goal"].startswith("hessians cost exponent") for g in data["goals"])


def test_pinocchio_references_of_issue_14_are_consistent():
    """The Panda references of the `kinematics` and `derivatives` sections, in kronjax's layouts,
    against each other (no JAX compilation): dJ/dt = H (qd ⊗ E_n) (Tuan 8) with the Hessians
    converted from Pinocchio's tensor layout, and the last outputs of computeRNEADerivatives and
    computeABADerivatives are M (symmetrised from its upper triangle) and M^-1."""
    import numpy as np

    from bench import models
    from bench.peers import Pinocchio
    from bench.suite import Suite

    model = models.panda()
    pin = Pinocchio(models.panda_urdf())
    s = models.samples(model, 4, seed=3)
    frames = Suite.body_frames(pin, model, s["q"][0])
    n = model.nv
    hessians = pin.hessians(s["q"], frames)
    for h, jd in zip(hessians, pin.jacobians_dot(s["q"], s["qd"], frames)):
        assert h.shape == (4, model.n_bodies, 3, n * n)
        np.testing.assert_allclose(np.einsum("bipjk,bk->bipj", h.reshape(4, -1, 3, n, n), s["qd"]), jd, atol=1e-12)
    m = pin.rnea_derivatives(s["q"], s["qd"], s["qdd"])[2]
    np.testing.assert_allclose(m, np.swapaxes(m, 1, 2))
    np.testing.assert_allclose(
        pin.aba_derivatives(s["q"], s["qd"], s["tau"])[2] @ m, np.broadcast_to(np.eye(n), m.shape), atol=1e-9
    )


@pytest.mark.slow
def test_gpu_bench_on_the_cpu_writes_samples_that_verify_against_pinocchio(tmp_path, capfd, monkeypatch):
    """`python -m bench.gpu --allow-cpu` (the script's check where no GPU is), as on a GPU machine
    without Pinocchio: the report is written with the timings and no errors, and `--verify`
    compares the saved samples (each batch's leading and trailing ones) with Pinocchio afterwards.
    `coriolis_star` is compared through its contraction with qd kron qd, the Hessians are a tuple;
    ANYmal's rows (a free-flyer, legs ordered otherwise than in Pinocchio) through the `legged`
    section's references."""
    from bench import gpu

    def no_pinocchio(samples):
        raise ImportError("No module named 'pinocchio' (the test's stand-in)")

    monkeypatch.setattr(gpu, "_check", no_pinocchio)
    argv = ["--allow-cpu", "--batches", "8", "5", "--operations", "coriolis_star", "hessians", "--largest"]
    argv += ["--robots", "anymal", "--robot-operations", "mass_matrix", "inverse_dynamics"]
    argv += ["--precisions", "float64", "--check", "2", "--out", str(tmp_path), "--tag", "smoke"]
    assert gpu.main(argv) == 0
    (report,) = tmp_path.glob("*-gpu-cpu-smoke.json")
    data = json.loads(report.read_text())
    legged = [(f"anymal {op}", batch) for op in ("mass_matrix", "inverse_dynamics") for batch in (8, 5)]
    assert [(r["method"], r["batch"]) for r in data["records"]] == [
        ("coriolis_star", 8),
        ("coriolis_star", 5),
        ("hessians", 8),
        ("hessians", 5),
        *legged,
    ]
    assert all(r["samples_per_s"] > 0 and r["rel_err"] is None for r in data["records"]), capfd.readouterr().out
    assert "none yet" in report.with_suffix(".md").read_text()

    # in a process of its own, as a user runs it: without the tests' jax_enable_x64
    verify = [sys.executable, "-m", "bench.gpu", "--verify", str(report)]
    assert subprocess.run(verify, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT))).returncode == 0
    data = json.loads(report.read_text())
    assert all(r["rel_err"] < 1e-12 for r in data["records"]), capfd.readouterr().out
    assert data["meta"]["checked"]["pinocchio"] and "Pinocchio" in report.with_suffix(".md").read_text()
    saved = np.load(report.with_name(report.stem + "-samples.npz"))
    assert saved["coriolis_star|float64|8/q"].shape == (4, 7) and saved["hessians|float64|5/out0"].shape == (4, 7, 3, 49)


@pytest.mark.slow
def test_legged_references_are_in_kronjax_layout():
    """The Pinocchio references of the `legged` section on ANYmal, whose legs kronjax orders
    otherwise than Pinocchio: inverse dynamics equals kronjax's on one state (the joints matched by
    name), M a = rnea(q, v, a) - rnea(q, v, 0), the derivatives' last outputs are M and M^-1, a
    hip's angular Jacobian has columns on the base and on its own joint only, and the
    compile-time models cover nv 7 and 100."""
    from checks import TOL, assert_close

    from bench import legged, models
    from bench.floating import Humanoid

    try:
        path = legged.robot_file(legged.ROBOTS["anymal"][0])
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    robot = Humanoid(path, 2, 2, threads=1)
    assert list(robot.pm.names[2:]) != list(robot.joint_names)  # the permutation is exercised
    out = legged.pinocchio_outputs(robot)
    q, v, a = robot.pin_q(robot.q)[0], robot.pin_v(robot.v)[0], robot.pin_v(robot.a)[0]
    (tau,) = out["inverse_dynamics"](q, v, a)
    assert_close(tau, kj.inverse_dynamics(robot.model, robot.q[0], robot.v[0], robot.a[0]), "rnea", relative=True)
    (m,) = out["mass_matrix"](q)
    (bias,) = out["inverse_dynamics"](q, v, 0 * a)
    assert_close(m @ robot.a[0], tau - bias, "M a", relative=True)
    assert_close(out["inverse_dynamics_derivatives"](q, v, a)[2], m, "dtau/dvd", relative=True)
    assert_close(out["forward_dynamics_derivatives"](q, v, tau)[2] @ m, np.eye(robot.nv), "M^-1 M", tol=1e-9)
    (acc,) = out["forward_dynamics"](q, v, robot.pin_v(tau[None])[0])
    assert_close(acc, robot.a[0], "aba", tol=1e-9)
    j_t, j_r = out["jacobians"](q)
    assert j_t.shape == j_r.shape == (robot.model.n_bodies, 3, robot.nv)
    hip = list(robot.model.joint_names).index("RF_HAA")
    assert set(np.flatnonzero(np.abs(j_r[hip]).max(0) > TOL)) <= {3, 4, 5, 6 + robot.joint_names.index("RF_HAA")}
    assert models.panda().nv == 7 and models.random_chain(legged.CHAIN_N, seed=legged.CHAIN_N).nv == 100


def test_second_order_helpers():
    """Section `second_order`'s helpers: its method names are the report's, the batch under the
    memory cap, the Hessian of lam . tau from Khang-layout tensors (as kj.inverse_dynamics_hessian
    contracts kronjax's own), and d2tau_dq2 compared symmetrised only when it differs in the
    free-flyer block alone."""
    from bench import report, second_order

    kronjax_methods = [
        "inverse_dynamics_derivatives",
        "inverse_dynamics_second_derivatives",
        "inverse_dynamics_hessian",
        *(second_order.JAX_HESSIAN.format(d) for d in ("analytic", "autodiff")),
    ]
    assert [*kronjax_methods, second_order.FLOOR, *second_order.PINOCCHIO_TIMINGS] == list(report.SECOND_ORDER)
    assert second_order.batch_for(9, 10_000, 2**30, 64) == 10_000
    assert second_order.batch_for(50, 10_000, 2**30, 64) == 200  # 4 MB a sample
    assert second_order.batch_for(50, 10_000, 2**20, 64) == 64

    model = kj.models.double_pendulum()
    q, v, vd, lam = np.array([0.3, 0.7]), np.array([1.0, -2.0]), np.array([0.5, 0.2]), np.array([0.4, -1.0])
    tensors = {
        f: np.asarray(t)[None] for f, t in zip(second_order.FIELDS, kj.inverse_dynamics_second_derivatives(model, q, v, vd))
    }
    hessian, vd_q = second_order.hessian_reference(tensors, lam[None])
    ours = kj.inverse_dynamics_hessian(model, q, v, vd, lam)
    np.testing.assert_allclose(hessian[0], ours[0], atol=1e-12)
    np.testing.assert_allclose(vd_q[0], ours[1], atol=1e-12)

    rng, nv = np.random.default_rng(0), 8
    ref = {f: rng.normal(size=(2, nv, nv * nv)) for f in second_order.FIELDS}
    skew = np.zeros((2, nv, nv, nv))
    skew[:, :, 1, 4], skew[:, :, 4, 1] = 1.0, -1.0  # an antisymmetric change in the free-flyer block
    out = dict(ref, d2tau_dq2=ref["d2tau_dq2"] + skew.reshape(2, nv, nv * nv))
    error, errors, note = second_order.tensor_errors(out, ref, free_flyer=True)
    assert error < 1e-15 and errors["d2tau_dq2_raw"] > 0.1 and "symmetrised" in note
    assert second_order.tensor_errors(out, ref, free_flyer=False)[0] > 0.1  # fixed base: as it comes
    skew[:, :, 1, 7] = 1.0  # outside the block: not symmetrised
    out = dict(ref, d2tau_dq2=ref["d2tau_dq2"] + skew.reshape(2, nv, nv * nv))
    error, _, note = second_order.tensor_errors(out, ref, free_flyer=True)
    assert error > 0.1 and "outside" in note


def test_floor_writes_new_arrays_of_the_outputs_shapes():
    """The floor of the `derivatives` and `legged` sections (`bench._timing.outputs_alone`): under
    `vmap`, arrays of the operation's batched output shapes and dtypes, each sample's entries its
    first input's first number."""
    import jax
    import jax.numpy as jnp

    from bench import models
    from bench._timing import outputs_alone

    model = models.panda()

    def fn(q, v, a):
        return kj.inverse_dynamics_derivatives(model, q, v, a)

    args = tuple(jnp.linspace(0.1, 0.9, 3 * model.nv).reshape(3, model.nv) + k for k in range(3))
    out = jax.vmap(fn)(*args)
    floor = jax.jit(jax.vmap(outputs_alone(fn, *(a[0] for a in args))))(*args)
    assert [(x.shape, x.dtype) for x in jax.tree.leaves(out)] == [(x.shape, x.dtype) for x in jax.tree.leaves(floor)]
    assert all(bool(jnp.all(x == args[0][:, :1].reshape((3,) + (1,) * (x.ndim - 1)))) for x in jax.tree.leaves(floor))
