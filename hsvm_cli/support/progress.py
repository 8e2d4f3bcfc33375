"""A tqdm bar on stderr that exists only once there is something to show:
long steps report ``(done, total[, what])`` and the bar is made on the first
report, so a quiet run never imports tqdm."""


class StepBar:
    """Context manager giving ``update(done, total, what=None)`` (or None
    when not ``enabled``); ``unit`` and ``desc`` label the bar."""

    def __init__(self, enabled, *, unit, desc):
        self.enabled = enabled
        self.unit, self.desc = unit, desc
        self.bar = None

    def __enter__(self):
        if not self.enabled:
            return None

        def update(done, total, what=None):
            if self.bar is None:
                import sys

                from tqdm import tqdm
                # delay: a step done within half a second shows no bar (nor an empty line)
                self.bar = tqdm(total=total, file=sys.stderr, unit=self.unit, desc=self.desc, dynamic_ncols=True,
                                delay=0.5)
            if what is not None:
                self.bar.set_postfix_str(what, refresh=False)
            self.bar.update(done - self.bar.n)
        return update

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False
