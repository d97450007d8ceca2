"""The second half of ``tests/test_robot_zoo.py``'s slow tier (the packages from
:data:`test_robot_zoo.SECOND_HALF` on), in a file of its own so that it runs on another worker."""

from __future__ import annotations

import pytest
from test_robot_zoo import FILES, FORWARD, INSTANCES, slow_tier
from zoo import check_against_pinocchio

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)


@pytest.mark.slow
@pytest.mark.usefixtures("without_shape_checks")
@pytest.mark.parametrize("instance", slow_tier(INSTANCES, first_half=False))
def test_every_robot_agrees_with_pinocchio(instance):
    check_against_pinocchio(FILES, instance, forward=instance.name in FORWARD)
