"""The README's demo command runs and its finite-difference check passes."""

from kronjax.__main__ import main


def test_demo_prints_the_stacker_analysis(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for key in ("J_T3", "H_T3", "J_R3", "H_R3", "central difference", "max difference"):
        assert key in out


def test_unknown_command_shows_usage(capsys):
    assert main(["fly"]) == 2
    assert "usage: kronjax" in capsys.readouterr().err
