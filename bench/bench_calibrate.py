"""The accuracy-speed search of `hsvm calibrate` on real data, checked on held-out data.

    .venv/bin/python bench/bench_calibrate.py [--sets omniglot-242,fashion-mnist-20k] [--max-loss 0.5] [--json]

Per set: the test file is split per class into a validation half (every other
sample) and a test half; calibrate runs on the validation half (grid of bits,
k and epsilon, times measured here), then exact prediction and the chosen
setting run on the test half: accuracy, time per sample (parsing excluded),
the held-out negative log-likelihood of the first stage with the fitted
temperature against alpha = 1, and the held-out NLL and expected calibration
error (15 bins) of the probabilities, exact and at the chosen setting, with
the sigmoids `calibrate` fits (shrunk toward the pooled sigmoid, sharpened,
exact ones coupled over the classes that carry mass) against those it fitted
before (Platt's per-pair fit, exact ones coupled over all K classes)."""
import argparse
import json
import time
from dataclasses import replace

import numpy as np

from hsvm_cli.evaluation.calibration_metrics import expected_calibration_error, nll
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.models.ovo import bag_mean
from hsvm_cli.predict.exact import ExactScorer
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.preprocess import prepare
from hsvm_cli.proba import estimators as prob
from hsvm_cli.proba.stages import fit_platt_from_decisions
from hsvm_cli.support.labels import class_index
from hsvm_cli.tune import calibrate, format_grid

from common import load_trained, machine_line, markdown_table, median_time


def split_half(y):
    rank = np.zeros(y.shape[0], dtype=np.int64)
    for c in np.unique(y):
        m = np.flatnonzero(y == c)
        rank[m] = np.arange(m.shape[0])
    return rank % 2 == 0


def _full_coupling_proba(model, cal, X):
    """Exact probabilities as calibrate's sigmoids were used before: every
    pair's sigmoid, coupled over all K classes (Wu, Lin & Weng's method 2)."""
    scorer = ExactScorer(model)
    out = []
    for s, dec in scorer.decision_blocks(prepare(model.normalize, X), rows=32):
        r = prob.platt_proba(bag_mean(dec, model.bags), cal.platt_A[None, :], cal.platt_B[None, :])
        R = np.full((r.shape[0], model.n_classes, model.n_classes), 0.5)
        R[:, model.pair_a, model.pair_b] = r
        R[:, model.pair_b, model.pair_a] = 1.0 - r
        out.append(prob.couple(R))
    return np.concatenate(out)


def probability_quality(model, h, cal, Xv, yv, Xs, ys):
    """Held-out NLL, ECE, accuracy of the most probable class and its mean
    probability: before (Platt's per-pair sigmoids; exact: coupled over all
    classes) and after (calibrate's), exact and at the chosen setting."""
    scorer = ExactScorer(model)
    blocks = ((s, bag_mean(d, model.bags)) for s, d in scorer.decision_blocks(prepare(model.normalize, Xv)))
    A, B = fit_platt_from_decisions(model, blocks, class_index(model.classes, yv))
    # before: Platt's per-pair sigmoids and no two-stage sharpness; "after, γ2 = 1": calibrate's
    # sigmoids without the two-stage sharpness (what it gave before that was fitted)
    before = replace(cal, platt_A=A, platt_B=B, two_stage=None)
    yi = class_index(model.classes, ys)
    st = cal.setting
    rows = []
    variants = [("before", before), ("after", cal)]
    if cal.two_stage:
        variants.insert(1, ("after, γ2 = 1", replace(cal, two_stage=None)))
    for what, c in variants:
        if what == "after, γ2 = 1":
            exact = None
        else:
            exact = _full_coupling_proba(model, c, Xs) if what == "before" else \
                Predictor(model, calibration=c).predict_proba(Xs)
        # What `predict -C CALIB --proba` gives: the setting's voting path (a
        # class-score setting has no calibrated probabilities of its own).
        chosen = exact if st.mode == "exact" and exact is not None else Predictor.from_calibration(
            model, c, h, proba=True).predict_proba(Xs)
        for mode, P in (("exact", exact), ("chosen", chosen)):
            if P is None:
                continue
            rows.append({"sigmoids": what, "probabilities": mode, "nll": nll(P, yi),
                         "ece": expected_calibration_error(P, yi), "accuracy": float((P.argmax(axis=1) == yi).mean()),
                         "mean_top_p": float(P.max(axis=1).mean())})
    return {"rows": rows, "prior_samples": cal.info.get("prior_samples"), "sharpness": cal.info.get("sharpness"),
            "two_stage": cal.two_stage}


def run_set(name, max_loss, repeat):
    loaded = load_trained(name)
    if loaded is None:
        return None
    model, Xt, yt = loaded
    val = split_half(yt)
    Xv, yv, Xs, ys = Xt[val], yt[val], Xt[~val], yt[~val]
    h = hash_model(model, bits=2048, seed=0)
    t0 = time.perf_counter()
    cal = calibrate(model, h, Xv, yv, max_loss=max_loss, repeat=repeat)
    cal_seconds = time.perf_counter() - t0
    n = Xs.shape[0]
    exact = Predictor(model)
    t_exact, exact_labels = median_time(lambda: exact.predict(Xs), repeat)
    st = cal.setting
    if st.mode == "exact":
        t_chosen, labels = t_exact, exact_labels
    else:
        # As `predict -C CALIB` builds it: the setting's first stage, k and rule.
        hp = Predictor.from_calibration(model, cal, h)
        t_chosen, block = median_time(lambda: hp.predict_block(Xs), repeat)
        labels = block.labels
    # The first stage whose probabilities --proba uses (the setting's bits, or
    # for an exact or class-score setting those of its voting path).
    pp = Predictor.from_calibration(model, cal, h, proba=True)
    bits = pp.filter.bits if pp.filter is not None and pp.first_stage == "votes" else (st.bits or min(cal.alphas))
    hf = HashFilter(h, bits=bits)
    v, m = hf.votes(hf.hash_samples(prepare("l2", Xs)))
    s = prob.first_stage_scores(v, m)
    yi = class_index(model.classes, ys)
    first_nll = {"bits": bits, "fitted_alpha": cal.alpha(bits), "nll_fitted": nll(prob.softmax(s, cal.alpha(bits)), yi),
           "nll_alpha_1": nll(prob.softmax(s, 1.0), yi)}
    probabilities = probability_quality(model, h, cal, Xv, yv, Xs, ys)
    return {"set": name, "K": model.n_classes, "validation": int(val.sum()), "test": int(n),
            "probabilities": probabilities, "calibrate_seconds": cal_seconds,
            "grid_table": format_grid(cal), "setting": st.as_dict(), "setting_text": st.describe(), "why": cal.info["why"],
            "exact_test_accuracy": float((exact_labels == ys).mean()),
            "chosen_test_accuracy": float((labels == ys).mean()),
            "exact_us_per_sample": 1e6 * t_exact / n, "chosen_us_per_sample": 1e6 * t_chosen / n,
            "first_stage_nll": first_nll,
            "proba_path": "exact" if pp.filter is None else "hash filter at %d bits, k=%d%s" % (
                pp.filter.bits, pp.k, "" if pp.epsilon is None else ", p>%g" % pp.epsilon)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="omniglot-242,fashion-mnist-20k")
    ap.add_argument("--max-loss", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    results = [r for r in (run_set(s, a.max_loss, a.repeat) for s in a.sets.split(",")) if r]
    if a.json:
        print(json.dumps({"machine": machine_line(), "results": results}, indent=1))
        return
    print(machine_line())
    for r in results:
        print("\n%s (K=%d): calibrate on %d validation samples, --max-loss %g\n"
              % (r["set"], r["K"], r["validation"], a.max_loss))
        print(r["grid_table"])
        print("held-out test (%d samples): exact %.2f%% at %.1f us/sample; chosen (%s) %.2f%% at %.1f us/sample "
              "(%.1fx)"
              % (r["test"], 100 * r["exact_test_accuracy"], r["exact_us_per_sample"], r["setting_text"],
                 100 * r["chosen_test_accuracy"], r["chosen_us_per_sample"],
                 r["exact_us_per_sample"] / r["chosen_us_per_sample"]))
        f = r["first_stage_nll"]
        print("first-stage NLL on the test half at %d bits: fitted alpha %.3g -> %.4f; alpha = 1 -> %.4f"
              % (f["bits"], f["fitted_alpha"], f["nll_fitted"], f["nll_alpha_1"]))
        q = r["probabilities"]
        print("\nprobabilities on the test half (calibrate: %.1f s; prior samples n0 = %g, sharpness %.3g, two-stage "
              "sharpness %s; chosen = what predict -C --proba uses: %s):\n"
              % (r["calibrate_seconds"], q["prior_samples"], q["sharpness"],
                 "%.3g" % q["two_stage"]["sharpness"] if q.get("two_stage") else "none (exact path)", r["proba_path"]))
        print(markdown_table(["sigmoids", "probabilities", "NLL", "ECE", "accuracy of argmax", "mean top p"],
                             [[x["sigmoids"], x["probabilities"], "%.4f" % x["nll"], "%.4f" % x["ece"],
                               "%.2f%%" % (100 * x["accuracy"]), "%.3f" % x["mean_top_p"]] for x in q["rows"]]))


if __name__ == "__main__":
    main()
