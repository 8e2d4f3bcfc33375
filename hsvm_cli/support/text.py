"""Counts in words, for messages and reprs."""


def counted(n, noun):
    """``n`` and ``noun``, plural unless n is 1: "1 pair", "45 pairs"."""
    return "%d %s%s" % (n, noun, "" if n == 1 else "s")
