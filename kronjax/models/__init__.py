"""Built-in models: the papers' examples and real arms with published parameters."""

from .double_pendulum import double_pendulum as double_pendulum
from .panda import panda as panda
from .puma560 import puma560 as puma560
from .stacker import stacker as stacker
from .truc_elbow import truc_elbow as truc_elbow
from .ur5 import ur5 as ur5

__all__ = ["stacker", "truc_elbow", "double_pendulum", "puma560", "panda", "ur5"]
