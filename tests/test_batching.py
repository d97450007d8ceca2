"""chunked_vmap: the same numbers as vmap, bounded memory, no retracing, and sharded batches."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj


@pytest.fixture(scope="module")
def panda():
    return kj.models.panda()


def test_chunks_give_the_numbers_of_vmap_with_padding(panda):
    q = jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (103, 7)))
    c_star = lambda q: kj.coriolis_star(panda, q)  # noqa: E731
    expected = jax.jit(jax.vmap(c_star))(q)
    got = jax.jit(kj.chunked_vmap(c_star, chunk_size=10))(q)
    assert got.shape == (103, 7, 49)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13)  # other batch sizes, other rounding


def test_automatic_chunk_size_follows_the_memory_budget(panda):
    qs = [jnp.asarray(np.random.default_rng(1).normal(size=(40, 7))) for _ in range(3)]
    tau = lambda q, qd, qdd: kj.inverse_dynamics(panda, q, qd, qdd)  # noqa: E731
    expected = jax.vmap(tau)(*qs)
    # about one sample's intermediates per chunk: many chunks
    tiny = kj.chunked_vmap(tau, chunk_bytes=1)
    np.testing.assert_allclose(jax.jit(tiny)(*qs), expected, rtol=1e-13, atol=1e-12)
    # the plan: lax.map (a while loop) over chunks, or one plain vmap when the batch fits
    plain = lambda x: jnp.sin(x) * 2.0  # noqa: E731  (no loop of its own)
    x = jnp.zeros((40, 7))
    assert "while" in jax.jit(kj.chunked_vmap(plain, chunk_bytes=1)).lower(x).as_text()
    assert "while" not in jax.jit(kj.chunked_vmap(plain)).lower(x).as_text()
    # 10^6 samples of C* (an estimated 300 KB each) exceed the default 4 GiB: chunks
    c_star = lambda q: kj.coriolis_star(panda, q)  # noqa: E731
    assert "while" in jax.jit(kj.chunked_vmap(c_star)).lower(jax.ShapeDtypeStruct((10**6, 7), jnp.float64)).as_text()


def test_vmapped_sizes_whose_rows_span_whole_kibibytes_run_a_cache_line_more(panda):
    """A vmapped size whose row of samples spans a multiple of 1 KiB (1024 float64 samples, 2048
    float32, or such a chunk) runs with a cache line of samples more, repeats of the last sample
    that are dropped: the outputs are vmap's, and the program's shapes show the padded size."""
    rng = np.random.default_rng(3)
    for batch, dtype, chunk, vmapped in (
        (1024, jnp.float64, None, 1032),
        (2048, jnp.float32, None, 2064),
        (2048, jnp.float64, 512, 520),
    ):
        model = panda.astype(dtype)
        mass = lambda q: kj.mass_matrix(model, q)  # noqa: E731
        q = jnp.asarray(rng.uniform(-1, 1, (batch, 7)), dtype)
        fn = kj.chunked_vmap(mass, chunk_size=chunk)
        got, expected = jax.jit(fn)(q), jax.jit(jax.vmap(mass))(q)
        assert got.shape == (batch, 7, 7) and got.dtype == dtype
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13 if dtype == jnp.float64 else 1e-5)
        assert f"{vmapped},7]" in str(jax.make_jaxpr(fn)(q)), (batch, dtype, chunk)
    # other sizes are left as they are
    mass = lambda q: kj.mass_matrix(panda, q)  # noqa: E731
    q = jnp.zeros((1000, 7))
    program = str(jax.make_jaxpr(kj.chunked_vmap(mass))(q))
    assert "1000,7,7]" in program and "1008," not in program


def test_bad_arguments():
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        kj.chunked_vmap(jnp.sin, chunk_size=0)
    with pytest.raises(ValueError, match="same leading batch axis"):
        kj.chunked_vmap(lambda a, b: a + b)(jnp.zeros(3), jnp.zeros(4))


def test_a_batch_in_shards_is_chunked_a_shard_at_a_time():
    """``shards=4`` on one device: each quarter of the batch is chunked and padded on its own
    (repeats of its last sample), a step's chunk takes samples of every quarter, and the outputs
    are ``vmap``'s; a NaN reaches only its own sample's outputs."""
    fn = lambda x: jnp.stack([jnp.sin(x).sum(), x[0] * x[1]])  # noqa: E731
    x = np.random.default_rng(4).normal(size=(64, 2))
    x[17] = np.nan
    expected = jax.vmap(fn)(x)
    for chunk, shards, step in ((12, 4, 12), (8, 4, 8), (5, 2, 4), (64, 4, 64), (3, 4, 4)):
        batched = kj.chunked_vmap(fn, chunk, shards=shards)
        np.testing.assert_allclose(jax.jit(batched)(x), expected, rtol=0, atol=1e-15)
        assert f"[{step},2]" in str(jax.make_jaxpr(batched)(x)), (chunk, shards)
    with pytest.raises(ValueError, match="shards=3 does not divide the batch of 64"):
        kj.chunked_vmap(fn, 8, shards=3)(x)
    with pytest.raises(ValueError, match="shards must be a positive integer"):
        kj.chunked_vmap(fn, 8, shards=0)


def test_no_recompilation_on_new_values(panda):
    @jax.jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def tau(q, qd, qdd):
        return jax.vmap(lambda *x: kj.inverse_dynamics(panda, *x))(q, qd, qdd)

    rng = np.random.default_rng(2)
    for _ in range(3):
        tau(*(jnp.asarray(rng.normal(size=(16, 7))) for _ in range(3)))


SHARDED = textwrap.dedent(
    """
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import kronjax as kj

    assert jax.device_count() == 4, jax.devices()
    model = kj.models.panda()
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.normal(size=(64, 7)) for _ in range(3))
    tau = lambda *x: kj.inverse_dynamics(model, *x)
    expected = jax.vmap(tau)(q, qd, qdd)
    sharded = [jax.device_put(x, sharding) for x in (q, qd, qdd)]
    # chunk_size=12 over 4 devices: 3 per device and step, each device's 16 samples padded to 18
    for fn in (jax.vmap(tau), kj.chunked_vmap(tau, chunk_size=8), kj.chunked_vmap(tau, chunk_size=12, shards=4)):
        out = jax.jit(fn)(*sharded)
        assert len(out.sharding.device_set) == 4, out.sharding
        assert out.sharding.is_equivalent_to(sharding, 2), out.sharding
        assert np.max(np.abs(np.asarray(out) - np.asarray(expected))) < 1e-11
        assert {s.data.shape for s in out.addressable_shards} == {(16, 7)}
    c_star = jax.jit(jax.vmap(lambda q: kj.coriolis_star(model, q)))(sharded[0])
    assert len(c_star.sharding.device_set) == 4
    # a free-flying body with an arm (quaternion coordinates): forward dynamics sharded in chunks
    # equals the unsharded vmap, and inverse dynamics (RNEA) of its accelerations gives tau back
    joints = [kj.Joint(kind="free", name="root", body_name="base"),
              kj.Joint(kind="R", parent=0, axis=(0.0, 1.0, 0.0), translation=(0.1, 0.0, 0.2), name="arm", body_name="arm")]
    inertials = [kj.Inertial(3.0, (0.01, -0.02, 0.03), np.diag([0.1, 0.2, 0.15])),
                 kj.Inertial(1.0, (0.2, 0.0, 0.0), np.diag([0.01, 0.05, 0.05]))]
    free = kj.from_joints(joints, inertials)
    q = np.asarray(jax.vmap(lambda k: kj.random_configuration(free, k))(jax.random.split(jax.random.key(0), 64)))
    v, tau = (rng.normal(size=(64, free.nv)) for _ in range(2))
    aba = lambda *x: kj.forward_dynamics(free, *x)
    qdd = jax.jit(kj.chunked_vmap(aba, 8))(*(jax.device_put(x, sharding) for x in (q, v, tau)))
    assert qdd.sharding.is_equivalent_to(sharding, 2), qdd.sharding
    assert np.max(np.abs(np.asarray(qdd) - np.asarray(jax.jit(jax.vmap(aba))(q, v, tau)))) < 1e-11
    back = jax.jit(jax.vmap(lambda *x: kj.inverse_dynamics(free, *x)))(q, v, qdd)
    assert np.max(np.abs(np.asarray(back) - tau)) < 1e-10
    print("ok")
    """
)


@pytest.mark.slow
def test_batches_sharded_over_four_cpu_devices():
    # XLA_FLAGS of this run (tests/conftest.py: backend optimisation level) plus four host devices
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4".strip()
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, "-c", SHARDED],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")


def _chain(n: int) -> kj.Model:
    rng = np.random.default_rng(n)
    rows = [("R", rng.uniform(0, 0.3), 0.0, rng.uniform(0, 0.3), rng.uniform(-2, 2)) for _ in range(n)]
    return kj.from_dh(rows, inertials=[kj.Inertial(1.0, com=(0.05, 0.01, 0.02), inertia=(0.01, 0.02, 0.025))] * n)


def test_compiled_inverse_dynamics_does_not_grow_with_chain_depth():
    """The recursions are scans: the optimised program of a 32-joint chain is no larger than an
    8-joint one's (an unrolled or duplicated recursion would be 4x or exponentially larger)."""
    sizes = []
    for n in (8, 32):
        model = _chain(n)
        fn = jax.jit(jax.vmap(lambda q: kj.inverse_dynamics(model, q, q, q, method="rnea")))
        sizes.append(len(fn.lower(jnp.zeros((4, n))).compile().as_text()))
    assert sizes[1] < 1.2 * sizes[0], sizes
