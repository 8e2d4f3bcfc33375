"""Peak memory and time of `hsvm eval` on probability files of growing length
(K = 242 classes, as omniglot-242's `predict --proba`): the memory should
not grow with the rows.

    .venv/bin/python bench/bench_eval_memory.py [--rows 1210 12100 48400 193600] [--json]

The files are random Dirichlet rows printed as `predict --proba` prints them
(%.6g), with random true labels; each `hsvm eval --json` runs in its own
process under /usr/bin/time -f %M (peak RSS)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from common import machine_line, markdown_table

HSVM = [sys.executable, "-m", "hsvm_cli"]


def write_files(directory, n, K, seed):
    rng = np.random.default_rng(seed)
    classes = np.arange(1, K + 1)
    pred, truth = os.path.join(directory, "p%d.txt" % n), os.path.join(directory, "t%d.svm" % n)
    with open(pred, "w") as fp, open(truth, "w") as ft:
        fp.write("labels " + " ".join(map(str, classes)) + "\n")
        for s in range(0, n, 1000):
            P = rng.dirichlet(np.full(K, 0.05), size=min(1000, n - s))
            fp.write("".join("%d %s\n" % (c, " ".join("%.6g" % v for v in row))
                             for c, row in zip(classes[P.argmax(axis=1)], P)))
            ft.write("".join("%d 1:1\n" % v for v in classes[rng.integers(0, K, P.shape[0])]))
    return truth, pred


def peak(truth, pred):
    r = subprocess.run(["/usr/bin/time", "-f", "%M %e"] + HSVM + ["eval", "--truth", truth, pred, "--json"],
                       capture_output=True, text=True, check=True)
    kb, seconds = r.stderr.strip().splitlines()[-1].split()
    return int(kb) / 1024.0, float(seconds)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1210, 12100, 48400, 193600])
    ap.add_argument("--classes", type=int, default=242)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in a.rows:
            truth, pred = write_files(d, n, a.classes, seed=n)
            mb, seconds = peak(truth, pred)
            rows.append({"rows": n, "file_mb": round(os.path.getsize(pred) / 1e6, 1), "peak_rss_mb": round(mb, 1),
                         "seconds": seconds})
            os.remove(pred)
    if a.json:
        print(json.dumps({"machine": machine_line(), "classes": a.classes, "rows": rows}))
        return
    print(machine_line())
    print(markdown_table(["rows", "file MB", "peak RSS MB", "seconds"],
                         [[r["rows"], r["file_mb"], r["peak_rss_mb"], r["seconds"]] for r in rows]))


if __name__ == "__main__":
    main()
