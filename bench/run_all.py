"""make bench: run every benchmark in this folder, one after the other, and
print their tables (each script also runs alone; see its docstring)."""
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["bench_parse.py", "bench_input_path.py", "bench_train.py", "bench_c_search.py", "bench_kernel.py",
           "bench_exact_votes.py", "bench_products.py", "bench_fidelity.py", "bench_filter.py", "bench_table1.py",
           "bench_refine_vs_exact.py", "bench_raw_filter.py", "bench_calibrate.py", "bench_calibrate_time.py",
           "bench_integrity.py", "bench_eval_memory.py", "bench_exact_proba.py",
           "bench_dag.py", "bench_first_stage.py", "bench_ovr.py", "bench_hashsvm.py", "bench_cluster.py",
           "bench_circulant.py"]
# Arguments a script runs with here instead of its full default run
# (bench_circulant.py's takes over an hour; --quick about a minute).
SCRIPT_ARGS = {"bench_circulant.py": ["--quick"], "bench_refine_vs_exact.py": ["--small-d"]}


def main():
    failed = []
    for name in SCRIPTS:
        path = HERE / name
        if not path.exists():
            continue
        print("\n## %s\n" % name, flush=True)
        t0 = time.time()
        args = sys.argv[1:] or SCRIPT_ARGS.get(name, [])
        rc = subprocess.call([sys.executable, str(path)] + args, cwd=str(HERE.parent))
        print("\n(%s: %.0f s, exit %d)" % (name, time.time() - t0, rc), flush=True)
        if rc:
            failed.append(name)
    if failed:
        print("failed: %s" % ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
