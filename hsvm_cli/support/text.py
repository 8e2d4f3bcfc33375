"""Numbers in text: counts in words, for messages and reprs; integers as
the command line and the data files spell them."""
import re

_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")


def decimal_int(value):
    """int(value) for ASCII decimal digits only, as the data files' parser
    reads integers: Python's int() also takes "1_000", "٦٤" and "３", which a
    shell script did not mean as numbers (and no other tool reads so)."""
    if isinstance(value, str) and not _DECIMAL_INT.fullmatch(value.strip()):
        raise ValueError(value)
    return int(value)


def counted(n, noun):
    """``n`` and ``noun``, plural unless n is 1: "1 pair", "45 pairs"."""
    return "%d %s%s" % (n, noun, "" if n == 1 else "s")
