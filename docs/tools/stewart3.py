"""The 3-leg Stewart platform of Huang et al. (sec. 12, Figs. 10-11) driven by its three motors.

    .venv/bin/python docs/tools/stewart3.py                    # about 3-4 minutes on 2 cores
    .venv/bin/python docs/tools/stewart3.py --no-checks        # without the mirror, dt/2 and no-gravity runs
    .venv/bin/python docs/tools/stewart3.py --platform euler   # the 12-coordinate Euler-angle platform

The motors J7, J8, J9 each apply a constant 10 N m "counter-clockwise" (the paper), taken as
``+10`` about each motor's tabulated axis direction (right-hand rule: counter-clockwise seen from
the tip of the axis, which points radially inward and 15 degrees up). With the J7/J8 correction
the mechanism is symmetric under the mirror ``x -> -x``, which maps ``+10`` on every motor to
``-10`` on every motor and leaves ``z`` unchanged: ``v_z(t)`` does not depend on the sign
choice (the ``mirror`` run below checks it numerically).

Every model is ``stewart3(platform=...)`` with ``--platform``: ``free`` (the default: one free
joint, ``q`` 13 numbers with a unit quaternion, ``v`` 12) or ``euler`` (12 coordinates: slides and
Z-Y-X Euler angles, with a gimbal lock where the platform's body ``x`` axis is vertical). The
platform starts at rest in the tables' configuration; ``dt = 2 ms`` for 2 s (1000 steps),
``kronjax.constrained.simulate`` with ``method="huang"`` (Huang's Taylor step) and with
``method="lagrange"`` (multipliers, a Tsit5 step), both with projection, for the corrected
table (``swap_j7_j8=True``) and the table as printed (``False``). The platform's vertical
velocity ``v_z`` is the velocity of its mass centre (``kronjax.linear_velocity``).

Reported: jumps of ``dv_z/dt`` (an isolated step change far above its neighbours'; a smooth
but fast change of ``a_z`` is not a jump, and halving ``dt`` separates the two: the per-step
change of a continuous ``a_z`` halves), the smallest singular value of ``Phi_q`` (rank loss =
kinematic singularity; the Lagrange solver raises there) and of two of its blocks, and the
paper's times 0.76, 1.32, 1.72 s. Writes ``docs/details/stewart3-vz.png`` and
``docs/details/stewart3.md`` (the site's page on this study).

``EQX_ON_ERROR=nan`` is set for this process (unless already set) so that a Lagrange solve at a
rank-deficient ``Phi_q`` turns into NaNs from that step on instead of discarding the whole run;
the step where the rank drops is reported from the rollout's ``rank``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

PAPER_TIMES = (0.76, 1.32, 1.72)
DT = 0.002
DURATION = 2.0
TORQUE = 10.0
RESULTS = Path(__file__).resolve().parents[1] / "details"
COMMAND = ".venv/bin/python docs/tools/stewart3.py"
PLATFORMS = ("free", "euler")
LAYOUT = {
    "free": "platform on one free joint: nq 13, nv 12, a unit quaternion; 3 spherical loop closures, 3 DOF",
    "euler": "12 coordinates, the platform on slides and Z-Y-X Euler angles; 3 spherical loop closures, 3 DOF",
}


def _setup():
    if "equinox" not in sys.modules:
        os.environ.setdefault("EQX_ON_ERROR", "nan")
    import jax

    jax.config.update("jax_enable_x64", True)


def simulate(mech, method: str, *, torque: float = TORQUE, dt: float = DT, duration: float = DURATION) -> dict:
    """One rollout from rest under constant motor torques; numpy arrays and diagnostics."""
    import jax
    import jax.numpy as jnp

    from kronjax.constrained import simulate as run

    n = mech.model.nv
    tau = jnp.zeros(n).at[:3].set(torque)
    steps = round(duration / dt)
    start = time.perf_counter()
    out = run(mech.model, mech.constraints, mech.q0, jnp.zeros(n), lambda t, q, qd: tau, dt=dt, steps=steps, method=method)
    jax.block_until_ready(out.q)
    wall = time.perf_counter() - start
    ts, q, qd = (np.asarray(x) for x in (out.ts, out.q, out.v))
    residual = np.asarray(out.residual)
    # states 0..good-1 are finite and on the constraints (projection keeps a sound run at ~1e-15)
    valid = np.all(np.isfinite(q), axis=1) & np.all(np.isfinite(qd), axis=1) & (residual < 1e-8)
    good = int(np.argmin(valid)) if not valid.all() else len(ts)
    rank = np.asarray(out.rank)
    low = np.nonzero(rank < mech.constraints.n_equations)[0]
    return {
        "method": method,
        "dt": dt,
        "torque": torque,
        "wall": wall,
        "ts": ts[:good],
        "q": q[:good],
        "qd": qd[:good],
        "valid_until": None if good == len(ts) else float(ts[good]),
        "rank_min": int(rank.min()),
        "rank_drop": None if len(low) == 0 else float(ts[low[0]]),
        "residual": float(np.max(residual[:good])),
        "velocity_residual": float(np.nanmax(np.asarray(out.velocity_residual)[:good])),
    }


def twist_jacobian(mech, swap: bool, q, jac):
    """``Phi_q`` with the platform's three angular columns (``v[9:12]``: Euler-angle rates, or the
    free joint's body-frame angular velocity) replaced by the platform's angular velocity ``omega``
    (world axes): ``dPhi_i/domega = skew(R p_i)`` for ``Phi_i = p_leg - (o + R p_i)``. Its rank does
    not depend on the platform's coordinates (no gimbal lock): a physical singularity. (The free
    joint's linear columns ``v[6:9]`` are ``-R`` per closure, not ``-1``: an orthogonal change of
    variables that leaves the singular values as they are.)"""
    import jax
    import jax.numpy as jnp

    from kronjax.models.stewart3 import LINKS, joint_positions

    pos = joint_positions(swap)
    points = np.stack([pos[f"J{i}"] - np.asarray(LINKS["L7"][2]) for i in (1, 2, 3)])  # in the platform frame
    rot = np.asarray(jax.jit(jax.vmap(lambda x: mech.model.poses(x)[0][mech.model.body_index("L7")]))(jnp.asarray(q)))
    r = np.einsum("kij,pj->kpi", rot, points)  # (K, 3 closures, 3)
    skew = np.zeros(r.shape + (3,))
    skew[..., 0, 1], skew[..., 0, 2], skew[..., 1, 2] = -r[..., 2], r[..., 1], -r[..., 0]
    skew = skew - np.swapaxes(skew, -1, -2)
    out = np.array(jac, copy=True)
    out[:, :, 9:12] = skew.reshape(len(q), 9, 3)
    return out


def analyse(mech, run: dict, swap: bool) -> dict:
    """v_z, a_z, jumps, singular values and geometry along a rollout."""
    import jax
    import jax.numpy as jnp

    import kronjax as kj

    model, cons = mech.model, mech.constraints
    q, qd, ts, dt = jnp.asarray(run["q"]), jnp.asarray(run["qd"]), run["ts"], run["dt"]
    vel = jax.jit(jax.vmap(lambda a, b: kj.linear_velocity(model, a, b, "L7", "com")))
    vz = np.asarray(vel(q, qd))[:, 2]
    jac = np.asarray(jax.jit(jax.vmap(cons.jacobian))(q))
    twist = twist_jacobian(mech, swap, run["q"], jac)
    sv = lambda a: np.linalg.svd(a, compute_uv=False)[:, -1]
    rot, org = jax.jit(jax.vmap(model.poses))(q)
    platform = model.body_index("L7")
    tilt = np.degrees(np.arccos(np.clip(np.asarray(rot[:, platform, 2, 2]), -1.0, 1.0)))
    height = np.asarray(org[:, platform, 2])
    # the Z-Y-X Euler pitch of the platform's rotation, R = Rz Ry(pitch) Rx: R[2, 0] = -sin(pitch),
    # whatever the coordinates (q[10] of the Euler layout up to the branch; +-90 deg = gimbal lock)
    pitch = np.arcsin(np.clip(-np.asarray(rot[:, platform, 2, 0]), -1.0, 1.0))
    near_lock = np.nonzero(np.abs(np.abs(pitch) - np.pi / 2) < np.radians(5.0))[0]
    az = np.diff(vz) / dt
    out = {
        "ts": ts,
        "vz": vz,
        "t_mid": ts[:-1] + dt / 2,
        "az": az,
        "jumps": jumps(ts, az),
        "peaks": peaks(ts, az),
        "s_full": sv(jac),  # Phi_q as the solvers see it (the platform's coordinates' columns)
        "s_twist": sv(twist),  # platform angular velocity instead of Euler rates
        "s_passive": sv(twist[:, :, 3:]),  # motors as inputs: forward-kinematic (type II) singularity
        "tilt": tilt,
        "height": height,
        "gimbal": None if len(near_lock) == 0 else (float(ts[near_lock[0]]), float(ts[near_lock[-1]])),
        "vz_zero": _crossings(ts, vz),
        "height_zero": _crossings(ts, height),
    }
    for key in ("s_full", "s_twist", "s_passive"):
        out[key + "_min"] = _minima(ts, out[key])
    return out


def jumps(ts: np.ndarray, az: np.ndarray, window: int = 10, factor: float = 10.0) -> list[tuple[float, float]]:
    """Times ``(t, |Delta a_z|)`` where ``a_z`` changes in one step by more than ``factor`` times
    the median change of the ``window`` steps on either side, and by more than 2 % of ``max |a_z|``."""
    da = np.abs(np.diff(az))  # change of a_z across the state ts[k + 1]
    if len(da) < 2 * window + 1:
        return []
    floor = 0.02 * np.max(np.abs(az))
    out = []
    for k in range(len(da)):
        near = np.concatenate([da[max(0, k - window) : k], da[k + 1 : k + 1 + window]])
        if da[k] > floor and da[k] > factor * np.median(near):
            out.append((float(ts[k + 1]), float(da[k])))
    return out


def peaks(ts: np.ndarray, az: np.ndarray, share: float = 0.25) -> list[tuple[float, float]]:
    """Local maxima ``(t, |Delta a_z| per step)`` of the per-step change of ``a_z`` above ``share``
    of its largest value: the fastest changes of ``dv_z/dt``."""
    da = np.abs(np.diff(az))
    top = share * np.max(da)
    out = []
    for k in range(1, len(da) - 1):
        if da[k] >= top and da[k] >= da[k - 1] and da[k] > da[k + 1]:
            out.append((float(ts[k + 1]), float(da[k])))
    return out


def _minima(ts, s, order: int = 10) -> list[tuple[float, float]]:
    out = []
    for k in range(len(s)):
        lo, hi = max(0, k - order), min(len(s), k + order + 1)
        if s[k] == np.min(s[lo:hi]) and 0 < k < len(s) - 1:
            out.append((float(ts[k]), float(s[k])))
    return out


def _crossings(ts, x) -> list[float]:
    k = np.nonzero(np.sign(x[:-1]) * np.sign(x[1:]) < 0)[0]
    return [float(ts[i] + (ts[i + 1] - ts[i]) * x[i] / (x[i] - x[i + 1])) for i in k]


def _peak_near(peaks_: list[tuple[float, float]], t: float, tol: float = 0.02) -> float | None:
    near = [v for s, v in peaks_ if abs(s - t) <= tol]
    return max(near) if near else None


def _times(ts) -> str:
    return ", ".join(f"{t:.3f}" for t in ts) + " s" if len(ts) else "never"


def _fmt(pairs, digits: int = 3) -> str:
    return ", ".join(f"{t:.3f} s ({v:.{digits}g})" for t, v in pairs) or "none"


def plot(results: dict, path: Path, platform: str = "free") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 2, figsize=(12, 10), sharex=True)
    for col, swap in enumerate((True, False)):
        for method, style in (("huang", "-"), ("lagrange", "--")):
            r = results[swap][method]
            a = r["analysis"]
            label = method if r["valid_until"] is None else f"{method} (diverges at {r['valid_until']:.3f} s)"
            axes[0, col].plot(a["ts"], a["vz"], style, label=label)
            axes[1, col].plot(a["t_mid"], a["az"], style, label=label)
            axes[2, col].plot(a["ts"], a["s_twist"], style, label=f"{method}: Phi (9x12, platform twist)")
            axes[2, col].plot(a["ts"], a["s_passive"], style, label=f"{method}: passive columns (9x9)")
            if a["gimbal"] is not None:
                for ax in axes[:, col]:
                    ax.axvspan(*a["gimbal"], color="r", alpha=0.08)
        title = "J7/J8 swapped (default)" if swap else "table as printed (swap_j7_j8=False)"
        axes[0, col].set_title(title)
        axes[0, col].set_ylabel("platform v_z (m/s)")
        axes[1, col].set_ylabel("d v_z / dt (m/s^2)")
        axes[2, col].set_ylabel("smallest singular value")
        axes[2, col].set_xlabel("t (s)")
        for ax in axes[:, col]:
            for t in PAPER_TIMES:
                ax.axvline(t, color="k", ls=":", lw=0.8)
            ax.grid(alpha=0.3)
        axes[0, col].legend(loc="best", fontsize=8)
        axes[2, col].legend(loc="best", fontsize=7)
    shaded = (
        "Euler pitch within 5 deg of 90 deg, the coordinates' gimbal lock"
        if platform == "euler"
        else "platform x axis within 5 deg of vertical, where Euler angles would lock; not for the free joint"
    )
    fig.suptitle(
        f"Huang's 3-leg Stewart platform ({platform} platform), motors 10 N m, dt = 2 ms "
        f"(dotted: the paper's 0.76, 1.32, 1.72 s;\nshaded: {shaded})"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def findings(results: dict, checks: dict, platform: str = "free") -> list[str]:
    """A few sentences computed from the runs (so that they stay true when the numbers change)."""
    out = []
    h, lg = results[True]["huang"], results[True]["lagrange"]
    ha, la = h["analysis"], lg["analysis"]
    k = int(np.argmin(ha["s_twist"]))
    jumps_default = ha["jumps"] + la["jumps"]
    drop = "never reported a rank drop" if lg["rank_drop"] is None else f"lost rank at {lg['rank_drop']:.3f} s"
    lock = results[False]["lagrange"]["analysis"]["gimbal"]
    lock = "-" if lock is None else f"{lock[0]:.3f}-{lock[1]:.3f}"
    out.append(
        f"- Default model (J7/J8 swapped): {'no' if not jumps_default else len(jumps_default)} jump(s) of dv_z/dt in "
        f"either run; Phi_q keeps rank 9 throughout (smallest singular value {ha['s_twist'][k]:.3f} at "
        f"{ha['ts'][k]:.3f} s; the passive 9 x 9 block {np.min(ha['s_passive']):.3f}); the Lagrange solver "
        f"{drop}. "
        "dv_z/dt changes fastest, but continuously (the per-step change halves with dt), at "
        + ", ".join(f"{t:.3f} s" for t, _ in ha["peaks"])
        + ", where the platform centre passes through the plane of J4-J6 ("
        + ", ".join(f"{t:.3f}" for t in ha["height_zero"])
        + " s) and the legs are horizontal."
    )
    out.append(
        f"- The platform is not held up: under the motors and gravity it falls to z = {np.min(ha['height']):.3f} m "
        f"(from 0.71; below the motors, as the model has no ground contact), v_z = 0 at "
        + ", ".join(f"{t:.3f}" for t in ha["vz_zero"])
        + f" s, and swings back up; the motors turn {np.max(h['q'][:, :3]):.1f} rad in 2 s; the tilt stays below "
        f"{np.max(ha['tilt']):.1f} deg."
    )
    hits = [t for t in PAPER_TIMES if any(abs(u - t) <= 0.05 for u, _ in jumps_default)]
    out.append(
        "- The paper's 0.76, 1.32, 1.72 s (default model): "
        + (f"jumps of dv_z/dt within 50 ms of {hits}" if hits else "no discontinuity at any of them")
        + "; see the table below for the features near each (v_z = 0 is the platform's lowest point)."
    )
    ph, pl = results[False]["huang"], results[False]["lagrange"]
    pa = pl["analysis"]
    fine = checks.get("printed_fine")
    if platform == "free":
        valid = lambda r: "the end (2 s)" if r["valid_until"] is None else f"{r['valid_until']:.3f} s"
        out.append(
            f"- Table as printed: the J7/J8 cranks tip the platform over (tilt {np.max(pa['tilt']):.0f} deg); its body "
            f"x axis is within 5 deg of vertical (where Z-Y-X Euler angles lock; the free joint's quaternion does "
            f"not) at {lock} s. Huang's step valid until {valid(ph)}, Lagrange/Tsit5 until {valid(pl)}; jumps of "
            f"dv_z/dt (Lagrange): {_fmt(pa['jumps'])}"
            + (
                ""
                if fine is None
                else f"; at dt = 1 ms: {_fmt(fine['analysis']['jumps'])}, the 2 ms run within "
                f"{fine['after']:.1e} m/s of the 1 ms one after 0.73 s"
            )
            + ". The passive block nearly loses rank "
            f"(forward-kinematic singularities, smallest singular value {np.min(pa['s_passive']):.1e} at "
            f"{pa['ts'][int(np.argmin(pa['s_passive']))]:.3f} s), while Phi_q itself stays above "
            f"{np.min(pa['s_twist']):.3f}."
        )
        return out
    out.append(
        f"- Table as printed: the J7/J8 cranks tip the platform over (tilt {np.max(pa['tilt']):.0f} deg); its Euler "
        f"pitch reaches 90 deg (gimbal lock of the platform coordinates; the mass matrix turns singular) at "
        f"{lock} s. Huang's step diverges there "
        f"(valid until {ph['valid_until']} s); Lagrange/Tsit5 steps across it with a spurious jump of dv_z/dt at "
        + (", ".join(f"{t:.3f}" for t, _ in pa["jumps"]) or "-")
        + " s (a coordinate artefact, not a mechanism singularity"
        + (
            ""
            if "printed_fine" not in checks
            else f"; jumps at dt = 1 ms: {_fmt(checks['printed_fine']['analysis']['jumps'])}, and the 2 ms run "
            f"departs from the 1 ms one by up to {checks['printed_fine']['after']:.1f} m/s after it; see Checks"
        )
        + "). The passive block nearly loses rank "
        f"(forward-kinematic singularities, smallest singular value {np.min(pa['s_passive']):.1e} at "
        f"{pa['ts'][int(np.argmin(pa['s_passive']))]:.3f} s), while Phi_q itself stays above "
        f"{np.min(pa['s_twist']):.3f}."
    )
    return out


def report(results: dict, checks: dict, total: float, platform: str = "free") -> str:
    command = COMMAND if platform == "free" else f"{COMMAND} --platform {platform}"
    call = "stewart3()" if platform == "free" else f'stewart3(platform="{platform}")'
    singular = (
        "Singular values: `Phi_q` is the 9 x 12 constraint Jacobian the solvers use; its platform columns are "
        "Euler-angle rates, so it also loses rank at the coordinates' gimbal lock (pitch = +-90 deg). "
        if platform == "euler"
        else "Singular values: `Phi_q` is the 9 x 12 constraint Jacobian the solvers use, along the tangent space; "
        "its platform columns are the free joint's body-frame velocities, so it has the twist's singular values "
        "(no coordinate singularity). "
    )
    lines = [
        "# Huang's 3-leg Stewart platform (Fig. 10-11): motors at 10 N m",
        "",
        f"Command: `{command}` (total wall time {total:.0f} s on this machine, compile included).",
        f"Model: `kronjax.models.{call}` ({LAYOUT[platform]}).",
        f"Motors J7-J9: +{TORQUE:g} N m about their axis directions, from rest at the tables' configuration; "
        f"dt = {DT * 1e3:g} ms, {DURATION:g} s, projection on; `lagrange` integrates with Tsit5.",
        "",
        "![v_z, dv_z/dt and the smallest singular values; dotted lines at the paper's 0.76, 1.32, 1.72 s](stewart3-vz.png)",
        "",
        singular + "'twist' replaces the three angular columns by the platform's angular velocity in world axes "
        "(rank loss = a physical "
        "kinematic singularity); 'passive' is the twist Jacobian without the three motor columns (motors as "
        "inputs: rank loss = a forward-kinematic, type-II singularity, where the motor angles do not fix the "
        "platform).",
        "",
    ]
    lines += ["## Findings", ""] + findings(results, checks, platform) + [""]
    lines += [
        "## The paper's times",
        "",
        "Events within 50 ms of the paper's discontinuity times (Fig. 11): jumps of dv_z/dt, fastest changes of "
        "dv_z/dt, local minima of the smallest singular value (twist / passive), zero crossings of v_z.",
        "",
        "| model, method | paper time (s) | v_z (m/s) | dv_z/dt (m/s^2) | jump | fastest change | sv minimum twist | "
        "sv minimum passive | v_z = 0 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for swap, method in ((True, "huang"), (True, "lagrange"), (False, "lagrange")):
        a = results[swap][method]["analysis"]
        for t in PAPER_TIMES:
            if t > a["ts"][-1]:
                continue
            k = int(np.argmin(np.abs(a["ts"] - t)))
            near = lambda pairs: ", ".join(f"{u:.3f}" for u, _ in pairs if abs(u - t) <= 0.05) or "-"
            zero = ", ".join(f"{u:.3f}" for u in a["vz_zero"] if abs(u - t) <= 0.05) or "-"
            lines.append(
                f"| {'swapped' if swap else 'as printed'}, {method} | {t:.2f} | {a['vz'][k]:.3f} "
                f"| {a['az'][min(k, len(a['az']) - 1)]:.2f} | {near(a['jumps'])} | {near(a['peaks'])} "
                f"| {near(a['s_twist_min'])} | {near(a['s_passive_min'])} | {zero} |"
            )
    lines.append("")
    for swap in (True, False):
        lines += [f"## {'J7/J8 positions swapped (default)' if swap else 'table as printed (swap_j7_j8=False)'}", ""]
        lines += [
            "| method | wall (s) | valid until | solver rank min (first drop) | max drift Phi / A qd "
            "| min sv Phi_q (t) | min sv twist (t) | min sv passive (t) | max tilt (deg) | lowest platform z (m) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for method in ("huang", "lagrange"):
            r = results[swap][method]
            a = r["analysis"]
            until = "2 s (end)" if r["valid_until"] is None else f"{r['valid_until']:.3f} s"
            drop = "none" if r["rank_drop"] is None else f"{r['rank_drop']:.3f} s"
            cells = []
            for key in ("s_full", "s_twist", "s_passive"):
                k = int(np.argmin(a[key]))
                cells.append(f"{a[key][k]:.3f} ({a['ts'][k]:.3f} s)")
            lines.append(
                f"| {method} | {r['wall']:.1f} | {until} | {r['rank_min']} ({drop}) "
                f"| {r['residual']:.1e} / {r['velocity_residual']:.1e} | "
                + " | ".join(cells)
                + f" | {np.max(a['tilt']):.1f} | {np.min(a['height']):.3f} |"
            )
        lines.append("")
        for method in ("huang", "lagrange"):
            a = results[swap][method]["analysis"]
            lock = "never" if a["gimbal"] is None else f"{a['gimbal'][0]:.3f}-{a['gimbal'][1]:.3f} s"
            lines += [
                f"- {method}: jumps of dv_z/dt (one-step change > 10x its neighbours'): {_fmt(a['jumps'])}; "
                f"fastest changes of dv_z/dt (per-step change, m/s^2): {_fmt(a['peaks'])}",
                f"  - local minima of the smallest singular value, twist: {_fmt(a['s_twist_min'])}; "
                f"passive: {_fmt(a['s_passive_min'])}",
                f"  - v_z = 0 at: {_times(a['vz_zero'])}; platform centre "
                f"passes z = 0 (the plane of J4-J6) at: {_times(a['height_zero'])}; "
                f"Z-Y-X Euler pitch of the platform within 5 deg of +-90 deg: {lock}",
            ]
        h, lg = results[swap]["huang"]["analysis"], results[swap]["lagrange"]["analysis"]
        n = min(len(h["vz"]), len(lg["vz"]))
        diff = np.abs(h["vz"][:n] - lg["vz"][:n])
        t_dev = h["ts"][:n][np.argmax(diff > 0.05)] if np.any(diff > 0.05) else None
        lines += [
            f"- huang vs lagrange: max |v_z difference| {np.max(diff[h['ts'][:n] <= 0.5]):.2e} m/s up to 0.5 s, "
            f"{np.max(diff):.2e} m/s up to {h['ts'][n - 1]:.3f} s; first exceeds 0.05 m/s at "
            f"{'never' if t_dev is None else f'{t_dev:.3f} s'}",
            "",
        ]
    if checks:
        lines += ["## Checks", ""]
        if "mirror" in checks:
            m = checks["mirror"]
            lines.append(
                f"- torque sign (J7/J8 swapped, huang): -10 N m instead of +10: max |v_z(+10) - v_z(-10)| = "
                f"{m['max_to_1s']:.2e} m/s up to 1 s, {m['max']:.2e} m/s up to 2 s (wall {m['wall']:.0f} s); "
                "the mirror x -> -x maps one onto the other (exact but for J6's 0.867 vs J5's 0.87)."
            )
        if "halved" in checks:
            c = checks["halved"]
            lines.append(
                f"- dt = 1 ms (J7/J8 swapped, huang, wall {c['wall']:.0f} s): per-step change of dv_z/dt at the "
                "fastest changes, dt = 2 ms vs 1 ms (a continuous a_z halves, a jump does not): "
                + "; ".join(f"{t:.3f} s: {v2:.3g} vs {'-' if v1 is None else f'{v1:.3g}'}" for t, v2, v1 in c["pairs"])
                + f". Jumps found at dt = 1 ms: {_fmt(c['jumps'])}. Max |v_z - v_z(lagrange, Tsit5, 2 ms)| up to 1.2 s: "
                f"{c['error'][0]:.2e} m/s (huang, 2 ms), {c['error'][1]:.2e} m/s (huang, 1 ms): Huang's step is first order."
            )
        if "printed_fine" in checks:
            c = checks["printed_fine"]
            a = c["analysis"]
            lines.append(
                f"- table as printed, lagrange with dt = 1 ms (wall {c['run']['wall']:.0f} s): max |v_z(2 ms) - v_z(1 ms)| "
                f"{c['before']:.1e} m/s before 0.73 s, {c['after']:.2g} m/s after"
                + (" (the 2 ms run loses accuracy crossing the gimbal lock)" if platform == "euler" else "")
                + f"; jumps of dv_z/dt at 1 ms: {_fmt(a['jumps'])}; fastest changes: {_fmt(a['peaks'])}; "
                f"minima of the smallest singular value, twist: {_fmt(a['s_twist_min'])}, passive: {_fmt(a['s_passive_min'])}."
            )
        if "no_gravity" in checks:
            r, a = checks["no_gravity"]["run"], checks["no_gravity"]["analysis"]
            lines.append(
                f"- gravity off (the paper does not state it; J7/J8 swapped, huang, wall {r['wall']:.0f} s): valid until "
                f"{'the end' if r['valid_until'] is None else r['valid_until']}; jumps of dv_z/dt: {_fmt(a['jumps'])}; "
                f"fastest changes: {_fmt(a['peaks'])}; minima of the smallest singular value, twist: {_fmt(a['s_twist_min'])}, "
                f"passive: {_fmt(a['s_passive_min'])}; v_z = 0 at {_times(a['vz_zero'])}; "
                f"lowest platform z {np.min(a['height']):.3f} m."
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python docs/tools/stewart3.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-checks", action="store_true", help="skip the torque-sign (mirror), dt = 1 ms and no-gravity runs")
    parser.add_argument("--out", type=Path, default=RESULTS, help="output folder (default docs/details)")
    parser.add_argument(
        "--platform",
        choices=PLATFORMS,
        default="free",
        help="the platform's joint: free (default; nq 13, nv 12, unit quaternion) or euler (12 coordinates)",
    )
    args = parser.parse_args(argv)
    _setup()
    from functools import partial

    from kronjax.models.stewart3 import stewart3 as build

    stewart3 = partial(build, platform=args.platform)
    start = time.perf_counter()
    model = stewart3().model
    print(f"platform={args.platform}: nq {model.nq}, nv {model.nv} ({LAYOUT[args.platform]})", flush=True)
    results: dict = {}
    for swap in (True, False):
        mech = stewart3(swap_j7_j8=swap)
        results[swap] = {}
        for method in ("huang", "lagrange"):
            r = simulate(mech, method)
            r["analysis"] = analyse(mech, r, swap)
            results[swap][method] = r
            a = r["analysis"]
            print(
                f"swap_j7_j8={swap} {method:8s}: {r['wall']:5.1f} s, valid until "
                f"{'end' if r['valid_until'] is None else r['valid_until']}, rank min {r['rank_min']} "
                f"(drop {r['rank_drop']}), min sv Phi_q {np.min(a['s_full']):.3f} at {a['ts'][np.argmin(a['s_full'])]:.3f} s, "
                f"twist {np.min(a['s_twist']):.3f} at {a['ts'][np.argmin(a['s_twist'])]:.3f} s, gimbal lock {a['gimbal']}, "
                f"max tilt {np.max(a['tilt']):.1f} deg",
                flush=True,
            )
            print(f"    jumps of dv_z/dt: {_fmt(a['jumps'])}", flush=True)
            print(f"    fastest changes of dv_z/dt: {_fmt(a['peaks'])}", flush=True)
            print(f"    minima of sv_min, twist: {_fmt(a['s_twist_min'])}; passive: {_fmt(a['s_passive_min'])}", flush=True)
    checks: dict = {}
    if not args.no_checks:
        mech = stewart3()
        plus = results[True]["huang"]["analysis"]
        minus = simulate(mech, "huang", torque=-TORQUE)
        vz_minus = analyse(mech, minus, True)["vz"]
        n = min(len(vz_minus), len(plus["vz"]))
        d = np.abs(plus["vz"][:n] - vz_minus[:n])
        checks["mirror"] = {"max_to_1s": float(np.max(d[plus["ts"][:n] <= 1.0])), "max": float(np.max(d)), "wall": minus["wall"]}
        print(f"torque sign: max |v_z(+10) - v_z(-10)| = {checks['mirror']['max']:.2e} m/s", flush=True)
        half = simulate(mech, "huang", dt=DT / 2)
        ha = analyse(mech, half, True)
        pairs = [(t, v, _peak_near(ha["peaks"], t)) for t, v in plus["peaks"]]
        # first-order convergence of Huang's step towards the (5th-order) Lagrange/Tsit5 solution
        lag = results[True]["lagrange"]["analysis"]
        window = lag["ts"] <= 1.2
        err = [
            float(np.max(np.abs(v[::k][: len(lag["vz"])][window] - lag["vz"][window])))
            for v, k in ((plus["vz"], 1), (ha["vz"], 2))
        ]
        checks["halved"] = {"pairs": pairs, "jumps": ha["jumps"], "wall": half["wall"], "error": err}
        print(
            "dt/2: " + "; ".join(f"{t:.3f}: {v:.3g} -> {w}" for t, v, w in pairs),
            f"; |v_z - v_z(lagrange)| to 1.2 s {err}",
            flush=True,
        )
        printed = stewart3(swap_j7_j8=False)
        fine = simulate(printed, "lagrange", dt=DT / 2)
        fa_ = analyse(printed, fine, False)
        coarse = results[False]["lagrange"]["analysis"]
        d = np.abs(fa_["vz"][::2][: len(coarse["vz"])] - coarse["vz"][: (len(fa_["vz"]) + 1) // 2])
        t_ = coarse["ts"][: len(d)]
        checks["printed_fine"] = {
            "run": fine,
            "analysis": fa_,
            "before": float(np.max(d[t_ < 0.73])),
            "after": float(np.max(d[t_ >= 0.73])),
        }
        print(
            f"printed table, lagrange, dt/2: jumps {_fmt(fa_['jumps'])}; passive minima {_fmt(fa_['s_passive_min'])}", flush=True
        )
        weightless = stewart3(gravity=(0.0, 0.0, 0.0))
        fr = simulate(weightless, "huang")
        fa = analyse(weightless, fr, True)
        checks["no_gravity"] = {"run": fr, "analysis": fa}
        print(
            f"no gravity: jumps {_fmt(fa['jumps'])}; fastest {_fmt(fa['peaks'])}; twist minima {_fmt(fa['s_twist_min'])}",
            flush=True,
        )
    total = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    plot(results, args.out / "stewart3-vz.png", args.platform)
    text = report(results, checks, total, args.platform)
    (args.out / "stewart3.md").write_text(text + "\n")
    print(f"wrote {args.out / 'stewart3-vz.png'} and {args.out / 'stewart3.md'} ({total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
