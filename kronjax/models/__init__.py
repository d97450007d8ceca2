"""Built-in models: the papers' examples, real arms with published parameters, and closed-chain
mechanisms (:class:`kronjax.constrained.Mechanism`)."""

from .double_pendulum import double_pendulum as double_pendulum
from .five_bar import five_bar as five_bar
from .four_bar import four_bar as four_bar
from .panda import panda as panda
from .puma560 import puma560 as puma560
from .slider_crank import slider_crank as slider_crank
from .stacker import stacker as stacker
from .stewart3 import stewart3 as stewart3
from .truc_elbow import truc_elbow as truc_elbow
from .ur5 import ur5 as ur5

__all__ = [
    "stacker",
    "truc_elbow",
    "double_pendulum",
    "puma560",
    "panda",
    "ur5",
    "four_bar",
    "slider_crank",
    "five_bar",
    "stewart3",
]
