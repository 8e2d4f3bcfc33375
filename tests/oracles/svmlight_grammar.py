"""Building svmlight text from choices: mostly well-formed lines with the
format's corner cases (signs, exponents, points without digits, qid, comments,
CRLF, every kind of blank) and, now and then, one of the ways a line goes wrong
(hex, inf, values beyond float32, labels beyond int64, unsorted, repeated or
signed indices, junk bytes).

``build(choose)`` takes a function ``choose(options)`` returning one element of
a sequence, and ``number(lo, hi)`` returning an int in [lo, hi], so that the
same grammar drives hypothesis (a seeded ``random.Random``) and atheris
(``FuzzedDataProvider``)."""

SPACES = [b" ", b" ", b" ", b"\t", b"  ", b" \t ", b"\r", b"\x0b", b"\x0c"]
GOOD_VALUES = [
    b"0", b"-0", b"+0", b"1", b"-1", b"1.", b".5", b"-.5", b"+.5", b"1e5", b"1E-5", b"1e+5", b"0e999",
    b"3.4028235e38", b"-3.4028234663852886e38", b"3.4028235677973362e38", b"1e38", b"1e-400", b"4.9e-324",
    b"2.2250738585072011e-308", b"123456789012345678901234567890", b"0.1000000000000000055511151231257827",
    b"9007199254740993", b"1" * 25 + b".5",
]
BAD_VALUES = [
    b"3.4028235677973366e38", b"1e39", b"-1e39", b"1e308", b"1e309", b"0x10", b"0x1p3", b"inf", b"-inf",
    b"nan", b"NaN", b"infinity", b"", b".", b"-", b"+", b"e5", b"1e", b"1e+", b"1.5.2", b"1,5", b"--1", b"1-",
    b"abc", b"\x00", b"1\x00", b"\xff", b"\xef\xbb\xbf1", b"2:4",
]
GOOD_LABELS = [
    b"0", b"1", b"-1", b"+2", b"3.0", b"1e1", b"-0", b"2.", b"-4E+0", b".0", b"1e-400",
    b"9223372036854775807", b"-9223372036854775808", b"9.2233720368547748e18", b"-9.2233720368547758e18",
]
BAD_LABELS = [
    b"9223372036854775808", b"-9223372036854775809", b"9.2233720368547758e18", b"1e30", b"1e400",
    b"3.5", b"1e-1", b"0x3", b"nan", b"inf", b"1,2", b"1,2,3", b"abc", b"\xef\xbb\xbf1", b"\x00", b"1:1",
]
BAD_INDICES = [b"0", b"00", b"+3", b"-3", b"x", b"1.5", b"", b"2147483647", b"99999999999", b"1" * 30, b"qid"]


def _digits(choose, number, lo, hi):
    return bytes(choose(b"0123456789") for _ in range(number(lo, hi)))


def decimal(choose, number):
    sign = choose([b"", b"", b"-", b"+"])
    kind = number(0, 4)
    if kind == 0:
        body = _digits(choose, number, 1, 22)
    elif kind == 1:
        body = _digits(choose, number, 1, 12) + b"." + _digits(choose, number, 0, 12)
    elif kind == 2:
        body = b"." + _digits(choose, number, 1, 12)
    else:
        body = _digits(choose, number, 1, 3) + b"." + _digits(choose, number, 1, 20)
    if number(0, 3) == 0:
        # within float32 mostly; the far ends are among the edge values
        body += choose([b"e", b"E"]) + choose([b"", b"+", b"-", b"-"]) + b"%d" % number(0, 30)
    return sign + body


def value(choose, number, bad_rate):
    if number(0, 99) < bad_rate:
        return choose(BAD_VALUES)
    return decimal(choose, number) if number(0, 3) else choose(GOOD_VALUES)


def label(choose, number, bad_rate):
    if number(0, 99) < bad_rate:
        return choose(BAD_LABELS)
    k = number(0, 9)
    if k < 6:
        return b"%d" % number(-1000, 1000)
    if k < 8:  # a whole number written as a float
        return choose([b"%d.%s" % (number(-99, 99), b"0" * number(0, 3)), b"%de%d" % (number(-9, 9), number(0, 9)),
                       b"%d.5e1" % number(-9, 9)])
    return choose(GOOD_LABELS)


def line(choose, number, *, bad_rate):
    """One line without its newline."""
    kind = number(0, 19)
    if kind == 0:
        return b""
    if kind == 1:
        return choose(SPACES) + b"# a comment"
    if kind == 2:
        return choose(SPACES)
    parts = [label(choose, number, bad_rate)]
    if number(0, 9) == 0:
        bad = number(0, 99) < bad_rate
        parts.append(b"qid:" + choose([b"", b"x", b"1.5"] if bad else [b"1", b"-2", b"+3", b"007"]))
    col = 0
    for _ in range(number(0, 8)):
        col += number(1, 5)
        index = b"%d" % col
        if number(0, 99) < bad_rate:
            index = choose(BAD_INDICES + [b"%d" % max(col - 2, 0), b"%d" % (col - 1)])
        parts.append(index + b":" + value(choose, number, bad_rate))
    text = b""
    for i, p in enumerate(parts):
        text += (choose(SPACES) if i else b"") + p
    if number(0, 5) == 0:
        text = choose([b"", b" ", b"\t"]) + text
    if number(0, 5) == 0:
        text += choose([b"", b" "]) + b"#" + choose([b"", b" trailing", b"#", b"1:2"])
    elif number(0, 5) == 0:
        text += choose(SPACES)
    return text


def build(choose, number, *, max_lines=12, bad_rate=2):
    """A file of up to ``max_lines`` lines; ``bad_rate``: the percentage of
    labels, indices, values and qids drawn from the wrong ones."""
    newline = choose([b"\n", b"\n", b"\r\n"])
    lines = [line(choose, number, bad_rate=bad_rate) for _ in range(number(0, max_lines))]
    text = newline.join(lines)
    if lines and number(0, 2):
        text += newline
    return text
