"""A tqdm bar on stderr that exists only once there is something to show:
long steps report ``(done, total[, what])`` and the bar is made on the first
report, so a quiet run never imports tqdm."""


class StepBar:
    """Context manager giving ``update(done, total, what=None)`` (or None
    when not ``enabled``); ``unit`` and ``desc`` label the bar;
    ``fractional``: ``done`` moves in fractions of a unit (shown to a tenth)."""

    def __init__(self, enabled, *, unit, desc, fractional=False):
        self.enabled = enabled
        self.unit, self.desc = unit, desc
        self.fractional = fractional
        self.bar = None

    def __enter__(self):
        if not self.enabled:
            return None

        def update(done, total, what=None):
            if self.bar is None:
                import sys

                from tqdm import tqdm
                # delay: a step done within half a second shows no bar (nor an empty line)
                # tqdm prints a float count in full (0.30000000000000004)
                fmt = ("{l_bar}{bar}| {n:.1f}/{total_fmt} {unit}s [{elapsed}<{remaining}{postfix}]"
                       if self.fractional else None)
                # (and its dynamic miniters, learnt from whole-unit steps, held
                # the display back to about one update a unit)
                self.bar = tqdm(total=total, file=sys.stderr, unit=self.unit, desc=self.desc, dynamic_ncols=True,
                                delay=0.5, bar_format=fmt, **({"miniters": 0.01} if self.fractional else {}))
            if what is not None:
                self.bar.set_postfix_str(what, refresh=False)
            self.bar.update(done - self.bar.n)
        return update

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def counting_bar(total, enabled, *, unit, desc):
    """A tqdm bar on stderr counting ``total`` units, or when not ``enabled``
    an object whose update and close do nothing: a disabled tqdm (4.70) still
    starts its monitor thread, left running in a library caller's process
    (and in the parent of a later fork)."""
    if not enabled:
        return _NoBar()
    import sys

    from tqdm import tqdm
    return tqdm(total=total, file=sys.stderr, unit=unit, desc=desc, dynamic_ncols=True)
