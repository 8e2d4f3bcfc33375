import time

from hsvm_cli.support.progress import StepBar


def test_a_disabled_bar_gives_no_callback():
    with StepBar(False, unit="step", desc="calibrate") as update:
        assert update is None


def test_a_step_done_within_half_a_second_shows_nothing(capsys):
    with StepBar(True, unit="row", desc="hash-data") as update:
        update(450, None)
    assert capsys.readouterr().err == ""


def test_the_bar_appears_once_a_step_lasts_and_shows_steps_and_postfix(capsys):
    with StepBar(True, unit="fold", desc="cross-validation") as update:
        assert capsys.readouterr().err == ""               # nothing until there is something to show
        update(2, 5)
        time.sleep(0.6)
        update(5, 5, "C=4")
    err = capsys.readouterr().err
    assert "cross-validation" in err and "5/5" in err and "C=4" in err and capsys.readouterr().out == ""
