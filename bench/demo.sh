#!/usr/bin/env bash
# make demo: the main job on the bundled omniglot-242 set (242 classes, 29,161
# one-vs-one pairs): train, hash, filter-and-refine predict, eval; exact vs hashed
# accuracy and time side by side.
set -euo pipefail
PY=${1:-.venv/bin/python}
HSVM="$(dirname "$PY")/hsvm"
DATA=data/omniglot-242
OUT=demo-out
mkdir -p "$OUT"

echo "== train-ovo: one LIBLINEAR SVM per class pair (C=0.1)"
"$HSVM" train-ovo "$DATA/train.svm.gz" -c 0.1 --seed 1 -o "$OUT/omniglot.hsvm"
echo "== hash-model: 1024-bit sign random projection codes of every classifier"
"$HSVM" hash-model -m "$OUT/omniglot.hsvm" --bits 1024 --seed 1 -o "$OUT/omniglot.hbm"

echo "== predict --exact (every pair on every sample)"
"$HSVM" predict --exact -m "$OUT/omniglot.hsvm" "$DATA/test.svm.gz" -o "$OUT/exact.txt" --timings 2> "$OUT/exact.log"
cat "$OUT/exact.log"
echo "== predict with hash filter (1024 bits, keep k=7 of 242 classes) + exact refine"
"$HSVM" predict -m "$OUT/omniglot.hsvm" -H "$OUT/omniglot.hbm" --bits 1024 --filter-k 7 \
    "$DATA/test.svm.gz" -o "$OUT/hashed.txt" --timings 2> "$OUT/hashed.log"
cat "$OUT/hashed.log"

echo "== eval"
"$PY" - "$OUT" <<'PYEOF'
import json, sys
out = sys.argv[1]
def load(name):
    acc, t = None, None
    for line in open("%s/%s.log" % (out, name)):
        if line.startswith("Accuracy"):
            acc = line.split("=")[1].split("%")[0].strip()
        elif line.startswith("{"):
            t = json.loads(line)
    return acc, t
ea, et = load("exact")
ha, ht = load("hashed")
e_time = et["score"] + et["vote"] + et["normalise"]
h_time = ht["hash"] + ht["filter"] + ht["refine"] + ht["normalise"]
print("%-28s %9s %12s" % ("", "accuracy", "time (s)"))
print("%-28s %8s%% %12.3f" % ("exact", ea, e_time))
print("%-28s %8s%% %12.3f" % ("hash filter k=7 + refine", ha, h_time))
print("speed-up (parsing excluded): %.1fx" % (e_time / h_time))
PYEOF
"$HSVM" eval --truth "$DATA/test.svm.gz" "$OUT/hashed.txt"
