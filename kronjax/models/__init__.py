"""Built-in models: the papers' examples."""

from .double_pendulum import double_pendulum as double_pendulum
from .stacker import stacker as stacker
from .truc_elbow import truc_elbow as truc_elbow

__all__ = ["stacker", "truc_elbow", "double_pendulum"]
