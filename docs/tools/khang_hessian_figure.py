"""Draws docs/assets/khang-hessian.png, the figure of Khang's layout on docs/conventions.md.

Run once after changing it (not part of ``make docs``): ``.venv/bin/python docs/tools/khang_hessian_figure.py``.
Needs matplotlib (kronjax's test extra).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "assets" / "khang-hessian.png"
N = 3
COLOURS = ["#4C72B0", "#DD8452", "#55A868"]  # one per column j of J, i.e. per block of H
ROWS = ["x", "y", "z"]
W, H = 1.12, 0.55  # cell width and height


def cell(ax, x, y, colour, text, alpha=0.22, size=11):
    ax.add_patch(Rectangle((x, y), W, H, facecolor=colour, alpha=alpha, edgecolor="0.35", lw=0.8))
    ax.text(x + W / 2, y + H / 2, text, ha="center", va="center", fontsize=size)


def main():
    fig, ax = plt.subplots(figsize=(13.0, 5.6))
    ax.set_xlim(-0.9, 16.0)
    ax.set_ylim(-4.6, 2.5)
    ax.set_aspect("equal")
    ax.axis("off")

    # J, 3 x n: column j is the velocity of the point per unit rate of joint j
    x0, top = 0.0, 0.6
    ax.text(x0 + N * W / 2, top + 1.25, r"$J$  ($3 \times n$)", ha="center", fontsize=13)
    for j in range(N):
        ax.text(x0 + j * W + W / 2, top + 0.75, rf"$j = {j + 1}$", ha="center", fontsize=10, color=COLOURS[j])
        for p in range(3):
            cell(ax, x0 + j * W, top - p * H, COLOURS[j], rf"$J_{{{ROWS[p]}{j + 1}}}$")
    for p in range(3):
        ax.text(x0 - 0.2, top - p * H + H / 2, ROWS[p], ha="right", va="center", fontsize=10, color="0.3")

    # H, 3 x n^2: block j holds dJ[:, j]/dq, its column k the derivative by q_k
    hx = 5.0
    ax.text(
        hx + N * N * W / 2,
        top + 1.25,
        r"$H = \partial J / \partial q$  ($3 \times n^2$, Khang's layout)",
        ha="center",
        fontsize=13,
    )
    for j in range(N):
        bx = hx + j * N * W
        ax.text(
            bx + N * W / 2, top + 0.75, rf"$\partial J_{{:,{j + 1}}} / \partial q$", ha="center", fontsize=11, color=COLOURS[j]
        )
        for k in range(N):
            for p in range(3):
                cell(ax, bx + k * W, top - p * H, COLOURS[j], rf"$\partial_{{q_{k + 1}}} J_{{{ROWS[p]}{j + 1}}}$", size=11)
        ax.add_patch(Rectangle((bx, top - 2 * H), N * W, 3 * H, fill=False, edgecolor=COLOURS[j], lw=2.0))
    ax.add_patch(
        FancyArrowPatch((N * W + 0.25, top - H / 2), (hx - 0.25, top - H / 2), arrowstyle="-|>", mutation_scale=18, color="0.3")
    )
    ax.text((N * W + hx) / 2, top - H / 2 + 0.25, r"$\partial / \partial q$", ha="center", fontsize=12, color="0.3")

    # (qd kron qd)^T under H, column for column
    vy = top - 2 * H - 1.35
    ax.text(hx - 0.25, vy + H / 2, r"$(\dot q \otimes \dot q)^T$", ha="right", va="center", fontsize=13)
    for j in range(N):
        for k in range(N):
            c = j * N + k
            cell(ax, hx + c * W, vy, COLOURS[j], rf"$\dot q_{j + 1} \dot q_{k + 1}$", alpha=0.12)
            ax.plot([hx + c * W + W / 2] * 2, [top - 2 * H - 0.05, vy + H + 0.05], ls=":", color="0.55", lw=0.9)
            ax.text(hx + c * W + W / 2, vy - 0.22, str(c + 1), ha="center", va="center", fontsize=9, color="0.45")
    ax.text(hx + N * N * W + 0.15, vy - 0.22, r"column $(j - 1)\,n + k$", ha="left", va="center", fontsize=10, color="0.45")

    # What the product reads
    lines = [
        r"$H_{p,\;(j - 1) n + k} = \partial J_{p j} / \partial q_k$: the Khang derivative of $J$ (Tuan et al. 2019, def. 2);"
        r"  0-based in code: H[p, j * n + k]",
        r"$H\,(\dot q \otimes \dot q) = \sum_j \dot q_j\, (\partial J_{:,j} / \partial q)\, \dot q = \dot J\, \dot q$,"
        r"   so the acceleration is $a = J\, \ddot q + H\, (\dot q \otimes \dot q)$  (eqs. 52, 62)",
        r"In JAX: H = jax.jacfwd(J)(q).reshape(3, n * n)  (C order);   a = J @ qdd + H @ jnp.kron(qd, qd)",
    ]
    for i, line in enumerate(lines):
        ax.text(
            0.0,
            vy - 1.0 - 0.62 * i,
            line,
            ha="left",
            va="center",
            fontsize=12 if i < 2 else 11,
            family="DejaVu Sans Mono" if i == 2 else None,
        )

    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110, bbox_inches="tight", facecolor="white")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
