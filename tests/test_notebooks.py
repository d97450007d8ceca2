"""The notebooks run top to bottom (CI executes them)."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
OWN_FILE = ("legged_and_closed_chain_plans.ipynb",)  # tests/test_notebook_plans.py


def run_notebook(path: Path) -> None:
    """Execute a notebook; its cells' errors (failed asserts included) fail the test."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    outputs = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", []))
    assert outputs


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if p.name not in OWN_FILE))
def test_notebook_runs(name):
    run_notebook(NOTEBOOKS / name)
