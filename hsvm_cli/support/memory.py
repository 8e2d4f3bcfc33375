"""Refusing allocations this machine cannot make, before making them: a clear
message with the memory needed instead of a MemoryError traceback or the
kernel's OOM killer."""
import os

from ..errors import DataError


class TooLargeError(DataError):
    """Input that would need more memory than this machine has."""


def available_memory():
    """Bytes this process may still allocate, or None when unknown: the least
    of the machine's MemAvailable (physical memory where there is no
    /proc/meminfo), what is left of the address-space limit (``ulimit -v``,
    RLIMIT_AS) and what is left of the memory cgroup's limit (a container's
    or a Slurm job's ``--mem``; page cache it may reclaim counts as free)."""
    limits = [lim for lim in (_machine_available(), _address_space_left(), _cgroup_left()) if lim is not None]
    return min(limits) if limits else None


def _machine_available():
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


def _address_space_left():
    try:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return None
    if limit == resource.RLIM_INFINITY or limit < 0:
        return None
    try:
        with open("/proc/self/status") as fh:
            used = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, ValueError, StopIteration):
        return None
    return max(0, limit - used)


# A cgroup limit this large means "no limit" (v1 writes 2^63 rounded to pages).
_NO_LIMIT = 1 << 60


def _cgroup_left():
    """Limit minus usage (less inactive page cache) of this process's memory
    cgroup, v2 (``memory.max``) or v1 (``memory.limit_in_bytes``)."""
    try:
        with open("/proc/self/cgroup") as fh:
            entries = [line.rstrip("\n").split(":", 2) for line in fh]
    except OSError:
        return None
    for entry in entries:
        if len(entry) != 3:
            continue
        _, controllers, path = entry
        if controllers == "":
            found = _cgroup_files("/sys/fs/cgroup", path, "memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):
            found = _cgroup_files("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes",
                                  "total_inactive_file")
        else:
            continue
        if found is not None:
            return found
    return None


def _cgroup_files(root, path, limit_name, usage_name, inactive_key):
    # Inside a cgroup namespace the process's own cgroup is the mount's root.
    for directory in (os.path.join(root, path.lstrip("/")), root):
        try:
            with open(os.path.join(directory, limit_name)) as fh:
                text = fh.read().strip()
            limit = _NO_LIMIT if text == "max" else int(text)
            if limit >= _NO_LIMIT:
                return None
            with open(os.path.join(directory, usage_name)) as fh:
                usage = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        inactive = 0
        try:
            with open(os.path.join(directory, "memory.stat")) as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == inactive_key:
                        inactive = int(value)
                        break
        except (OSError, ValueError):
            pass
        return max(0, limit - max(0, usage - inactive))
    return None


def format_bytes(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.2f %s" % (n / scale, unit)
    return "%d bytes" % n


def fits(nbytes, have=None):
    """Whether ``nbytes`` fit in the memory available now (``have``, or
    :func:`available_memory`; unknown: they do)."""
    have = available_memory() if have is None else have
    return have is None or nbytes <= have


def check_allocation(nbytes, what):
    """Raise TooLargeError when ``nbytes`` for ``what`` exceed the memory
    available now."""
    have = available_memory()
    if not fits(nbytes, have):
        raise TooLargeError("%s would need %s of memory; %s are available" % (what, format_bytes(nbytes),
                                                                             format_bytes(have)))
