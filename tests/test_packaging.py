"""The package as a user installs it: ``python -m build`` makes a wheel and an sdist without
warnings about the metadata, and the wheel, installed into a clean virtual environment (no
``-e``, no checkout on the path), runs ``kronjax demo`` and ``kronjax info panda``."""

import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import kronjax

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, timeout=900, env=None):
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_wheel_installs_and_runs_in_a_clean_environment(tmp_path):
    pytest.importorskip("build", reason="the `build` package (test extra) makes the wheel")
    log = _run([sys.executable, "-m", "build", "--outdir", tmp_path / "dist", ROOT], cwd=tmp_path)
    # setuptools warns about a `project.license` table or license classifiers (PEP 639); the
    # pattern spares the file names kronjax/_deprecation.py and tests/test_deprecations.py
    assert not re.search(r"deprecated|DeprecationWarning", log, re.IGNORECASE), log
    (wheel,) = (tmp_path / "dist").glob("kronjax-*.whl")
    (sdist,) = (tmp_path / "dist").glob("kronjax-*.tar.gz")
    assert wheel.name.startswith(f"kronjax-{kronjax.__version__}-")  # the version written once
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = z.read(f"kronjax-{kronjax.__version__}.dist-info/METADATA").decode()
    assert "kronjax/py.typed" in names and "kronjax/models/panda.py" in names
    assert "License-Expression: Apache-2.0" in metadata
    with tarfile.open(sdist) as t:
        assert f"kronjax-{kronjax.__version__}/kronjax/py.typed" in t.getnames()

    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python, cli = env_dir / "bin" / "python", env_dir / "bin" / "kronjax"
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    _run([python, "-m", "pip", "install", "--quiet", wheel], cwd=tmp_path, env=environ)
    where = _run([python, "-c", "import kronjax; print(kronjax.__file__)"], cwd=tmp_path, env=environ)
    assert str(env_dir) in where and str(ROOT) not in where  # the installed copy, not the checkout

    info = _run([cli, "info", "panda"], cwd=tmp_path, env=environ)
    assert info.startswith("panda: 7 joint coordinates")  # the Panda arm has 7 revolute joints
    demo = _run([cli, "demo"], cwd=tmp_path, env=environ)
    for key in ("J_T3", "H_T3", "central difference", "optimised: cost"):
        assert key in demo, demo
