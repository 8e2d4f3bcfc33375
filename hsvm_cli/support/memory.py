"""Refusing allocations this machine cannot make, before making them: a clear
message with the memory needed instead of a MemoryError traceback or the
kernel's OOM killer."""
import os

from ..errors import DataError


class TooLargeError(DataError):
    """Input that would need more memory than this machine has."""


def available_memory():
    """Bytes of memory available to new allocations (MemAvailable on Linux,
    else physical memory), or None when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.2f %s" % (n / scale, unit)
    return "%d bytes" % n


def check_allocation(nbytes, what):
    """Raise TooLargeError when ``nbytes`` for ``what`` exceed the memory
    available now."""
    have = available_memory()
    if have is not None and nbytes > have:
        raise TooLargeError("%s would need %s of memory; %s are available" % (what, format_bytes(nbytes),
                                                                             format_bytes(have)))
