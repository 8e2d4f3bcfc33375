"""Importing LIBSVM (linear kernel) and LIBLINEAR models: predictions identical to
svm-predict / liblinear-predict.

References, independent of the import: the tools themselves, run on four data
sets where they are installed (bundled digits; the shared binalpha-36,
att-faces-40 and a reuters-r52 subset when present); the tools' outputs on the
checked-in fixtures (tests/fixtures/tools, made by its make_fixtures.py), so the
comparison also runs without the tools; and the literal float64
re-implementations of tests/oracles/tools_ref.py, used to find exact ties and
the samples whose decisions are within float32 rounding of a flip."""
import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.io.svmlight import load_svmlight
from hsvm_cli.io.tool_models import read_liblinear_model, read_libsvm_model
from hsvm_cli.models.imported import import_model, imported_calibration, label_tie_order, libsvm_to_ovo
from hsvm_cli.models.ovo import OvoModel, load_model, save_model
from hsvm_cli.models.ovr import OvrModel, load_ovr_model, save_ovr_model
from hsvm_cli.predict.exact import ExactScorer
from hsvm_cli.predict.ovr import OvrPredictor
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import best_class
from hsvm_cli.preprocess import prepare

from conftest import TOOL_DATASETS, TOOL_FIXTURES, run, tool_labels, tool_run, write_text
from oracles.tools_ref import liblinear_reference, libsvm_reference, rounding_bound


def compare_libsvm(model_path, test_path, tool_pred):
    """Import, predict exactly and compare with the tool's labels; returns counts."""
    m = import_model(str(model_path)).model
    X, y = load_svmlight(str(test_path), n_features=m.n_features, extra_features="ignore")
    ref_labels, ref_dec, ref_votes, _ = libsvm_reference(model_path, X)
    # The reference is LIBSVM's own rule: it agrees with the tool everywhere.
    assert np.array_equal(ref_labels, tool_pred)
    block = Predictor(m).predict_block(X)
    dec32 = ExactScorer(m).decision(prepare(m.normalize, X))
    flips = (dec32 > 0) != (ref_dec > 0)
    # A sign difference can only be float32 rounding, never a layout error
    # (the import keeps LIBSVM's pair order, so columns line up).
    assert np.all(np.abs(ref_dec[flips]) <= rounding_bound(m.W, m.b, X)[flips])
    flipped = flips.any(axis=1)
    differ = block.labels != tool_pred
    # With LIBSVM's tie order kept in the model, labels are the tool's wherever
    # no decision sits within float32 rounding of 0.
    assert not np.any(differ & ~flipped)
    vote_tie = (ref_votes == ref_votes.max(axis=1, keepdims=True)).sum(axis=1) > 1
    own_rule = m.classes[best_class(block.votes, block.confidence)]
    assert not np.any((own_rule != tool_pred) & ~vote_tie & ~flipped)
    return {"samples": len(y), "vote_ties": int(vote_tie.sum()),
            "ties_hsvm_rule_differs": int(((own_rule != tool_pred) & vote_tie).sum()),
            "samples_flipped": int(flipped.sum()), "identical": int((~differ).sum())}


def compare_liblinear(model_path, test_path, tool_pred):
    m = import_model(str(model_path)).model
    X, y = load_svmlight(str(test_path), n_features=m.n_features, extra_features="ignore")
    ref_labels, ref_scores, order = liblinear_reference(model_path, X)
    assert np.array_equal(ref_labels, tool_pred)
    if isinstance(m, OvrModel):
        labels = OvrPredictor(m).predict(X)
        srt = np.sort(ref_scores, axis=1)
        gap = srt[:, -1] - srt[:, -2]
        tie = gap == 0
        cols = np.searchsorted(m.classes, np.array(order))      # file column -> class index
        near = gap <= 2 * rounding_bound(m.W, m.b, X)[:, cols].max(axis=1)
    else:
        labels = Predictor(m).predict(X)
        tie = ref_scores[:, 0] == 0
        near = np.abs(ref_scores[:, 0]) <= rounding_bound(m.W, m.b, X)[:, 0]
    differ = labels != tool_pred
    assert not np.any(differ & ~tie & ~near), "labels differ outside ties"
    # The one-vs-rest model keeps LIBLINEAR's tie rule, a two-class model its zero rule.
    assert not np.any(differ & tie)
    return {"samples": len(y), "exact_ties": int(tie.sum()), "near_ties": int(near.sum()),
            "identical": int((~differ).sum())}


# --------------------------------------------------------------------------- against the tools

@pytest.mark.parametrize("name", list(TOOL_DATASETS))
def test_libsvm_linear_model_predicts_as_svm_predict(tools, dataset_files, tmp_path, name):
    train, test = dataset_files(name)
    model, pred = tmp_path / "m.model", tmp_path / "m.pred"
    tool_run("svm-train", "-q", "-t", "0", "-c", "1", train, model)
    tool_run("svm-predict", test, model, pred)
    counts = compare_libsvm(model, test, tool_labels(pred))
    print(name, "libsvm", counts)


@pytest.mark.parametrize("name", list(TOOL_DATASETS))
@pytest.mark.parametrize("opts", [("-s", "1", "-B", "1"), ("-s", "4", "-B", "1"), ("-s", "2"), ("-s", "0", "-B", "1")],
                         ids=["ovr-l2loss-bias", "crammer-singer-bias", "ovr-primal-nobias", "ovr-logreg-bias"])
def test_liblinear_model_predicts_as_liblinear_predict(tools, dataset_files, tmp_path, name, opts):
    train, test = dataset_files(name)
    model, pred = tmp_path / "m.model", tmp_path / "m.pred"
    tool_run("liblinear-train", "-q", *opts, train, model)
    tool_run("liblinear-predict", test, model, pred)
    counts = compare_liblinear(model, test, tool_labels(pred))
    print(name, opts, counts)
    assert counts["identical"] >= counts["samples"] - counts["near_ties"]
    assert isinstance(import_model(str(model)).model, OvrModel)


def _two_class(src, dst, keep):
    lines = [line for line in Path(src).read_text().splitlines(True) if line.split()[0] in keep]
    Path(dst).write_text("".join(lines))
    return str(dst)


@pytest.mark.parametrize("train_cmd, predict_cmd", [
    (("svm-train", "-q", "-t", "0", "-c", "1"), "svm-predict"),
    (("svm-train", "-q", "-s", "1", "-t", "0", "-n", "0.2"), "svm-predict"),
    (("liblinear-train", "-q", "-s", "1", "-B", "1"), "liblinear-predict"),
    (("liblinear-train", "-q", "-s", "3"), "liblinear-predict"),
    (("liblinear-train", "-q", "-s", "4", "-B", "2"), "liblinear-predict"),
], ids=["libsvm-csvc", "libsvm-nusvc", "liblinear-bias", "liblinear-nobias", "liblinear-cs"])
def test_two_class_models_predict_as_the_tools(tools, dataset_files, tmp_path, train_cmd, predict_cmd):
    train, test = dataset_files("digits")
    # 9 before 3 in the file: the tools' label order is not sorted.
    tr, te = _two_class(train, tmp_path / "tr.svm", {"3", "9"}), _two_class(test, tmp_path / "te.svm", {"3", "9"})
    model, pred = tmp_path / "m.model", tmp_path / "m.pred"
    tool_run(*train_cmd, tr, model)
    tool_run(predict_cmd, te, model, pred)
    if predict_cmd == "svm-predict":
        counts = compare_libsvm(model, te, tool_labels(pred))
        assert counts["identical"] == counts["samples"]          # one pair: no vote ties
    else:
        compare_liblinear(model, te, tool_labels(pred))
    m = import_model(str(model)).model
    # Crammer-Singer stores nr_w = 2 columns, but liblinear-predict decides two
    # classes by the first alone: every two-class model is one pair.
    assert isinstance(m, OvoModel) and m.n_pairs == 1


def test_libsvm_probabilities_become_an_exact_calibration(tools, dataset_files, tmp_path):
    # svm-predict -b 1 couples probA/probB sigmoids by Wu, Lin & Weng's method 2:
    # with the imported calibration, exact hsvm probabilities are LIBSVM's.
    train, test = dataset_files("digits")
    model, pred = tmp_path / "m.model", tmp_path / "m.pred"
    tool_run("svm-train", "-q", "-t", "0", "-c", "0.1", "-b", "1", train, model)
    tool_run("svm-predict", "-b", "1", test, model, pred)
    lines = Path(pred).read_text().splitlines()
    order = [int(v) for v in lines[0].split()[1:]]
    ref = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:]])
    imp = import_model(str(model))
    cal = imported_calibration(imp)
    m = imp.model
    X, _ = load_svmlight(test, n_features=m.n_features, extra_features="ignore")
    P = Predictor(m, calibration=cal).predict_proba(X)
    cols = np.searchsorted(m.classes, order)
    # svm-predict prints 6 significant digits; LIBSVM stops its iterative
    # coupling at a tolerance of 0.005/K, hsvm solves the same system exactly.
    assert np.abs(P[:, cols] - ref).max() < 5e-3


def test_class_order_model_writes_svm_predicts_probability_columns(tools, dataset_files, tmp_path):
    # labels first seen in the order 7, 2, ...: LIBSVM's label line and
    # svm-predict -b 1's columns follow it; --class-order model does too
    train, test = dataset_files("digits")
    rows = Path(train).read_text().splitlines(True)
    first = [i for i, line in enumerate(rows) if line.split()[0] == "7"][:1] + \
        [i for i, line in enumerate(rows) if line.split()[0] == "2"][:1]
    shuffled = tmp_path / "train.svm"
    shuffled.write_text("".join([rows[i] for i in first] + [r for i, r in enumerate(rows) if i not in first]))
    model, pred = tmp_path / "m.model", tmp_path / "m.pred"
    tool_run("svm-train", "-q", "-t", "0", "-c", "0.1", "-b", "1", str(shuffled), model)
    tool_run("svm-predict", "-b", "1", test, model, pred)
    run(["import-model", model, "-o", tmp_path / "m.hsvm", "--calibration", tmp_path / "m.cal"])
    ours = run(["predict", "--exact", "--proba", "-C", tmp_path / "m.cal", "-m", tmp_path / "m.hsvm", test,
                "--class-order", "model", "-q"]).stdout.splitlines()
    theirs = Path(pred).read_text().splitlines()
    assert ours[0] == theirs[0] and ours[0].split()[1:3] == ["7", "2"]
    assert [line.split()[0] for line in ours] == [line.split()[0] for line in theirs]
    diff = np.array([[float(v) for v in a.split()[1:]] for a in ours[1:]]) - \
        np.array([[float(v) for v in b.split()[1:]] for b in theirs[1:]])
    assert np.abs(diff).max() < 5e-3


@pytest.mark.parametrize("name", ["libsvm_c3", "liblinear_ovr3"])
def test_class_order_model_permutes_the_score_columns_of_a_fixture(name, tmp_path):
    run(["import-model", TOOL_FIXTURES / (name + ".model"), "-o", tmp_path / "m.hsvm"])
    base = ["predict", "--exact", "--scores", "-q", "-m", tmp_path / "m.hsvm", TOOL_FIXTURES / "digits3.test.svm"]
    ascending = [line.split() for line in run(base).stdout.splitlines()]
    model = [line.split() for line in run(base + ["--class-order", "model"]).stdout.splitlines()]
    assert ascending[0] == ["labels", "2", "5", "7"] and model[0] == ["labels", "7", "2", "5"]
    assert [[r[0], r[3], r[1], r[2]] for r in ascending[1:]] == model[1:]


def test_a_recorded_label_order_that_is_no_order_of_the_classes_is_a_model_format_error():
    from hsvm_cli.errors import ModelFormatError
    from hsvm_cli.models.imported import column_order
    m = import_model(str(TOOL_FIXTURES / "libsvm_c3.model")).model
    assert column_order(m, "model").tolist() == [2, 0, 1] and column_order(m, "ascending") is None
    for bad in ([7, 2, 2], [7, 2], ["a", "b", "c"], [7.5, 2, 5], [7, 2, 9]):
        m.provenance["label_order"] = bad
        with pytest.raises(ModelFormatError, match="label_order is not an order of the model's classes"):
            column_order(m, "model")


def test_class_order_model_is_refused_for_an_hsvm_model_and_for_labels_alone(digits_model_file):
    base = ["predict", "-m", digits_model_file, TOOL_FIXTURES / "digits3.test.svm", "--class-order", "model"]
    r = run(base + ["--scores"], exit_code=2)
    assert "--class-order model is the label order of a model imported from LIBSVM or LIBLINEAR" in r.stderr
    assert "orders the columns of --scores or --proba" in run(base, exit_code=2).stderr


# --------------------------------------------------------------------------- checked-in fixtures

FIXTURE_MODELS = sorted(p.stem for p in TOOL_FIXTURES.glob("*.model"))


def test_fixtures_are_present():
    assert {"libsvm_c3", "libsvm_nu3", "libsvm_c2", "liblinear_ovr3", "liblinear_cs3", "liblinear_lr3",
            "liblinear_bin2", "liblinear_cs2"} <= set(FIXTURE_MODELS)


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_fixture_models_predict_as_the_tools_did(name):
    model = TOOL_FIXTURES / (name + ".model")
    test = TOOL_FIXTURES / "digits3.test.svm"
    expected = tool_labels(TOOL_FIXTURES / (name + ".pred"))
    compare = compare_libsvm if name.startswith("libsvm") else compare_liblinear
    counts = compare(model, test, expected)
    assert counts["identical"] == counts["samples"]


def test_fixture_keeps_platt_parameters_provenance_and_tie_order():
    path = TOOL_FIXTURES / "libsvm_c3.model"
    imp = import_model(str(path))
    head = dict(line.split(None, 1) for line in path.read_text().splitlines()[:9] if " " in line)
    assert np.array_equal(imp.platt_A, np.array(head["probA"].split(), dtype=float))
    assert np.array_equal(imp.platt_B, np.array(head["probB"].split(), dtype=float))
    src = imp.model.provenance
    assert src["tool"] == "libsvm" and src["svm_type"] == "c_svc" and src["kernel_type"] == "linear"
    assert src["label_order"] == [7, 2, 5]
    assert src["source_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert src["imported_from"] == str(path)
    # LIBSVM's label order 7 2 5 -> sorted 2 5 7: pair (7, 2) is (index 2, index 0), and so on.
    assert imp.model.classes.tolist() == [2, 5, 7]
    assert imp.model.pair_a.tolist() == [2, 2, 0] and imp.model.pair_b.tolist() == [0, 1, 1]
    assert imp.model.tie_order.tolist() == [1, 2, 0]
    lin = import_model(str(TOOL_FIXTURES / "liblinear_ovr3.model"))
    assert lin.model.provenance["tool"] == "liblinear"
    assert lin.model.provenance["solver_type"] == "L2R_L2LOSS_SVC_DUAL" and lin.model.provenance["bias"] == 1.0


def test_compressed_model_reads_the_same_and_hashes_the_stored_bytes(tmp_path):
    src = TOOL_FIXTURES / "libsvm_c3.model"
    gz = tmp_path / "m.model.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    a, b = import_model(str(src)).model, import_model(str(gz)).model
    assert np.array_equal(a.W, b.W) and np.array_equal(a.b, b.b)
    assert b.provenance["source_sha256"] == hashlib.sha256(gz.read_bytes()).hexdigest()


def test_imported_models_survive_save_and_load(tmp_path):
    m = import_model(str(TOOL_FIXTURES / "libsvm_c3.model")).model
    save_model(m, tmp_path / "m.hsvm")
    back = load_model(tmp_path / "m.hsvm")
    assert back.normalize == "none" and np.array_equal(back.W, m.W)
    assert np.array_equal(back.pair_a, m.pair_a) and back.provenance["label_order"] == [7, 2, 5]
    assert np.array_equal(back.tie_order, m.tie_order) and back.content_sha256() == m.content_sha256()
    o = import_model(str(TOOL_FIXTURES / "liblinear_cs3.model")).model
    save_ovr_model(o, tmp_path / "o.hsvm")
    back = load_ovr_model(tmp_path / "o.hsvm")
    assert np.array_equal(back.W, o.W) and np.array_equal(back.tie_order, o.tie_order)
    assert back.content_sha256() == o.content_sha256()


def test_tie_order_is_part_of_the_model_identity():
    m = import_model(str(TOOL_FIXTURES / "libsvm_c3.model")).model
    from dataclasses import replace
    other = replace(m, tie_order=np.array([0, 1, 2], dtype=np.int32), content_digest=None)
    none = replace(m, tie_order=None, content_digest=None)
    assert len({m.content_sha256(), other.content_sha256(), none.content_sha256()}) == 3


# --------------------------------------------------------------------------- layout and rules, synthetic

def libsvm_text(labels, nr_sv, rho, svs, *, kernel="linear", extra=""):
    K = len(labels)
    out = ["svm_type c_svc", "kernel_type %s" % kernel, "nr_class %d" % K, "total_sv %d" % sum(nr_sv),
           "rho " + " ".join(repr(float(r)) for r in rho), "label " + " ".join(map(str, labels)),
           "nr_sv " + " ".join(map(str, nr_sv))]
    out += [extra] if extra else []
    out.append("SV")
    for coef, feats in svs:
        out.append(" ".join(repr(float(c)) for c in coef) + " "
                   + " ".join("%d:%r" % (i, float(v)) for i, v in feats) + " ")
    return "\n".join(out) + "\n"


def test_coefficient_layout_matches_svm_predict_values_on_random_models(tmp_path):
    rng = np.random.default_rng(5)
    for trial in range(6):
        K = int(rng.integers(2, 6))
        labels = [int(v) for v in rng.permutation(np.arange(-3, 20))[:K]]
        nr_sv = [int(v) for v in rng.integers(0 if trial % 2 else 1, 5, size=K)]
        svs = []
        for c in range(K):
            for _ in range(nr_sv[c]):
                idx = np.sort(rng.choice(np.arange(1, 13), size=int(rng.integers(1, 8)), replace=False))
                svs.append((rng.standard_normal(K - 1), list(zip(idx, rng.standard_normal(idx.size)))))
        rho = rng.standard_normal(K * (K - 1) // 2)
        path = write_text(tmp_path / ("r%d.model" % trial), libsvm_text(labels, nr_sv, rho, svs))
        X = sp.csr_matrix(rng.standard_normal((40, 12)) * (rng.random((40, 12)) < 0.6))
        ref_labels, ref_dec, _, _ = libsvm_reference(path, X)
        lm = read_libsvm_model(path)
        model, _, _ = libsvm_to_ovo(lm, n_features=12)
        # Pair p of the import is LIBSVM's pair p: same decision values (float64 W).
        W = np.zeros((lm.W.shape[0], 12))
        W[:, :lm.W.shape[1]] = lm.W
        assert np.allclose(np.asarray(X @ W.T) - lm.rho, ref_dec, atol=1e-12)
        assert np.array_equal(Predictor(model).predict(X), ref_labels)


def test_a_zero_decision_goes_to_libsvms_second_class(tmp_path):
    # w = 0 and rho = 0 for every pair: each decision is exactly 0, so LIBSVM
    # gives every pair (i, j) to label j: the last label collects K-1 votes.
    labels = [4, 9, 1]
    svs = [([0.0, 0.0], [(1, 1.0)])] * 3
    path = write_text(tmp_path / "z.model", libsvm_text(labels, [1, 1, 1], [0.0, 0.0, 0.0], svs))
    m = import_model(path).model
    X = sp.csr_matrix(np.ones((2, 1)))
    assert Predictor(m).predict(X).tolist() == [1, 1]
    assert libsvm_reference(path, X)[0].tolist() == [1, 1]


def test_a_pair_whose_rho_is_infinite_always_votes_one_way_as_in_svm_predict(tmp_path):
    # svm-train -w C 0 leaves a class without support vectors and writes
    # rho = +-inf for its pairs: f = w.x - rho is then -+inf for every x.
    labels = [4, 9, 1]
    svs = [([0.5, 0.5], [(1, 1.0)]), ([-0.5, 0.5], [(1, 2.0)]), ([-0.5, -0.5], [(1, 3.0)])]
    path = write_text(tmp_path / "inf.model", libsvm_text(labels, [1, 1, 1], [float("inf"), float("-inf"), 0.2], svs))
    m = import_model(path).model
    X = sp.csr_matrix(np.array([[1.0], [-50.0], [0.0]]))
    assert np.array_equal(Predictor(m).predict(X), libsvm_reference(path, X)[0])
    # pair (4, 9) always votes 9 and pair (4, 1) always 4 (vote columns in class order 1, 4, 9)
    votes = Predictor(m).predict_block(X).votes
    assert votes[:, 1].tolist() == [1, 1, 1] and np.all(votes[:, 2] >= 1)


def test_equal_votes_go_to_the_first_label_in_libsvms_order(tmp_path):
    # Three classes, each beating one other: every sample has one vote each.
    # LIBSVM predicts its first label (8); hsvm's own rule would go by the
    # decision values.
    labels = [8, 3, 5]
    # pair (8, 3): +1 -> 8; pair (8, 5): -1 -> 5; pair (3, 5): +1 -> 3.
    svs = [([0.0, 0.0], [(1, 1.0)])] * 3
    text = libsvm_text(labels, [1, 1, 1], [-1.0, 1.0, -2.0], svs)
    path = write_text(tmp_path / "c.model", text)
    m = import_model(path).model
    X = sp.csr_matrix(np.ones((1, 1)))
    assert libsvm_reference(path, X)[0].tolist() == [8]
    block = Predictor(m).predict_block(X)
    assert block.votes.tolist() == [[1, 1, 1]] and block.labels.tolist() == [8]
    assert m.classes[best_class(block.votes, block.confidence)].tolist() == [3]


def test_n_features_widens_and_refuses_to_cut_used_features():
    from hsvm_cli.errors import OptionError
    lm = read_libsvm_model(str(TOOL_FIXTURES / "libsvm_c3.model"))
    d = lm.W.shape[1]
    model, _, _ = libsvm_to_ovo(lm, n_features=d + 10)
    assert model.n_features == d + 10 and not model.W[:, d:].any()
    with pytest.raises(OptionError, match="beyond --n-features"):
        libsvm_to_ovo(lm, n_features=d - 1)


def test_liblinear_bias_becomes_the_intercept_and_columns_follow_sorted_classes():
    path = TOOL_FIXTURES / "liblinear_ovr3.model"
    lm = read_liblinear_model(str(path))
    m = import_model(str(path)).model
    assert lm.bias == 1.0 and lm.w.shape == (lm.nr_feature + 1, 3)
    for c, label in enumerate(m.classes):
        col = list(lm.labels).index(label)
        assert np.array_equal(m.W[c], lm.w[:-1, col].astype(np.float32))
        assert m.b[c] == np.float32(lm.w[-1, col])
        assert m.tie_order[c] == col
    assert np.array_equal(m.tie_order, label_tie_order(lm.labels))


def test_ovr_ties_go_to_the_first_label_of_liblinear(tmp_path):
    # Two identical columns: every sample ties between labels 8 and 3; LIBLINEAR
    # picks 8 (first in its order), hsvm's sorted classes would say 3.
    text = "solver_type MCSVM_CS\nnr_class 3\nlabel 8 3 5\nnr_feature 2\nbias -1\nw\n1 1 0\n0.5 0.5 -1\n"
    path = write_text(tmp_path / "t.model", text)
    m = import_model(path).model
    X = sp.csr_matrix(np.array([[1.0, 1.0], [2.0, 0.0]]))
    assert OvrPredictor(m).predict(X).tolist() == liblinear_reference(path, X)[0].tolist() == [8, 8]


def test_zero_based_model_maps_index_i_to_column_i(tmp_path):
    from hsvm_cli.errors import InputFormatError
    text = libsvm_text([1, 2], [1, 1], [0.5], [([1.0], [(0, 2.0), (2, 1.0)]), ([-1.0], [(1, 4.0)])])
    path = write_text(tmp_path / "z.model", text)
    with pytest.raises(InputFormatError, match="index 0 in a 1-based model file"):
        read_libsvm_model(path)
    lm = read_libsvm_model(path, zero_based=True)
    # w = 1.0 * sv_0 + (-1.0) * sv_1 over columns 0, 1, 2.
    assert lm.W.tolist() == [[2.0, -4.0, 1.0]]
    assert import_model(path, zero_based=True).model.n_features == 3


def test_libsvm_sigmoids_are_coupled_over_every_class_beyond_the_mass_couplings_cap(monkeypatch):
    # svm-predict -b 1 couples every class: on omniglot-242 (K > 64) the mass
    # coupling of 64 differed from it by up to 0.058.  Here the cap is made
    # 2 of 3 classes: LIBSVM's sigmoids still get method 2 over all three,
    # hsvm's own calibration the capped coupling.
    import dataclasses

    from hsvm_cli.proba import estimators as est
    from hsvm_cli.proba import stages
    from hsvm_cli.proba.mass_coupling import PairTable
    monkeypatch.setattr(stages, "K_MAX", 2)
    imp = import_model(str(TOOL_FIXTURES / "libsvm_c3.model"))
    cal, m = imported_calibration(imp), imp.model
    assert cal.from_libsvm
    X, _ = load_svmlight(str(TOOL_FIXTURES / "digits3.test.svm"), n_features=m.n_features, extra_features="ignore")
    P = Predictor(m, calibration=cal).predict_proba(X)
    r = est.pairwise_proba(Predictor(m).scorer.decision(X), cal.platt_A[None, :], cal.platt_B[None, :])
    table = PairTable(m.pair_a, m.pair_b, m.n_classes)
    rows, cls = np.arange(r.shape[0])[:, None, None], np.arange(3)
    full = est.couple(table.r_of(r, rows, cls[None, :, None], cls[None, None, :]))
    assert np.abs(P - full).max() < 1e-12
    own = dataclasses.replace(cal, info=dict(cal.info, platt="hsvm"))
    assert not own.from_libsvm and np.abs(Predictor(m, calibration=own).predict_proba(X) - full).max() > 1e-6


def test_pairs_of_a_weight_zero_class_give_svm_predicts_clamped_probabilities():
    # rho = +-inf: svm-predict's sigmoid sees a decision of -+inf, A * dec is
    # NaN for A = 0 and its clamp gives the pair's first class 1e-7, whichever
    # way the pair votes; +-inf otherwise (0 or 1, clamped)
    from hsvm_cli.models.imported import _constant_pair_sigmoids
    from hsvm_cli.proba.estimators import MIN_PAIR_PROBA, pairwise_proba
    A, B = np.array([0.0, 0.0, -2.0, 3.0, -1.5]), np.array([0.1, -0.2, 0.3, 0.4, 0.5])
    constant = np.array([True, True, True, True, False])
    sign = np.array([1.0, -1.0, 1.0, 1.0, 1.0])               # of -rho: the way each pair votes
    A2, B2 = _constant_pair_sigmoids(A, B, constant, sign)
    dec = np.array([[1.0, -1.0, 1.0, 1.0, 0.7]])              # the imported constant pairs decide by +-1
    r = pairwise_proba(dec, A2[None, :], B2[None, :])[0]
    assert r[:2].tolist() == [MIN_PAIR_PROBA] * 2             # NaN -> first class 1e-7
    assert r[2] == 1.0 - MIN_PAIR_PROBA and r[3] == MIN_PAIR_PROBA   # -inf -> 1, +inf -> 0, clamped
    assert r[4] == pairwise_proba(dec[:, 4:], A[4:][None, :], B[4:][None, :])[0, 0]


def test_a_weight_zero_class_model_has_svm_predicts_probabilities(tools, dataset_files, tmp_path):
    train, test = dataset_files("digits")
    sub_train, sub_test = tmp_path / "tr.svm", tmp_path / "te.svm"
    for src, dst in ((train, sub_train), (test, sub_test)):
        dst.write_text("".join(ln for ln in Path(src).read_text().splitlines(True) if ln.split()[0] in ("3", "8", "5")))
    model, pred = tmp_path / "m.model", tmp_path / "m.pred"
    tool_run("svm-train", "-q", "-t", "0", "-c", "1", "-b", "1", "-w3", "0", sub_train, model)
    tool_run("svm-predict", "-b", "1", sub_test, model, pred)
    lines = Path(pred).read_text().splitlines()
    order = [int(v) for v in lines[0].split()[1:]]
    ref = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:]])
    imp = import_model(str(model))
    X, _ = load_svmlight(str(sub_test), n_features=imp.model.n_features, extra_features="ignore")
    P = Predictor(imp.model, calibration=imported_calibration(imp)).predict_proba(X)
    cols = np.searchsorted(imp.model.classes, order)
    assert np.abs(P[:, cols] - ref).max() < 5e-3
    top2 = np.sort(ref, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-3      # svm-predict prints 6 digits: near-ties are not told apart
    assert clear.sum() > 50 and np.array_equal(P[clear][:, cols].argmax(axis=1), ref[clear].argmax(axis=1))


def test_a_weight_zero_calibration_imported_before_the_fix_is_refused_until_imported_again():
    import dataclasses

    from hsvm_cli.errors import ModelMismatchError
    imp = import_model(str(TOOL_FIXTURES / "libsvm_c3.model"))
    cal, m = imported_calibration(imp), imp.model
    assert cal.info["infinite_rho"] == "svm-predict -b 1"
    old = dataclasses.replace(cal, info={k: v for k, v in cal.info.items() if k != "infinite_rho"})
    old.check(m)                                    # every class has support vectors: the old file is right
    m.provenance = dict(m.provenance, nr_sv=[0] + list(m.provenance["nr_sv"][1:]))
    cal.check(m)
    with pytest.raises(ModelMismatchError, match="import it again"):
        old.check(m)
