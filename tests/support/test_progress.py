from hsvm_cli.support.progress import StepBar


def test_a_disabled_bar_gives_no_callback():
    with StepBar(False, unit="step", desc="calibrate") as update:
        assert update is None


def test_the_bar_appears_on_the_first_report_and_shows_steps_and_postfix(capsys):
    with StepBar(True, unit="fold", desc="cross-validation") as update:
        assert capsys.readouterr().err == ""               # nothing until there is something to show
        update(2, 5)
        update(5, 5, "C=4")
    err = capsys.readouterr().err
    assert "cross-validation" in err and "5/5" in err and "C=4" in err and capsys.readouterr().out == ""
