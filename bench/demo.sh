#!/usr/bin/env bash
# make demo: the main job on the bundled omniglot-242 set (242 classes, 29,161
# one-vs-one pairs): C by cross-validation, train, hash, filter-and-refine
# predict, eval; exact vs hashed accuracy and time side by side, and LIBSVM's
# one-vs-one linear SVM on the same files when svm-train is installed.
set -euo pipefail
PY=${1:-.venv/bin/python}
HSVM="$(dirname "$PY")/hsvm"
DATA=data/omniglot-242
OUT=demo-out
mkdir -p "$OUT"

echo "== train-ovo -c auto: C by 5-fold cross-validation (LIBLINEAR's -C search), one LIBLINEAR SVM per class pair"
"$HSVM" train-ovo "$DATA/train.svm.gz" -c auto --seed 1 --jobs 2 -o "$OUT/omniglot.hsvm"
echo "== hash-model: 1024-bit sign random projection codes of every classifier"
"$HSVM" hash-model -m "$OUT/omniglot.hsvm" --bits 1024 --seed 1 -o "$OUT/omniglot.hbm"

# whole-process wall time of a command into $OUT/NAME.wall (users pay for the whole process)
timed() {
    local name=$1; shift
    local t0 t1
    t0=$(date +%s.%N)
    "$@"
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' > "$OUT/$name.wall"
}

echo "== predict --exact (every pair on every sample)"
timed exact "$HSVM" predict --exact -m "$OUT/omniglot.hsvm" "$DATA/test.svm.gz" -o "$OUT/exact.txt" --timings \
    2> "$OUT/exact.log"
cat "$OUT/exact.log"
echo "== predict with hash filter (1024 bits, keep k=7 of 242 classes, 3%; hsvm calibrate chooses k) + exact refine"
timed hashed "$HSVM" predict -m "$OUT/omniglot.hsvm" -H "$OUT/omniglot.hbm" --bits 1024 --filter-k 7 \
    "$DATA/test.svm.gz" -o "$OUT/hashed.txt" --timings 2> "$OUT/hashed.log"
cat "$OUT/hashed.log"
echo "== predict with the class-score first stage (no hash model; default k: 10% of the classes) + exact refine"
timed scores "$HSVM" predict -m "$OUT/omniglot.hsvm" --first-stage scores \
    "$DATA/test.svm.gz" -o "$OUT/scores.txt" --timings 2> "$OUT/scores.log"
cat "$OUT/scores.log"

rm -f "$OUT/libsvm.log"
if command -v svm-train > /dev/null && command -v svm-predict > /dev/null; then
    echo "== LIBSVM svm-train -t 0 -c 0.5 (one-vs-one linear SVM; C = 0.5 is its best on this test file, BENCHMARKS.md)"
    # its model kept from an earlier run on the same files (C is fixed: ~20 s of a rerun saved)
    if [ ! -s "$OUT/libsvm.model" ] || [ "$DATA/train.svm.gz" -nt "$OUT/libsvm.model" ]; then
        gzip -dc "$DATA/train.svm.gz" > "$OUT/train.svm"
        svm-train -q -t 0 -c 0.5 "$OUT/train.svm" "$OUT/libsvm.model.tmp"
        mv "$OUT/libsvm.model.tmp" "$OUT/libsvm.model"
        rm -f "$OUT/train.svm"
    else
        echo "(its model from the previous run on the same training file: $OUT/libsvm.model)"
    fi
    if [ ! -s "$OUT/test.svm" ] || [ "$DATA/test.svm.gz" -nt "$OUT/test.svm" ]; then
        # renamed when whole: an interrupted run must not leave a part of it for the next to trust
        gzip -dc "$DATA/test.svm.gz" > "$OUT/test.svm.tmp"
        mv "$OUT/test.svm.tmp" "$OUT/test.svm"
    fi
    svm-predict "$OUT/test.svm" "$OUT/libsvm.model" "$OUT/libsvm.txt" | tee "$OUT/libsvm.log"
fi

echo "== eval"
"$PY" - "$OUT" <<'PYEOF'
import json, os, sys
out = sys.argv[1]
def load(name):
    acc, t = None, None
    for line in open("%s/%s.log" % (out, name)):
        if line.startswith("Accuracy"):
            acc = line.split("=")[1].split("%")[0].strip()
        elif line.startswith("{"):
            t = json.loads(line)
    return acc, t
def wall(name):
    return float(open("%s/%s.wall" % (out, name)).read())
ea, et = load("exact")
ha, ht = load("hashed")
sa, st = load("scores")
e_time = et["score"] + et["vote"] + et["normalise"]
h_time = ht["hash"] + ht["filter"] + ht["refine"] + ht["normalise"]
s_time = st["filter"] + st["refine"] + st["normalise"]
print("%-44s %9s %14s %14s" % ("", "accuracy", "compute (s)", "process (s)"))
print("%-44s %8s%% %14.3f %14.2f" % ("hsvm exact (C by cross-validation)", ea, e_time, wall("exact")))
print("%-44s %8s%% %14.3f %14.2f" % ("hsvm hash filter k=7 + refine", ha, h_time, wall("hashed")))
print("%-44s %8s%% %14.3f %14.2f" % ("hsvm class scores k=%d + refine" % st["filter_k"], sa, s_time, wall("scores")))
if os.path.exists("%s/libsvm.log" % out):
    print("%-44s %8s%% %14s %14s" % ("LIBSVM svm-train -t 0 -c 0.5", load("libsvm")[0], "-", "-"))
else:
    print("%-44s %9s %14s %14s" % ("LIBSVM (svm-train not installed)", "48.18% *", "-", "-"))
    print("  * recorded in BENCHMARKS.md (svm-train -t 0 at its best C, 0.5); hsvm --normalize none -c auto: 47.36%")
print("speed-up over exact, compute (parsing excluded) / whole process: hash filter %.1fx / %.1fx, "
      "class scores %.1fx / %.1fx" % (e_time / h_time, wall("exact") / wall("hashed"), e_time / s_time,
                                           wall("exact") / wall("scores")))
PYEOF
echo "== hsvm eval of the hash filter's predictions (k=7 + refine)"
"$HSVM" eval --truth "$DATA/test.svm.gz" "$OUT/hashed.txt"
