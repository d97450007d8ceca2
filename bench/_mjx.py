"""MJX's inverse dynamics of the Panda timed in a process of its own, so that its XLA flags (read
once, when JAX starts) and its precision are its own: ``python -m bench._mjx SPEC.json``. SPEC
(written by :meth:`bench.suite.Suite.mjx`): ``urdf`` (path), ``samples`` (``.npz`` with ``q``,
``qd``, ``qdd``), ``precision`` and the keys of :func:`bench.floating.mjx_timed`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    import jax

    jax.config.update("jax_enable_x64", spec["precision"] == "float64")
    import numpy as np

    from .floating import mjx_timed
    from .peers import mjx_inverse_dynamics

    fn, _ = mjx_inverse_dynamics(Path(spec["urdf"]).read_text())
    s = np.load(spec["samples"])
    result = mjx_timed(jax.vmap(fn), [s[k].astype(spec["precision"]) for k in ("q", "qd", "qdd")], spec)
    result["seconds_per_call"] = result["extra"]["seconds_per_call_range"][0]  # the best round, as the suite's other rows
    result["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    Path(spec["out"]).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
