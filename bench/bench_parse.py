"""svmlight parse throughput: hsvm's streaming reader against scikit-learn's.

Decompresses a data set once to a temporary file, then times, in this one
process, the median of several runs of
  - hsvm iter_svmlight (streaming, default chunk_rows; chunks consumed and dropped),
    on one thread and on the default threads (each block split among them;
    a compressed file's next block decompressed on another thread)
  - hsvm load_svmlight (whole file into one CSR matrix), default threads
  - sklearn.datasets.load_svmlight_file
on those same bytes, and the same three on the gzip file to show what
decompression costs.  Throughput is MB (10^6 bytes) of decompressed text per
second in every row, so the gzip rows are comparable with the plain ones.

    .venv/bin/python bench/bench_parse.py [--data PATH.svm.gz] [--repeat N] [--json]
"""
import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hsvm_cli.io.svmlight import iter_svmlight, load_svmlight


def default_data():
    root = os.environ.get("HSVM_SHARED_DATA")
    root = Path(root) if root else REPO.parent / "shared" / "data"
    return root / "fashion-mnist-20k" / "train.svm.gz"


def median_seconds(fn, repeat):
    fn()  # warm-up: page cache, allocator, imports
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def consume_stream(source, threads=None):
    rows = 0
    for chunk in iter_svmlight(source, threads=threads):
        rows += chunk.X.shape[0]
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="gzip svmlight file (default: fashion-mnist-20k train)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per reader (median reported)")
    ap.add_argument("--no-gzip", action="store_true", help="skip the timings on compressed input (gzip, zstd)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args(argv)

    gz_path = args.data or default_data()
    if not gz_path.exists():
        ap.error("%s not found (set HSVM_SHARED_DATA or pass --data)" % gz_path)
    from sklearn.datasets import load_svmlight_file

    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "data.svm")  # no .gz suffix: sklearn must not decompress
        with gzip.open(gz_path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        size = os.path.getsize(plain)

        # the readers must agree before their speed means anything
        X, y = load_svmlight(plain)
        Xs, ys = load_svmlight_file(plain, zero_based=False)
        assert X.shape == Xs.shape and (X != Xs).nnz == 0 and (y == ys).all()

        cases = [
            ("hsvm iter_svmlight 1 thread", "plain", lambda: consume_stream(plain, threads=1)),
            ("hsvm iter_svmlight", "plain", lambda: consume_stream(plain)),
            ("hsvm load_svmlight", "plain", lambda: load_svmlight(plain)),
            ("sklearn load_svmlight_file", "plain", lambda: load_svmlight_file(plain, zero_based=False)),
        ]
        if not args.no_gzip:
            gz = str(gz_path)
            cases += [
                ("hsvm iter_svmlight 1 thread", "gzip", lambda: consume_stream(gz, threads=1)),
                ("hsvm iter_svmlight", "gzip", lambda: consume_stream(gz)),
                ("hsvm load_svmlight", "gzip", lambda: load_svmlight(gz)),
                ("sklearn load_svmlight_file", "gzip", lambda: load_svmlight_file(gz, zero_based=False)),
            ]
            # the same text as zstd (level 3, the zstd tool's default; hsvm
            # only: scikit-learn does not read it)
            from hsvm_cli.io.files import _zstd
            zst = os.path.join(tmp, "data.zst")
            with open(plain, "rb") as src:
                text = src.read()
            with open(zst, "wb") as dst:
                dst.write(_zstd().compress(text, level=3))
            del text
            cases += [
                ("hsvm iter_svmlight", "zstd", lambda: consume_stream(zst)),
                ("hsvm load_svmlight", "zstd", lambda: load_svmlight(zst)),
            ]
        results = []
        for reader, source, fn in cases:
            sec = median_seconds(fn, args.repeat)
            results.append({"reader": reader, "input": source, "seconds": sec, "mb_per_s": size / 1e6 / sec})

    def rate(reader, source):
        return next(r["mb_per_s"] for r in results if r["reader"] == reader and r["input"] == source)

    ratios = {}
    for source in ("plain", "gzip"):
        if any(r["input"] == source for r in results):
            sk = rate("sklearn load_svmlight_file", source)
            ratios[source] = {
                "iter_vs_sklearn": rate("hsvm iter_svmlight", source) / sk,
                "load_vs_sklearn": rate("hsvm load_svmlight", source) / sk,
            }
    report = {
        "data": str(gz_path),
        "decompressed_bytes": size,
        "rows": int(X.shape[0]),
        "nnz": int(X.nnz),
        "repeat": args.repeat,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "results": results,
        "ratios": ratios,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print("%s: %.1f MB decompressed, %d rows, %d non-zeros; median of %d runs"
          % (gz_path, size / 1e6, X.shape[0], X.nnz, args.repeat))
    from hsvm_cli.support.threads import default_threads
    print("default threads: %d" % default_threads())
    print("%-28s %-6s %9s %9s" % ("reader", "input", "seconds", "MB/s"))
    for r in results:
        print("%-28s %-6s %9.3f %9.1f" % (r["reader"], r["input"], r["seconds"], r["mb_per_s"]))
    for source, rat in ratios.items():
        print("%s: iter_svmlight %.1fx, load_svmlight %.1fx sklearn"
              % (source, rat["iter_vs_sklearn"], rat["load_vs_sklearn"]))


if __name__ == "__main__":
    main()
