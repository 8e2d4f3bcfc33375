"""Job arrays on a real (private, single-node) Slurm: the harness of
tests/slurm/slurm.py starts munged, slurmctld and slurmd, and sbatch --wait
runs arrays whose tasks see SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT and
SLURM_CPUS_PER_TASK.  Run with `make test-slurm` (needs root to install
slurm-wlm and munge the first time)."""
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm import LocalSlurm, clean_leftovers, local_slurm  # noqa: E402

# `cluster`: the private Slurm of this session (tests/slurm/conftest.py).


def write_script(path, body):
    path.write_text("#!/bin/bash\nset -euo pipefail\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def test_sbatch_wait_runs_every_array_task_with_its_id_count_and_cpus(cluster, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    script = write_script(tmp_path / "task.sh", """\
        echo "$SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT ${SLURM_CPUS_PER_TASK:-unset}" \\
            > "%s/task.$SLURM_ARRAY_TASK_ID"
    """ % out)
    res = cluster.sbatch("--wait", "--array=0-2", "--cpus-per-task=1", "-o", tmp_path / "slurm-%A_%a.out",
                         script)
    assert res.returncode == 0, res.stdout + res.stderr + cluster.logs()
    got = {p.name: p.read_text().split() for p in out.iterdir()}
    assert got == {"task.%d" % i: [str(i), "3", "1"] for i in range(3)}


def test_cpus_per_task_reaches_the_task(cluster, tmp_path):
    if cluster.cpus < 2:
        pytest.skip("one CPU: --cpus-per-task=2 cannot be met")
    out = tmp_path / "cpus"
    script = write_script(tmp_path / "cpus.sh", 'echo "$SLURM_CPUS_PER_TASK" > "%s"\n' % out)
    res = cluster.sbatch("--wait", "--cpus-per-task=2", "-o", "/dev/null", script)
    assert res.returncode == 0, res.stderr + cluster.logs()
    assert out.read_text().strip() == "2"


def test_a_failing_task_makes_sbatch_wait_fail(cluster, tmp_path):
    script = write_script(tmp_path / "fail.sh", '[ "$SLURM_ARRAY_TASK_ID" != 1 ] || exit 3\n')
    res = cluster.sbatch("--wait", "--array=0-2", "-o", "/dev/null", script)
    assert res.returncode != 0


def test_a_dependent_job_runs_after_the_whole_array(cluster, tmp_path):
    # the pattern of train-by-blocks then merge: --dependency=afterok:ARRAY
    stamp = tmp_path / "stamps"
    stamp.mkdir()
    work = write_script(tmp_path / "work.sh", 'sleep 1; touch "%s/done.$SLURM_ARRAY_TASK_ID"\n' % stamp)
    after = write_script(tmp_path / "after.sh", 'ls "%s" | sort > "%s/seen"\n' % (stamp, tmp_path))
    first = cluster.sbatch("--parsable", "--array=0-3", "-o", "/dev/null", work)
    assert first.returncode == 0, first.stderr
    job = first.stdout.strip().split(";")[0]
    res = cluster.sbatch("--wait", "--dependency=afterok:%s" % job, "-o", "/dev/null", after)
    assert res.returncode == 0, res.stderr + cluster.logs()
    assert (tmp_path / "seen").read_text().split() == ["done.%d" % i for i in range(4)]


def test_leftovers_of_a_killed_run_are_stopped_and_removed(tmp_path):
    """A run killed with SIGKILL leaves its daemons; the next run stops them
    (by the pids it recorded) and removes its directory."""
    root = tmp_path / "root"
    here = Path(__file__).resolve().parent
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""\
            import sys, time
            sys.path.insert(0, %r)
            from slurm import LocalSlurm
            c = LocalSlurm(root=%r).start()
            print(c.run_dir, flush=True)
            time.sleep(600)
        """ % (str(here), str(root)))], stdout=subprocess.PIPE, text=True)
    try:
        run_dir = Path(child.stdout.readline().strip())
        assert run_dir.is_dir(), "the child run did not start"
        pids = [int(p) for p in (run_dir / "pids").read_text().split()]
        assert len(pids) == 3 and all(Path("/proc/%d" % p).exists() for p in pids)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert all(Path("/proc/%d" % p).exists() for p in pids), "daemons outlive their killed owner"
    with local_slurm(root=root) as again:
        assert again.run_dir != run_dir
        assert not run_dir.exists()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        assert not any(_alive(p) for p in pids)
    assert list(root.iterdir()) == []
    assert clean_leftovers(root) == []


def _alive(pid):
    try:
        state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_daemon_that_cannot_start_fails_with_its_log(tmp_path, monkeypatch):
    cluster = LocalSlurm(root=tmp_path / "root", timeout=20)
    real = cluster._write_conf

    def broken_conf():
        real()
        cluster.conf.write_text(cluster.conf.read_text().replace("SelectType=select/cons_tres",
                                                                 "SelectType=select/no_such_plugin"))
    monkeypatch.setattr(cluster, "_write_conf", broken_conf)
    from slurm import SlurmStartError
    with pytest.raises(SlurmStartError) as info:
        cluster.start()
    assert "slurmctld" in str(info.value) and "no_such_plugin" in str(info.value)
    assert list((tmp_path / "root").iterdir()) == []
