"""A private single-node Slurm on localhost, for tests of job-array scripts.

``with local_slurm() as cluster:`` installs Debian's ``slurm-wlm`` and ``munge``
when missing (apt-get, non-interactive; needs root), writes a minimal
single-node ``slurm.conf`` into a fresh run directory, creates a random munge
key there, starts ``munged``, ``slurmctld`` and ``slurmd`` in the foreground
as children of this process (own socket, free ports, state, spool and logs
all inside the run directory, so nothing of the system's is touched and two
runs never meet), waits until the node is idle, and yields a
:class:`LocalSlurm` whose ``env`` points client commands (``sbatch``,
``squeue``, ...) at it.  On exit it cancels the jobs, stops exactly the
daemons it started (by pid) and removes the run directory.

Any failure to install or start raises :class:`SlurmStartError` with the
daemons' log text: a test that needs Slurm fails loudly, it never skips.

Leftovers.  Run directories live under one root (``$HSVM_SLURM_ROOT``,
default ``/tmp/hsvm-slurm-test``).  Each run holds an ``flock`` on its
directory's ``lock`` file for as long as it lives and records its daemons'
pids in ``pids``.  A new run takes over every directory whose lock is free
(its owner died, e.g. a test killed with SIGKILL): it stops the pids listed
there -- only those whose command line still names that directory, so a
recycled pid is never hit -- and removes the directory.  Runs in progress keep
their lock and are left alone.

Settings (known to work as root on Debian 12 in containers without systemd or
cgroup delegation): ``ProctrackType=proctrack/linuxproc``,
``TaskPlugin=task/none``, ``SelectType=select/cons_tres`` with
``CR_Core``, ``JobAcctGatherType=jobacct_gather/none``, no accounting, one node
named after ``hostname -s`` at 127.0.0.1 with ``CPUs`` = the CPUs this process
may use and 90 % of the memory.
"""
import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["LocalSlurm", "SlurmStartError", "local_slurm", "ensure_installed"]

ROOT = Path(os.environ.get("HSVM_SLURM_ROOT", "/tmp/hsvm-slurm-test"))
PACKAGES = ("slurm-wlm", "munge")
PROGRAMS = ("munged", "munge", "unmunge", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol", "squeue",
            "scancel")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
_LOG_TAIL = 6000


class SlurmStartError(RuntimeError):
    """Slurm could not be installed or started; the message holds the logs."""


# ----------------------------------------------------------------- install

def ensure_installed():
    """Install slurm-wlm and munge with apt-get when any program is missing.
    Returns the seconds spent installing (0 when nothing was missing)."""
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if not missing:
        return 0.0
    if os.geteuid() != 0:
        raise SlurmStartError("Slurm programs missing (%s) and installing %s needs root"
                              % (", ".join(missing), " ".join(PACKAGES)))
    t0 = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    res = subprocess.run(install, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if res.returncode != 0:
        # a fresh image may have no package lists yet
        upd = subprocess.run(["apt-get", "update", "-q"], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True)
        res = subprocess.run(install, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if res.returncode != 0:
            raise SlurmStartError("apt-get install %s failed (exit %d):\n%s\n%s"
                                  % (" ".join(PACKAGES), res.returncode, upd.stdout[-_LOG_TAIL:],
                                     (res.stdout + res.stderr)[-_LOG_TAIL:]))
    still = [p for p in PROGRAMS if shutil.which(p) is None]
    if still:
        raise SlurmStartError("after installing %s, still missing: %s" % (" ".join(PACKAGES), ", ".join(still)))
    return time.monotonic() - t0


# ---------------------------------------------------------------- leftovers

def _cmdline(pid):
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return None


def _stop_pid(pid, marker, timeout=STOP_TIMEOUT):
    """SIGTERM, then SIGKILL, the process ``pid`` if its command line holds
    ``marker`` (the run directory), so that a recycled pid is never hit."""
    cmd = _cmdline(pid)
    if cmd is None or marker not in cmd:
        return False
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)   # reap it if it is our child
            state = _proc_state(pid)
            if state is None or state == "Z":
                return True
            time.sleep(0.1)
    return True


def _proc_state(pid):
    try:
        text = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[0]


def clean_leftovers(root=ROOT):
    """Stop the daemons of dead runs under ``root`` and remove their
    directories; returns the directories removed."""
    removed = []
    if not root.is_dir():
        return removed
    for run in sorted(root.glob("run-*")):
        lock_path = run / "lock"
        try:
            fd = os.open(lock_path, os.O_RDWR)
        except OSError:
            fd = None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue          # a live run
        try:
            pids = (run / "pids").read_text().split() if (run / "pids").exists() else []
            # slurmd first, munged last: the reverse of starting
            for pid in reversed([int(p) for p in pids if p.isdigit()]):
                _stop_pid(pid, str(run))
            shutil.rmtree(run, ignore_errors=True)
            removed.append(run)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


# ------------------------------------------------------------------ cluster

def _free_ports(count):
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _mem_total_mb():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 1024


class LocalSlurm:
    """A running private Slurm.  ``env``: the environment for client commands
    (``SLURM_CONF`` set); ``node``: the node name; ``cpus``: its CPUs;
    ``run_dir``: the run directory (``work`` inside it is free for jobs)."""

    def __init__(self, root=ROOT, timeout=START_TIMEOUT):
        self.root = Path(root)
        self.timeout = timeout
        self.node = socket.gethostname().split(".")[0]
        self.cpus = len(os.sched_getaffinity(0))
        self.procs = {}
        self.run_dir = None
        self._lock_fd = None
        self.install_seconds = 0.0
        self.start_seconds = 0.0

    # -------------------------------------------------------------- start

    def start(self):
        t0 = time.monotonic()
        self.install_seconds = ensure_installed()
        self.root.mkdir(parents=True, exist_ok=True)
        clean_leftovers(self.root)
        self.run_dir = self.root / ("run-%d-%s" % (os.getpid(), secrets.token_hex(4)))
        self.run_dir.mkdir(mode=0o755)
        self._lock_fd = os.open(self.run_dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            self._start_munge()
            self._write_conf()
            self._start_slurm()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _spawn(self, name, argv):
        log = open(self.run_dir / "log" / ("%s.out" % name), "wb")
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as exc:
            raise SlurmStartError("cannot start %s: %s" % (name, exc)) from None
        finally:
            log.close()
        self.procs[name] = proc
        with open(self.run_dir / "pids", "a") as fh:
            fh.write("%d\n" % proc.pid)
        return proc

    def _start_munge(self):
        d = self.run_dir
        (d / "log").mkdir()
        (d / "munge").mkdir(mode=0o755)          # the socket's directory: others must reach it
        (d / "munge" / "etc").mkdir(mode=0o700)
        key = d / "munge" / "etc" / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(1024))
        self.munge_socket = d / "munge" / "munge.socket"
        self._spawn("munged", ["munged", "--foreground", "--force", "--socket=%s" % self.munge_socket,
                               "--key-file=%s" % key, "--log-file=%s" % (d / "log" / "munged.log"),
                               "--pid-file=%s" % (d / "munge" / "munged.pid"),
                               "--seed-file=%s" % (d / "munge" / "munged.seed")])
        self._wait("munged", self._munge_works, "munge credentials round-trip")

    def _munge_works(self):
        if not self.munge_socket.exists():
            return False
        enc = subprocess.run(["munge", "-n", "-S", str(self.munge_socket)], capture_output=True)
        if enc.returncode != 0:
            return False
        dec = subprocess.run(["unmunge", "-S", str(self.munge_socket)], input=enc.stdout, capture_output=True)
        return dec.returncode == 0

    def _write_conf(self):
        d = self.run_dir
        for sub in ("state", "spool", "work"):
            (d / sub).mkdir()
        ctld_port, d_port = _free_ports(2)
        self.conf = d / "slurm.conf"
        self.conf.write_text("\n".join([
            "# written by tests/slurm/slurm.py: a private single-node cluster",
            "ClusterName=hsvmtest",
            "SlurmctldHost=%s(127.0.0.1)" % self.node,
            "SlurmUser=root",
            "SlurmdUser=root",
            "SlurmctldPort=%d" % ctld_port,
            "SlurmdPort=%d" % d_port,
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.munge_socket,
            "StateSaveLocation=%s" % (d / "state"),
            "SlurmdSpoolDir=%s" % (d / "spool"),
            "SlurmctldPidFile=%s" % (d / "slurmctld.pid"),
            "SlurmdPidFile=%s" % (d / "slurmd.pid"),
            "SlurmctldLogFile=%s" % (d / "log" / "slurmctld.log"),
            "SlurmdLogFile=%s" % (d / "log" / "slurmd.log"),
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "ReturnToService=2",
            "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=%d State=UNKNOWN"
            % (self.node, self.cpus, int(_mem_total_mb() * 0.9)),
            "PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP" % self.node,
            "",
        ]))
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        for var in [v for v in self.env if v.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))]:
            if var != "SLURM_CONF":
                del self.env[var]   # an enclosing job's settings are not ours

    def _start_slurm(self):
        self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)])
        self._wait("slurmctld", lambda: self._client(["scontrol", "ping"]).stdout.count("UP") >= 1,
                   "slurmctld answering scontrol ping")
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf)])
        self._wait("slurmd", self._node_idle, "node %s idle in sinfo" % self.node)

    def _node_idle(self):
        res = self._client(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"])
        return res.returncode == 0 and res.stdout.strip().rstrip("*") == "idle"

    def _client(self, argv, **kw):
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=60, **kw)

    def _wait(self, name, ready, what):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for pname, proc in self.procs.items():
                if proc.poll() is not None:
                    raise SlurmStartError("%s exited with status %s while waiting for %s\n%s"
                                          % (pname, proc.returncode, what, self.logs()))
            try:
                if ready():
                    return
            except subprocess.TimeoutExpired:
                pass
            time.sleep(0.25)
        raise SlurmStartError("%s: no %s after %.0f s\n%s" % (name, what, self.timeout, self.logs()))

    def logs(self):
        """The tail of every daemon log, for error messages."""
        out = []
        if self.run_dir is None or not (self.run_dir / "log").is_dir():
            return ""
        for path in sorted((self.run_dir / "log").iterdir()):
            text = path.read_text(errors="replace")
            out.append("----- %s -----\n%s" % (path.name, text[-_LOG_TAIL:]))
        if getattr(self, "conf", None) is not None and self.conf.exists():
            out.append("----- slurm.conf -----\n%s" % self.conf.read_text())
        return "\n".join(out)

    # ---------------------------------------------------------------- use

    def sbatch(self, *args, cwd=None):
        """Run ``sbatch ARGS`` against this cluster; returns the
        CompletedProcess (text output), whatever its status."""
        return subprocess.run(["sbatch", *map(str, args)], env=self.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, cwd=cwd or self.run_dir / "work")

    def command(self, *argv):
        return self._client(list(map(str, argv)))

    # --------------------------------------------------------------- stop

    def stop(self):
        """Cancel jobs, stop the daemons this object started, remove the run
        directory."""
        if self.procs.get("slurmctld") is not None and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(Exception):
                self._client(["scancel", "--user=%s" % os.getuid(), "--full"])
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        if self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


@contextlib.contextmanager
def local_slurm(root=ROOT, timeout=START_TIMEOUT):
    """Context manager: a started :class:`LocalSlurm`, stopped and removed on exit."""
    cluster = LocalSlurm(root=root, timeout=timeout)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
