"""Beyond one host: kronjax on JAX's multi-controller runtime (docs/guides/multi-host.md), as two
processes of two CPU devices each on this machine, against one process's numbers.

Each process is ``tests/multihost_worker.py``: the Panda's inverse dynamics of a batch sharded
across both processes (``jax.jit(jax.vmap(...))``, ``kj.chunked_vmap`` under ``jit`` and outside,
with padding in each device's piece), kept sharded and gathered; and the normal equations of
identification reduced across the processes (a jitted sum over the sharded batch, ``psum`` in
``shard_map``), solved for the base parameters. Oracles, computed here on the whole batch in one
process: Pinocchio's ``rnea`` and joint-torque regressor (the Panda's body frames are its joint
frames, so the regressors have the same columns), and the true parameters.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pinocchio as pin
import pytest
from checks import EXACT_TOL, TOL, assert_close
from oracles import to_pinocchio

import kronjax as kj

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("multihost_worker.py")
N = 64  # 16 samples per device
TIMEOUT_S = 300  # about 40 s of CPU time in all on 2 cores; the rest is for a busy machine
# what XLA:CPU says when it has no cross-process collectives (jaxlib built without Gloo or MPI)
NO_COLLECTIVES = "Multiprocess computations aren't implemented on the CPU backend"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _dataset(model: kj.Model, folder: Path) -> dict[str, np.ndarray]:
    """Random states and Pinocchio's torques and regressor, written as the workers read them."""
    rng = np.random.default_rng(0)
    q, v, vd = (rng.uniform(-1.0, 1.0, (N, model.nv)) for _ in range(3))
    pm = to_pinocchio(model)
    data = pm.createData()
    tau = np.stack([pin.rnea(pm, data, *s).copy() for s in zip(q, v, vd)])
    y = np.stack([pin.computeJointTorqueRegressor(pm, data, *s).copy() for s in zip(q, v, vd)])
    base = kj.identify.base_parameters_from_regressor(y)
    pi = np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])
    folder.mkdir()
    arrays = {"q": q, "v": v, "vd": vd, "tau": tau, "independent": np.asarray(base.independent)}
    for name, x in arrays.items():
        np.save(folder / f"{name}.npy", x)
    return {**arrays, "y": y, "beta": np.asarray(base.projection) @ pi}


def _run_workers(data: Path, tmp_path: Path) -> list:
    """Both processes to completion; the first failure stops the other (it would wait for its
    peer in a collective). Fails with their exit codes and logs, skips without CPU collectives."""
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip()
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu", PYTHONPATH=path)
    port, procs, logs = _free_port(), [], [tmp_path / f"worker{i}.log" for i in (0, 1)]
    for i, log in enumerate(logs):
        command = [sys.executable, str(WORKER), str(i), str(port), str(data), str(tmp_path / f"out{i}.npz")]
        with open(log, "w") as f:
            procs.append(subprocess.Popen(command, env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT))
    start = time.monotonic()
    while time.monotonic() - start < TIMEOUT_S and not all(p.poll() == 0 for p in procs):
        if any(p.poll() not in (None, 0) for p in procs):
            break
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    texts = [log.read_text() for log in logs]
    if any(NO_COLLECTIVES in text for text in texts):
        pytest.skip(f"this jaxlib's CPU backend runs no collectives across processes (the workers' XLA says: {NO_COLLECTIVES})")
    if any(p.returncode for p in procs):
        report = "\n".join(
            f"--- worker {i}: exit code {p.returncode}{' (killed)' if p.returncode < 0 else ''}, log:\n{text[-4000:]}"
            for i, (p, text) in enumerate(zip(procs, texts))
        )
        pytest.fail(f"the two processes failed after {time.monotonic() - start:.0f} s (limit {TIMEOUT_S} s):\n{report}")
    return [np.load(tmp_path / f"out{i}.npz") for i in (0, 1)]


@pytest.mark.slow
def test_two_processes_give_one_process_numbers(tmp_path):
    # JAX's CPU backend runs a program across processes through these collectives (Gloo by default)
    if "jax_cpu_collectives_implementation" not in jax.config.values:
        pytest.skip(f"jax {jax.__version__} has no jax_cpu_collectives_implementation: no CPU collectives across processes")
    expected = _dataset(kj.models.panda(), tmp_path / "data")
    results = _run_workers(tmp_path / "data", tmp_path)
    for process, r in enumerate(results):
        assert (int(r["devices"]), int(r["local_devices"])) == (4, 2)
        mine = np.arange(process * N // 2, (process + 1) * N // 2)
        # every batched result stays where its inputs were: each process holds the rows it read
        for name in ("vmap", "chunked", "chunked_eager"):
            assert bool(r[f"{name}_sharded"]), name
            assert np.array_equal(np.sort(r[f"{name}_rows"]), mine), name
            assert_close(r[name], expected["tau"][r[f"{name}_rows"]], name, EXACT_TOL, relative=True)
        assert_close(r["gathered"], expected["tau"], "gathered", EXACT_TOL, relative=True)
        assert list(r["collectives_chunked"]) == []  # chunked_vmap's padding moved no sample
        y, tau = expected["y"], expected["tau"]
        normal = (np.einsum("snp,snk->pk", y, y), np.einsum("snp,sn->p", y, tau))
        for suffix in ("", "_psum"):
            assert_close(r["A" + suffix], normal[0], "Y^T Y" + suffix, EXACT_TOL, relative=True)
            assert_close(r["b" + suffix], normal[1], "Y^T tau" + suffix, EXACT_TOL, relative=True)
            # what crosses processes: the reduced p x p and p numbers (p = 70), not the samples
            sent = list(r["collectives" + suffix])
            assert {c.split()[0] for c in sent} == {"all-reduce"}, sent
            assert set(re.findall(r"f64\[[\d,]*\]", " ".join(sent))) == {"f64[70,70]", "f64[70]"}, sent
        i = expected["independent"]
        assert_close(r["beta"], np.linalg.solve(normal[0][np.ix_(i, i)], normal[1][i]), "beta", EXACT_TOL, relative=True)
        assert_close(r["beta"], expected["beta"], "beta against the true parameters", TOL, relative=True)
