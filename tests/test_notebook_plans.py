"""The legged robots and closed chains notebook runs top to bottom, its asserts included (CI
executes it): a file of its own, so that the test workers share the notebooks' minutes."""

import importlib.metadata

import pytest
from test_notebooks import NOTEBOOKS, run_notebook

pytestmark = pytest.mark.slow


def test_legged_and_closed_chain_plans_notebook_runs():
    try:
        importlib.metadata.files("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the notebook plans ANYmal B from example-robot-data, which is not installed")
    run_notebook(NOTEBOOKS / "legged_and_closed_chain_plans.ipynb")
