"""Command line: ``kronjax demo``, ``kronjax info MODEL`` (or ``python -m kronjax ...``)."""

from __future__ import annotations

import argparse
import sys


def _matrix(name: str, a, indent: str = "  ") -> str:
    import numpy as np

    # + 0.0 prints -0.0 as 0.0
    body = np.array2string(np.asarray(a) + 0.0, precision=5, suppress_small=True, max_line_width=140)
    return f"{name} =\n" + "\n".join(indent + line for line in body.splitlines())


def demo(argv: list[str] | None = None) -> int:
    """Kinematic analysis of the stacker of Tuan et al. 2019 (section 5.1) at one state."""
    import jax

    jax.config.update("jax_enable_x64", True)  # the demo, not the library, chooses float64
    import jax.numpy as jnp
    import numpy as np

    import kronjax as kj

    parser = argparse.ArgumentParser(prog="kronjax demo", description=demo.__doc__)
    parser.add_argument("--q", type=float, nargs=3, default=[0.35, -0.8, 0.6], metavar=("Q1", "Q2", "Q3"))
    parser.add_argument("--v", type=float, nargs=3, default=[0.7, 0.5, -1.1], metavar=("QD1", "QD2", "QD3"))
    parser.add_argument("--vd", type=float, nargs=3, default=[-0.4, 0.9, 0.25], metavar=("QDD1", "QDD2", "QDD3"))
    args = parser.parse_args(argv)

    model = kj.models.stacker()
    q, v, vd = (jnp.asarray(x) for x in (args.q, args.v, args.vd))
    tip = "boom"  # the paper's frame 3, body index 2

    jt = kj.translational_jacobian(model, q, tip)
    ht = kj.translational_hessian(model, q, tip)
    jr = kj.rotational_jacobian(model, q, tip)
    hr = kj.rotational_hessian(model, q, tip)

    print("kronjax demo: the stacker of Tuan et al. 2019 (P-R-R, Table 1), frame 3 = boom tip")
    print(f"  q = {np.asarray(q)}   v = {np.asarray(v)}   vd = {np.asarray(vd)}\n")
    print(_matrix("J_T3 (3 x 3, eq. 102)", jt))
    print(_matrix("H_T3 (3 x 9, eq. 103; column j*3+k = dJ[:, j]/dq_k)", ht))
    print(_matrix("J_R3 (3 x 3, eq. 104)", jr))
    print(_matrix("H_R3 (3 x 9, eq. 105)", hr))

    a = jt @ vd + ht @ jnp.kron(v, v)
    alpha = jr @ vd + hr @ jnp.kron(v, v)

    def velocities(t):
        qt = q + v * t + 0.5 * vd * t**2
        qdt = v + vd * t
        return (
            kj.translational_jacobian(model, qt, tip) @ qdt,
            kj.rotational_jacobian(model, qt, tip) @ qdt,
        )

    h = 1e-5
    (v_plus, w_plus), (v_minus, w_minus) = velocities(h), velocities(-h)
    a_fd = (v_plus - v_minus) / (2 * h)
    alpha_fd = (w_plus - w_minus) / (2 * h)

    print("\nAccelerations of frame 3 in the base frame:")
    print(f"  a     = J_T vd + H_T (v kron v) = {np.asarray(a)}   (eq. 52)")
    print(f"  a     by central difference of v   = {np.asarray(a_fd)}   (h = {h:g})")
    print(f"  alpha = J_R vd + H_R (v kron v) = {np.asarray(alpha)}   (eq. 62)")
    print(f"  alpha by central difference of w   = {np.asarray(alpha_fd)}")
    err = max(float(jnp.max(jnp.abs(a - a_fd))), float(jnp.max(jnp.abs(alpha - alpha_fd))))
    print(f"  max difference: {err:.2e} (finite-difference truncation and round-off)")
    _trajopt_demo()
    return 0 if err < 1e-6 else 1


def _trajopt_demo() -> None:
    """Trajectory optimisation of the elbow arm of Truc et al. 2019 within torque and speed limits,
    with a progress display, and an open-loop simulation of the optimised torques."""
    import diffrax
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np

    import kronjax as kj
    from kronjax import simulate, trajopt

    limits = kj.chain.JointLimits(
        lower=jnp.full(3, -np.pi), upper=jnp.full(3, np.pi), velocity=jnp.full(3, 8.0), effort=jnp.array([8.0, 8.0, 3.0])
    )
    model = eqx.tree_at(lambda m: m.limits, kj.models.truc_elbow(), limits)
    q_goal, duration = jnp.array([2.0, 1.5, 1.0]), 0.5
    print("\nTrajectory optimisation: the elbow arm of Truc et al. 2019 from q = 0 to q = [2, 1.5, 1] rad in 0.5 s")
    print("(the first half of eq. 73), minimising int |tau|^2 dt within |tau| <= [8, 8, 3] N m, |v| <= 8 rad/s;")
    print("quintic B-spline, 10 control points, q and v fixed at both ends; augmented Lagrangian with L-BFGS")
    print("(optax); violation = the largest excess over a limit, relative to the limit:")
    boundary = trajopt.BoundaryConditions(jnp.zeros(3), q_goal, duration, vd_start=None, vd_end=None)
    result = trajopt.optimize(model, boundary, trajopt.TorqueEffort(), num_control_points=10, callback=trajopt.print_progress)
    report = result.report
    tau = result.problem.samples(result.z[report.best]).tau
    print(
        f"  optimised: cost {report.cost[report.best]:.6g} N^2 m^2 s, violation {report.violation[report.best]:.1e}, "
        f"{report.iterations[report.best]} iterations, {report.wall_time:.1f} s ({report.compile_time:.1f} s to the first line)"
    )
    print(f"  peak |tau| = {np.abs(np.asarray(tau)).max(axis=0)} N m")

    amplitude, omega = jnp.array([1.0, 0.75, 0.5]), 2 * jnp.pi
    ts = jnp.linspace(0.0, duration, 501)
    tau_73 = jax.jit(
        jax.vmap(
            lambda t: kj.inverse_dynamics(
                model,
                amplitude * (1 - jnp.cos(omega * t)),
                amplitude * omega * jnp.sin(omega * t),
                amplitude * omega**2 * jnp.cos(omega * t),
            )
        )
    )(ts)
    effort_73 = float(jnp.trapezoid(jnp.sum(tau_73**2, axis=1), ts))
    print(f"  eq. (73) on [0, 0.5 s]: cost {effort_73:.6g} N^2 m^2 s, peak |tau| = {np.abs(np.asarray(tau_73)).max(axis=0)} N m")

    out = simulate.rollout(
        model,
        jnp.zeros(3),
        jnp.zeros(3),
        simulate.feedforward(model, result.trajectory),
        ts,
        solver=diffrax.Dopri8(),
        rtol=1e-10,
        atol=1e-10,
    )
    error = float(jnp.max(jnp.abs(out.q - result.trajectory.sample(ts)[0])))
    print(f"  open-loop simulation of the optimised torques (Dopri8, rtol = atol = 1e-10): max tracking error {error:.1e} rad")


def info(argv: list[str] | None = None) -> int:
    """Print a model: joints, limits, masses and the mass matrix at q = 0 (the neutral configuration
    with free, spherical or planar joints)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import kronjax as kj

    builtin = sorted(kj.models.__all__)
    parser = argparse.ArgumentParser(prog="kronjax info", description=info.__doc__)
    parser.add_argument("model", help="a URDF file, an MJCF file (.xml), or a built-in model: " + ", ".join(builtin))
    parser.add_argument("--root", help="URDF root link (default: the URDF's root)")
    parser.add_argument("--tip", help="URDF tip link: keep the chain from root to tip")
    parser.add_argument("--floating-base", action="store_true", help="URDF: the root link on a free-flyer joint")
    args = parser.parse_args(argv)
    if args.floating_base and (args.model in builtin or args.model.lower().endswith(".xml")):
        parser.error("--floating-base applies to URDF files")
    if args.model in builtin:
        model = getattr(kj.models, args.model)()
    else:
        try:
            if args.model.lower().endswith(".xml"):
                model = kj.load_mjcf(args.model)
            else:
                model = kj.load_urdf(args.model, root=args.root, tip=args.tip, floating_base=args.floating_base)
        except (FileNotFoundError, ImportError, kj.urdf.URDFError, kj.mjcf.MJCFError) as err:
            print(f"kronjax info: {err}", file=sys.stderr)
            return 1
    mechanism = None
    if isinstance(model, kj.constrained.Mechanism):
        mechanism, model = model, model.model
    tree = model.kinematics
    sizes = f"{model.nv} joint coordinates" if model.nq == model.nv else f"nq = {model.nq}, nv = {model.nv}"
    print(f"{args.model}: {sizes}, {model.n_bodies} bodies, gravity {np.asarray(model.gravity)}")
    kinds = {"R": "revolute", "P": "prismatic", "F": "fixed", "free": "free", "spherical": "spherical", "planar": "planar"}
    header = f"  {'#':>2}  {'joint':<24} {'type':<9} {'parent':<16} {'body':<16} {'lower':>9} {'upper':>9} {'velocity':>9} {'effort':>9} {'mass':>9}"
    print(header)
    for i in range(model.n_bodies):
        kind = tree.kinds[i] if isinstance(tree, kj.chain.Tree) else "R"
        mimic = tree.mimic[i] if isinstance(tree, kj.chain.Tree) and tree.mimic else None
        parent = tree.parents[i] if isinstance(tree, kj.chain.Tree) else i - 1
        k = tree.v_index[i] if isinstance(tree, kj.chain.Tree) else i  # a multi-DoF joint: its first
        limits = ["" for _ in range(4)]
        if k >= 0 and model.limits is not None:
            limits = [f"{float(getattr(model.limits, key)[k]):9.4g}" for key in ("lower", "upper", "velocity", "effort")]
        mass = "" if model.inertials is None else f"{float(model.inertials.mass[i]):9.4g}"
        print(
            f"  {i:>2}  {model.joint_names[i]:<24} {kinds[kind] if mimic is None else 'mimic':<9} "
            f"{'(base)' if parent < 0 else model.body_names[parent]:<16} {model.body_names[i]:<16} "
            + " ".join(f"{x:>9}" for x in limits)
            + f" {mass:>9}"
        )
    q = kj.neutral(model)
    if mechanism is not None:
        q = mechanism.q0
        for part in mechanism.constraints.parts:
            print(f"constraint: {part.description} ({part.n_equations} equations)")
        residual = float(jnp.max(jnp.abs(mechanism.constraints.residual(q))))
        dof = mechanism.mobility
        print(
            f"closed chain: {dof} degree{'s' if dof != 1 else ''} of freedom; assembled q0 = {np.asarray(q).round(6)} (residual {residual:.1e})"
        )
    if model.inertials is not None:
        print(f"total mass {float(jnp.sum(model.inertials.mass)):.6g}")
        at = "M(q0)" if mechanism is not None else ("M(q = 0)" if model.nq == model.nv else "M(q = neutral)")
        print(_matrix(at, kj.mass_matrix(model, q)))
    else:
        print("no inertials (kinematics only)")
    return 0


COMMANDS = {"demo": demo, "info": info}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print("usage: kronjax {" + ",".join(COMMANDS) + "} [options]", file=sys.stderr)
        print("  demo   kinematic analysis of the stacker of Tuan et al. 2019", file=sys.stderr)
        print("  info   joints, limits, masses and M(q = 0) of a URDF or MJCF file or a built-in model", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
