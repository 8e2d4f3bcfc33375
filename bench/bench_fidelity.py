"""How well hash classifiers reproduce the exact ones, and how small they are.

    .venv/bin/python bench/bench_fidelity.py [--sets omniglot-242,reuters-r52] [--json]

Per data set: the fraction of (test sample, classifier) decisions where the
hash classifier agrees with the exact one at 256 / 1024 / 4096 bits (on a
random subset of classifiers), the agreement of the pure hash multi-class
prediction (filter-k 1) with exact prediction, and the .hbm size against the
exact model file's."""
import argparse
import json
import os
import tempfile

import numpy as np

from hsvm_cli.hashing.angles import thresholds
from hsvm_cli.hashing.hamming import hamming_distances
from hsvm_cli.models.hashed import hash_model, save_hash_model
from hsvm_cli.models.ovo import save_model
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import rank_classes
from hsvm_cli.preprocess import prepare

from common import load_trained, machine_line, markdown_table

BITS = (256, 1024, 4096)


def run_set(name, n_classifiers=2000):
    loaded = load_trained(name)
    if loaded is None:
        return None
    model, Xt, yt = loaded
    h = hash_model(model, bits=max(BITS), seed=0)
    Xn = prepare("l2", Xt)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(model.n_classifiers, min(n_classifiers, model.n_classifiers), replace=False))
    exact_dec = (np.asarray(Xn @ model.W[rows].T) + model.b[rows]) > 0
    xcodes = HashFilter(h, bits=max(BITS)).hash_samples(Xn)
    exact_labels = Predictor(model).predict(Xt)
    out = {"set": name, "K": model.n_classes, "classifiers_sampled": int(rows.shape[0]), "bits": {}}
    for bits in BITS:
        dist = hamming_distances(xcodes, np.ascontiguousarray(h.codes[rows]), bits=bits)
        agree = float(((dist < thresholds(h.theta[rows], bits)) == exact_dec).mean())
        hf = HashFilter(h, bits=bits)
        v, m = hf.votes(xcodes)
        pure = model.classes[rank_classes(v, m)[:, 0]]
        out["bits"][bits] = {"classifier_agreement": agree,
                             "pure_hash_agreement": float((pure == exact_labels).mean()),
                             "pure_hash_accuracy": float((pure == yt).mean())}
    with tempfile.TemporaryDirectory() as tmp:
        save_model(model, os.path.join(tmp, "m.hsvm"))
        out["model_bytes"] = os.path.getsize(os.path.join(tmp, "m.hsvm"))
        for bits in (256, 1024):
            hb = hash_model(model, bits=bits, seed=0)
            save_hash_model(hb, os.path.join(tmp, "m.hbm"))
            out["hbm_bytes_%d" % bits] = os.path.getsize(os.path.join(tmp, "m.hbm"))
    out["exact_accuracy"] = float((exact_labels == yt).mean())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="omniglot-242,reuters-r52")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    results = [r for r in (run_set(s) for s in a.sets.split(",")) if r]
    if a.json:
        print(json.dumps({"machine": machine_line(), "results": results}, indent=1))
        return
    print(machine_line())
    rows = []
    for r in results:
        for bits in BITS:
            b = r["bits"][bits]
            rows.append([r["set"], bits, "%.3f" % b["classifier_agreement"], "%.3f" % b["pure_hash_agreement"],
                         "%.2f" % (100 * b["pure_hash_accuracy"]), "%.2f" % (100 * r["exact_accuracy"])])
    print(markdown_table(["set", "bits", "single-classifier agreement", "pure hash = exact label",
                          "pure hash accuracy %", "exact accuracy %"], rows))
    print()
    print(markdown_table(["set", "model bytes", ".hbm bytes @256", "ratio", ".hbm bytes @1024", "ratio"],
                         [[r["set"], r["model_bytes"], r["hbm_bytes_256"], "%.0fx" % (r["model_bytes"] / r["hbm_bytes_256"]),
                           r["hbm_bytes_1024"], "%.0fx" % (r["model_bytes"] / r["hbm_bytes_1024"])] for r in results]))


if __name__ == "__main__":
    main()
