import json
import math
import sys

import numpy as np
import pytest

from hsvm_cli.io.predictions import read_scored_predictions

from conftest import DIGITS_TEST, run, write_text


# Four samples, three classes; truth 1 2 3 1.  By hand: the last sample is the
# only error (p_true 0.3), NLL = -(ln .7 + ln .8 + ln .5 + ln .3) / 4, each
# sample alone in its confidence bin so ECE = (.3 + .2 + .5 + .6) / 4 = 0.4;
# the error is the second least confident sample, so rejecting two of the four
# leaves no error.
def svm(labels):
    return "".join("%d 1:1\n" % y for y in labels)


HAND_TRUTH = svm([1, 2, 3, 1])
HAND_PROBA = """labels 1 2 3
1 0.7 0.2 0.1
2 0.1 0.8 0.1
3 0.25 0.25 0.5
2 0.3 0.6 0.1
"""
HAND_REPORT = """\
samples              4
accuracy             75.0000%  (3/4)
mean class accuracy  83.3333%
macro F1             0.7778
NLL                  0.6192
Brier                0.3588
ECE                  0.4000  (15 bins)

error rate  reject rate  (Chow's rule on the maximum posterior)
      0.5%     50.0000%
      0.4%     50.0000%
      0.3%     50.0000%
      0.2%     50.0000%
      0.1%     50.0000%

k  true class in top k
1             75.0000%
2            100.0000%
3            100.0000%
"""
GRID = [
    {"mode": "exact", "bits": None, "k": None, "epsilon": None, "accuracy": 0.95, "seconds_per_sample": 4e-4},
    {"mode": "hash", "bits": 256, "k": 5, "epsilon": None, "accuracy": 0.90, "seconds_per_sample": 2e-5},
    {"mode": "hash", "bits": 512, "k": 5, "epsilon": None, "accuracy": 0.93, "seconds_per_sample": 3e-5,
     "chosen": True},
    {"mode": "hash", "bits": 256, "k": None, "max_k": 10, "epsilon": 0.05, "accuracy": 0.91,
     "seconds_per_sample": 2.5e-5},
]


def proba_text(classes, labels, P, fmt="%.17g"):
    head = "labels %s\n" % " ".join(map(str, classes))
    return head + "".join("%d %s\n" % (l, " ".join(fmt % v for v in row)) for l, row in zip(labels, P))


@pytest.fixture
def hand(tmp_path):
    return write_text(tmp_path / "t.svm", HAND_TRUTH), write_text(tmp_path / "p.txt", HAND_PROBA)


def random_proba(rng, n, K, sharp=3.0):
    """Dirichlet rows and truths drawn from them: roughly calibrated, with errors."""
    P = rng.dirichlet(np.full(K, 1.0 / sharp), size=n)
    y = np.array([rng.choice(K, p=p) for p in P])
    return P, y


def test_plain_labels_report_is_unchanged(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 1, 2, 2, 3, 3]))
    preds = write_text(tmp_path / "p.txt", "1\n2\n2\n2\n3\n3\n")
    r = run(["eval", "--truth", truth, preds])
    assert r.stdout == ("samples              6\n"
                        "accuracy             83.3333%  (5/6)\n"
                        "mean class accuracy  83.3333%\n"
                        "macro F1             0.8222\n")
    report = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)
    assert report["correct"] == 5 and report["predictions"]["kind"] == "labels"
    assert "recall" not in report and "probability" not in report and "confusion" not in report


def test_predicted_labels_the_truth_never_uses_are_noted_on_stderr(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 1, 2, 2, 3, 3]))
    preds = write_text(tmp_path / "p.txt", "1\n42\n2\n2\n3\n3\n")
    r = run(["eval", truth, preds])
    assert r.stdout.startswith("samples              6\naccuracy             83.3333%  (5/6)\n")
    assert r.stderr == ("hsvm: eval: note: 1 predicted label never in %s (42): counted as errors, and macro F1 "
                        "counts it as a class of F1 0\n" % truth)
    many = write_text(tmp_path / "q.txt", "7\n8\n9\n10\n11\n12\n")
    assert "6 predicted labels never in %s (7, 8, 9, 10, 11, ...): counted as errors, and macro F1 counts them as " \
        "classes of F1 0\n" % truth in run(["eval", truth, many]).stderr
    assert run(["eval", "-q", truth, preds]).stderr == ""
    # labels the truth has but no prediction uses are not noted
    assert run(["eval", truth, write_text(tmp_path / "o.txt", "1\n1\n1\n1\n1\n1\n")]).stderr == ""


def test_truth_may_be_the_first_of_two_arguments(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 1, 2, 2, 3, 3]))
    preds = write_text(tmp_path / "p.txt", "1\n2\n2\n2\n3\n3\n")
    assert run(["eval", truth, preds]).stdout == run(["eval", "--truth", truth, preds]).stdout
    assert run(["eval", truth, "-"], input="1\n2\n2\n2\n3\n3\n").stdout == run(["eval", truth, preds]).stdout
    r = run(["eval", "--truth", truth, truth, preds], exit_code=2)
    assert r.stderr == ("hsvm eval: eval takes TRUTH and PREDICTIONS (as --truth TRUTH PREDICTIONS or TRUTH "
                        "PREDICTIONS), got 2 file arguments beside --truth (see 'hsvm eval --help')\n")
    assert "got 3 file arguments" in run(["eval", truth, preds, preds], exit_code=2).stderr
    # one file: truth or predictions, which cannot be told
    assert run(["eval", preds], exit_code=2).stderr == (
        "hsvm eval: eval takes TRUTH and PREDICTIONS (TRUTH PREDICTIONS, or --truth TRUTH PREDICTIONS), got one file "
        "argument (see 'hsvm eval --help')\n")


def test_a_byte_order_mark_is_skipped_and_cr_only_line_ends_are_named(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 1, 2, 2, 3, 3]))
    preds = write_text(tmp_path / "p.txt", "1\n2\n2\n2\n3\n3\n")
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + (tmp_path / "p.txt").read_bytes())
    assert run(["eval", truth, bom]).stdout == run(["eval", truth, preds]).stdout
    cr = tmp_path / "cr.txt"
    cr.write_bytes(b"1\r2\r2\r2\r3\r3\r")
    assert run(["eval", truth, cr], exit_code=65).stderr == (
        "hsvm: %s:1: a carriage return inside the line: the file's lines end in CR alone (convert them: "
        "tr '\\r' '\\n')\n" % cr)
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"1\r\n2\r\n2\r\n2\r\n3\r\n3\r\n")
    assert run(["eval", truth, crlf]).stdout == run(["eval", truth, preds]).stdout


def test_per_class_prints_each_labels_precision_recall_f1_and_support(tmp_path):
    # scikit-learn's classification_report of the same labels, to four places
    truth = write_text(tmp_path / "t.svm", svm([1, 1, 2, 2, 3, 3]))
    preds = write_text(tmp_path / "p.txt", "1\n2\n2\n2\n3\n3\n")
    r = run(["eval", "--truth", truth, preds, "--per-class"])
    assert r.stdout.split("\n")[4:] == ["",
                                         "label  precision  recall      F1  support",
                                         "    1     1.0000  0.5000  0.6667        2",
                                         "    2     0.6667  1.0000  0.8000        2",
                                         "    3     1.0000  1.0000  1.0000        2",
                                         ""]


def test_predictions_from_stdin_with_scores(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 2]))
    r = run(["eval", "--truth", truth, "-", "--json"], input="labels 1 2 3\n1 2 1 0\n3 0 1 2\n")
    report = json.loads(r.stdout)
    assert report["predictions"] == {"file": "<stdin>", "kind": "scores", "classes": [1, 2, 3]}
    assert report["recall"]["at_k"] == [{"k": 1, "true_class": 0.5}, {"k": 2, "true_class": 1.0},
                                        {"k": 3, "true_class": 1.0}]


def test_hand_made_probabilities_give_nll_ece_and_reject_table(hand):
    truth, preds = hand
    r = run(["eval", "--truth", truth, preds])
    assert r.stdout == HAND_REPORT
    p = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)["probability"]
    assert p["nll"] == pytest.approx(-(math.log(.7) + math.log(.8) + math.log(.5) + math.log(.3)) / 4)
    assert p["ece"] == pytest.approx(0.4) and p["ece_bins"] == 15
    # sum over classes of (p_c - [c = y])^2, by hand: 0.14, 0.06, 0.375, 0.86
    assert p["brier"] == pytest.approx((0.14 + 0.06 + 0.375 + 0.86) / 4)
    assert p["reject_curve"]["reject_rate"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert p["reject_curve"]["error_rate"] == pytest.approx([0.25, 1 / 3, 0.0, 0.0, 0.0])
    assert [row["reject_rate"] for row in p["reject_at_error"]] == [0.5] * 5


def test_reject_curve_is_monotone_and_starts_at_the_plain_accuracy(tmp_path):
    rng = np.random.default_rng(3)
    P, y = random_proba(rng, 600, 6)
    classes = [10, 20, 30, 40, 50, 60]
    labels = np.asarray(classes)[P.argmax(axis=1)]
    truth = write_text(tmp_path / "t.svm", svm(np.asarray(classes)[y]))
    preds = write_text(tmp_path / "p.txt", proba_text(classes, labels, P))
    report = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)
    assert report["predictions"]["kind"] == "probabilities"
    curve = report["probability"]["reject_curve"]
    assert curve["points"] == 601 and len(curve["reject_rate"]) <= 200
    assert report["probability"]["brier"] == pytest.approx(np.mean(np.sum((P - np.eye(6)[y]) ** 2, axis=1)))
    rej, err = np.array(curve["reject_rate"]), np.array(curve["error_rate"])
    assert rej[0] == 0.0 and rej[-1] == 1.0 and np.all(np.diff(rej) > 0)
    assert err[0] == pytest.approx(1 - report["accuracy"])
    # more rejection is needed for a lower error, and 'unreachable' is None
    needed = [row["reject_rate"] for row in report["probability"]["reject_at_error"]]
    reached = [v for v in needed if v is not None]
    assert reached == sorted(reached) and all(0 <= v < 1 for v in reached)
    assert needed[:len(reached)] == reached  # once unreachable, lower targets are too


def test_reject_curve_error_falls_when_confidence_ranks_the_errors_last(tmp_path):
    # errors exactly on the least confident samples: error falls monotonically to 0
    n = 50
    conf = np.linspace(0.55, 0.99, n)
    P = np.column_stack([conf, 1 - conf])
    wrong = np.arange(n) < 10
    truth = write_text(tmp_path / "t.svm", svm(np.where(wrong, 2, 1)))
    preds = write_text(tmp_path / "p.txt", proba_text([1, 2], np.ones(n, dtype=int), P))
    report = json.loads(run(["eval", "--truth", truth, preds, "--proba", "--json"]).stdout)
    err = np.array(report["probability"]["reject_curve"]["error_rate"])
    assert np.all(np.diff(err) <= 1e-12) and err[0] == pytest.approx(1 - report["accuracy"])
    assert [row["reject_rate"] for row in report["probability"]["reject_at_error"]] == [0.2] * 5


def test_unreachable_error_rate_is_reported_as_such(tmp_path):
    # the most confident sample is wrong: no rejection short of everything helps
    truth = write_text(tmp_path / "t.svm", svm([2, 1, 1]))
    preds = write_text(tmp_path / "p.txt", "labels 1 2\n1 0.9 0.1\n1 0.8 0.2\n1 0.7 0.3\n")
    r = run(["eval", "--truth", truth, preds])
    assert "      0.1%  unreachable\n" in r.stdout
    report = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)
    assert all(row["reject_rate"] is None for row in report["probability"]["reject_at_error"])


def test_rounded_probabilities_of_many_classes_are_still_detected(tmp_path):
    # six decimals per value: with 240 classes the row sums drift beyond 1e-6
    rng = np.random.default_rng(0)
    P, y = random_proba(rng, 40, 240, sharp=0.5)
    classes = list(range(1, 241))
    truth = write_text(tmp_path / "t.svm", svm(np.asarray(classes)[y]))
    preds = write_text(tmp_path / "p.txt", proba_text(classes, np.asarray(classes)[P.argmax(1)], P, "%.6f"))
    assert np.abs(read_scored_predictions(preds).scores.sum(axis=1) - 1).max() > 1e-6
    assert json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)["predictions"]["kind"] == "probabilities"


def test_a_probability_file_with_a_damaged_row_says_why_it_is_read_as_scores(tmp_path):
    rng = np.random.default_rng(1)
    P, y = random_proba(rng, 200, 5, sharp=0.5)
    classes = [1, 2, 3, 4, 5]
    truth = write_text(tmp_path / "t.svm", svm(np.asarray(classes)[y]))
    P[49, 0] += 0.09                                    # file line 51: the header is line 1
    preds = write_text(tmp_path / "p.txt", proba_text(classes, np.asarray(classes)[P.argmax(1)], P, "%.9f"))
    report = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)
    assert report["predictions"]["kind"] == "scores" and "probability" not in report
    note = report["predictions"]["not_probabilities"]
    assert note.startswith("1 of 200 rows is not a probability distribution (line 51: probabilities sum to 1.09")
    assert note.endswith("while the other 199 are: read as scores (--proba refuses the file there)")
    assert "probabilities        not evaluated: 1 of 200 rows" in run(["eval", "--truth", truth, preds]).stdout
    # decision values or votes, far from distributions: no note
    P[:60, 0] += 0.5
    preds = write_text(tmp_path / "s.txt", proba_text(classes, np.asarray(classes)[P.argmax(1)], P, "%.9f"))
    assert "not_probabilities" not in json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)["predictions"]


def test_vote_counts_of_two_classes_are_not_taken_for_probabilities(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 2, 2]))
    preds = write_text(tmp_path / "p.txt", "labels 1 2\n1 1 0\n2 0 1\n1 1 0\n")
    report = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)
    assert report["predictions"]["kind"] == "scores" and "probability" not in report
    forced = json.loads(run(["eval", "--truth", truth, preds, "--json", "--proba"]).stdout)
    assert forced["predictions"]["kind"] == "probabilities"
    assert forced["probability"]["nll"] == pytest.approx(-math.log(1e-15) / 3)
    hand_truth = write_text(tmp_path / "h.svm", HAND_TRUTH)
    plain = json.loads(run(["eval", "--truth", hand_truth, write_text(tmp_path / "q.txt", HAND_PROBA),
                            "--json", "--no-proba"]).stdout)
    assert plain["predictions"]["kind"] == "scores" and "probability" not in plain


@pytest.mark.parametrize("text, line, reason", [
    ("labels 1 2\n1 0.5 0.6\n", 2, "sum to 1.1"),
    ("labels 1 2\n1 0.5 0.5\n2 1.2 -0.2\n", 3, "negative probability"),
])
def test_proba_flag_rejects_rows_that_are_not_distributions(tmp_path, text, line, reason):
    truth = write_text(tmp_path / "t.svm", svm([1] * (text.count("\n") - 1)))
    preds = write_text(tmp_path / "p.txt", text)
    r = run(["eval", "--truth", truth, preds, "--proba"], exit_code=65)
    assert r.stderr.startswith("hsvm: %s:%d: " % (preds, line)) and reason in r.stderr
    assert r.stderr.count("\n") == 1


def test_proba_flag_on_a_plain_label_file_exits_65(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 2]))
    preds = write_text(tmp_path / "p.txt", "1\n2\n")
    r = run(["eval", "--truth", truth, preds, "--proba"], exit_code=65)
    assert r.stderr.startswith("hsvm: %s:1: no 'labels ...' header" % preds)


def test_a_label_tied_at_its_rows_maximum_is_its_most_probable_class(tmp_path):
    # an imported logistic model's empty row: every class alike, the label
    # liblinear-predict's (the model's first class, here 2, not the header's)
    truth = write_text(tmp_path / "t.svm", svm([2, 1, 3]))
    preds = write_text(tmp_path / "p.txt", "labels 1 2 3\n2 0.25 0.5 0.25\n2 0.4 0.2 0.4\n"
                                           "3 0.3333 0.3333 0.3334\n")
    prob = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)["probability"]
    assert prob["labels_not_most_probable"] == 1                       # row 2 only: 0.2 below 0.4
    # row 1: its label, right, at 0.5; row 2: the first of the tie, 1, right, at 0.4; row 3: 3, right
    tied = write_text(tmp_path / "q.txt", "labels 1 2 3\n2 0.5 0.5 0\n1 0.4 0.2 0.4\n3 0.3333 0.3333 0.3334\n")
    prob = json.loads(run(["eval", "--truth", truth, tied, "--json"]).stdout)["probability"]
    assert prob["labels_not_most_probable"] == 0
    # every most probable class right: the calibration error is the mean shortfall of confidence
    assert prob["ece"] == pytest.approx((0.5 + 0.6 + 0.6666) / 3, abs=1e-9)
    # and the recall table ranks the label first among the classes it ties with: top 1 is the accuracy
    report = json.loads(run(["eval", "--truth", truth, tied, "--json"]).stdout)
    assert report["accuracy"] == 1.0 and report["recall"]["at_k"][0] == {"k": 1, "true_class": 1.0}
    # vote counts alike: a max-wins label among tied votes is the row's first class
    votes = write_text(tmp_path / "v.txt", "labels 1 2 3\n2 1 1 1\n1 2 0 1\n3 0 1 1\n")
    report = json.loads(run(["eval", "--truth", truth, votes, "--json"]).stdout)
    assert report["accuracy"] == 1.0 and report["recall"]["at_k"][0] == {"k": 1, "true_class": 1.0}
    # a label below its row's maximum (a refined label) is ranked as any class: the counts keep
    # classes 1 and 2 at k = 2, as a filter keeping two classes by them would
    below = write_text(tmp_path / "b.txt", "labels 1 2 3\n3 3 1 1\n")
    one = write_text(tmp_path / "t1.svm", svm([2]))
    report = json.loads(run(["eval", "--truth", one, below, "--json"]).stdout)
    assert report["recall"]["at_k"][1] == {"k": 2, "true_class": 1.0}


def test_true_labels_outside_the_header_are_errors_with_probability_zero(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 9]))
    preds = write_text(tmp_path / "p.txt", "labels 1 2\n1 0.75 0.25\n1 0.5 0.5\n")
    r = run(["eval", "--truth", truth, preds, "--json"])
    report = json.loads(r.stdout)
    assert report["outside_classes"] == 1
    assert report["probability"]["nll"] == pytest.approx((-math.log(0.75) - math.log(1e-15)) / 2)
    assert report["recall"]["at_k"][-1] == {"k": 2, "true_class": 0.5}
    assert "outside classes      1  (true labels not in the header)\n" in run(["eval", "--truth", truth, preds]).stdout


@pytest.mark.parametrize("text, line, reason", [
    ("labels 1 2 3\n1 0 1 2\n2 0 1\n", 3, "3 numbers, expected 4"),
    ("labels 1 2 3\n1 0 1 2\n# a comment line counts\n2 0 1 2 5\n", 4, "5 numbers, expected 4"),
    ("labels 1 2 3\n1 0 x 2\n", 2, "'x' is not a number"),
    ("labels 1 2 3\n1 0 1 2\n2 0 nan 2\n", 3, "score 'nan' is not finite"),
    ("labels 1 2 3\n1.5 0 1 2\n", 2, "label '1.5' is not an integer"),
    ("labels 1 2 2\n1 0 1 2\n", 1, "class 2 appears twice"),
    ("labels 1 b 3\n1 0 1 2\n", 1, "class 'b' is not a number"),
    ("labels\n1\n", 1, "names no classes"),
])
def test_malformed_score_lines_exit_65_with_file_and_line(tmp_path, text, line, reason):
    truth = write_text(tmp_path / "t.svm", svm([1, 2]))
    preds = write_text(tmp_path / "p.txt", text)
    r = run(["eval", "--truth", truth, preds], exit_code=65)
    assert r.stderr.startswith("hsvm: %s:%d: " % (preds, line))
    assert reason in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_a_bad_row_is_found_beyond_the_first_parsing_chunk(tmp_path):
    rows = ["1 1 0"] * 5000 + ["1 1 zz"] + ["1 1 0"] * 10
    truth = write_text(tmp_path / "t.svm", svm([1] * len(rows)))
    preds = write_text(tmp_path / "p.txt", "labels 1 2\n" + "\n".join(rows) + "\n")
    r = run(["eval", "--truth", truth, preds], exit_code=65)
    assert r.stderr.startswith("hsvm: %s:5002: 'zz' is not a number" % preds)


def test_recall_at_K_is_one_and_recall_at_1_is_the_accuracy_when_labels_are_argmax(tmp_path):
    rng = np.random.default_rng(7)
    n, K = 300, 12
    votes = rng.integers(0, 4, size=(n, K))  # small integers: many ties
    classes = np.arange(101, 101 + K)
    labels = classes[votes.argmax(axis=1)]  # argmax takes the first maximum: class order
    y = classes[rng.integers(0, K, size=n)]
    y[:100] = labels[:100]
    truth = write_text(tmp_path / "t.svm", svm(y))
    preds = write_text(tmp_path / "p.txt", "labels %s\n" % " ".join(map(str, classes))
                       + "".join("%d %s\n" % (l, " ".join(map(str, v))) for l, v in zip(labels, votes)))
    report = json.loads(run(["eval", "--truth", truth, preds, "--json"]).stdout)
    at = {row["k"]: row["true_class"] for row in report["recall"]["at_k"]}
    assert sorted(at) == [1, 2, 3, 5, 10, 12]
    assert at[1] == report["accuracy"] and at[K] == 1.0
    assert list(at.values()) == sorted(at.values())
    r = run(["eval", "--truth", truth, preds, "--json", "--recall-k", "4,1,4"])
    assert [row["k"] for row in json.loads(r.stdout)["recall"]["at_k"]] == [1, 4]


def test_reference_agreement_and_exact_label_in_the_top_k(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 2, 3, 1]))
    preds = write_text(tmp_path / "p.txt", HAND_PROBA)
    ref = write_text(tmp_path / "exact.txt", "1\n2\n1\n3\n")  # agrees on 2 of 4
    r = run(["eval", "--truth", truth, preds, "--reference", ref])
    assert "agreement            50.0000%%  (2/4 as in %s)\n" % ref in r.stdout
    assert "reference accuracy   50.0000%\n" in r.stdout
    # the reference's 1 of sample 3 ties with class 2 at 0.25 and wins the tie by class order
    assert r.stdout.endswith("k  true class in top k  reference in top k\n"
                             "1             75.0000%            50.0000%\n"
                             "2            100.0000%            75.0000%\n"
                             "3            100.0000%           100.0000%\n")
    ref_report = json.loads(run(["eval", "--truth", truth, preds, "--reference", ref, "--json"]).stdout)["reference"]
    assert ref_report == {"file": ref, "identical": 2, "agreement": 0.5, "accuracy": 0.5}


def test_reference_with_plain_labels_gives_agreement_only(tmp_path):
    truth = write_text(tmp_path / "t.svm", svm([1, 2, 3]))
    preds = write_text(tmp_path / "p.txt", "1\n2\n2\n")
    ref = write_text(tmp_path / "e.txt", "1\n2\n3\n")
    report = json.loads(run(["eval", "--truth", truth, preds, "--reference", ref, "--json"]).stdout)
    assert report["reference"]["agreement"] == pytest.approx(2 / 3) and report["reference"]["accuracy"] == 1.0
    assert "recall" not in report
    short = write_text(tmp_path / "s.txt", "1\n")
    r = run(["eval", "--truth", truth, preds, "--reference", short], exit_code=65)
    assert r.stderr.startswith("hsvm: %s:1: 1 labels for the 3 predictions" % short)


def test_recall_k_needs_scores_and_at_most_K(tmp_path, hand):
    truth, preds = hand
    run(["eval", "--truth", truth, preds, "--recall-k", "4"], exit_code=2)
    run(["eval", "--truth", truth, preds, "--recall-k", "0"], exit_code=2)
    run(["eval", "--truth", truth, preds, "--recall-k", "a"], exit_code=2)
    plain = write_text(tmp_path / "plain.txt", "1\n2\n3\n1\n")
    r = run(["eval", "--truth", truth, plain, "--recall-k", "1"], exit_code=2)
    assert "needs scores" in r.stderr


def test_scores_from_hsvm_predict_round_trip(tmp_path):
    toy = write_text(tmp_path / "toy.svm", "1 1:1 2:0.1\n1 1:0.9 2:-0.2\n2 1:-1 2:0.1\n2 1:-0.8 2:0.3\n"
                                           "3 2:1\n3 1:0.1 2:0.9\n")
    model = str(tmp_path / "toy.hsvm")
    run(["train-ovo", toy, "-o", model, "-q"])
    scores = run(["predict", "-m", model, toy, "--scores", "-q"]).stdout
    exact = write_text(tmp_path / "exact.txt", run(["predict", "--exact", "-m", model, toy, "-q"]).stdout)
    r = run(["eval", "--truth", toy, "-", "--reference", exact, "--json"], input=scores)
    report = json.loads(r.stdout)
    assert report["accuracy"] == 1.0 and report["reference"]["agreement"] == 1.0
    assert report["recall"]["at_k"] == [{"k": 1, "true_class": 1.0, "reference": 1.0},
                                        {"k": 2, "true_class": 1.0, "reference": 1.0},
                                        {"k": 3, "true_class": 1.0, "reference": 1.0}]


def test_grid_alone_is_tabulated(tmp_path):
    grid = write_text(tmp_path / "grid.json", json.dumps({"grid": GRID, "info": {}}))
    r = run(["eval", "--grid", grid])
    assert r.stdout == ("%s\n"
                        " bits     k  epsilon  accuracy  us/sample\n"
                        "exact     -        -  95.0000%%     400.00\n"
                        "  256     5        -  90.0000%%      20.00\n"
                        "  512     5        -  93.0000%%      30.00  chosen\n"
                        "  256  <=10     0.05  91.0000%%      25.00\n" % grid)
    assert json.loads(run(["eval", "--grid", grid, "--json"]).stdout)["grid"]["rows"][2]["chosen"] is True
    listed = write_text(tmp_path / "list.json", json.dumps(GRID[:2]))
    run(["eval", "--grid", listed])


def test_a_grid_with_dag_or_class_score_rows_names_every_setting_as_calibrate_does(tmp_path):
    rows = [dict(GRID[1], rule="dag"), dict(GRID[0], rule="dag"), dict(GRID[0], mode="scores", k=3)] + GRID[1:3]
    grid = write_text(tmp_path / "grid.json", json.dumps({"grid": rows, "info": {}}))
    table = run(["eval", "--grid", grid]).stdout.splitlines()
    assert [line.strip().split("  ")[0] for line in table[2:]] == ["hash 256 dag", "exact dag", "scores", "hash 256",
                                                                   "hash 512"]


@pytest.mark.parametrize("text, reason", [
    ('{"grid": [{"bits": 256, "k": 5}]}', "row 1 has no 'accuracy'"),
    ('[{"bits": "256", "accuracy": 0.5, "seconds_per_sample": 1e-5}]', "'bits' is \"256\""),
    ('[{"bits": 256, "accuracy": 95.0, "seconds_per_sample": 1e-5}]', "not a fraction"),
    ('{"info": {}}', "expected a JSON list"),
    ('[\n{"bits": 1,\n', ":3: not JSON"),
])
def test_malformed_grid_exits_65(tmp_path, text, reason):
    grid = write_text(tmp_path / "grid.json", text)
    r = run(["eval", "--grid", grid], exit_code=65)
    assert r.stderr.startswith("hsvm: %s" % grid) and reason in r.stderr


def test_an_hsvm_file_given_as_a_grid_is_told_where_grids_come_from(tmp_path, digits_model_file):
    cal = tmp_path / "c.cal"
    run(["calibrate", "-q", DIGITS_TEST, "-m", digits_model_file, "-o", cal, "--repeat", "1", "--timing-budget", "0"])
    r = run(["eval", "--grid", cal], exit_code=65)
    assert r.stderr == "hsvm: %s: not UTF-8 text: an hsvm file, not a grid (calibrate writes its grid with " \
                       "--grid-json)\n" % cal


def test_truth_and_predictions_go_together(tmp_path, hand):
    truth, preds = hand
    run(["eval", preds], exit_code=2)
    run(["eval", "--truth", truth], exit_code=2)
    run(["eval"], exit_code=2)
    run(["eval", "--truth", "-", "-"], exit_code=2)


def test_plot_writes_a_png_of_every_panel(tmp_path, hand):
    pytest.importorskip("matplotlib")
    truth, preds = hand
    grid = write_text(tmp_path / "grid.json", json.dumps(GRID))
    out = tmp_path / "eval.png"
    r = run(["eval", "--truth", truth, preds, "--reference", preds, "--grid", grid, "--plot", str(out)])
    assert r.stdout.startswith(HAND_REPORT.splitlines()[0])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.png", "grid.json", "p.txt", "t.svm"]
    only_grid = tmp_path / "grid.png"
    run(["eval", "--grid", grid, "--plot", str(only_grid)])
    assert only_grid.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_plots_of_every_format_are_the_same_bytes_from_the_same_command(tmp_path, hand, monkeypatch, ext, magic):
    # SVG and PDF had carried the time they were made, SVG random element ids too
    pytest.importorskip("matplotlib")
    truth, preds = hand
    grid = write_text(tmp_path / "grid.json", json.dumps(GRID))
    made = []
    for clock in (1_000_000_000, 1_700_000_000):
        monkeypatch.setattr("time.time", lambda clock=clock: float(clock))
        out = tmp_path / ("%d.%s" % (clock, ext))
        run(["eval", "--truth", truth, preds, "--grid", grid, "--plot", str(out)])
        made.append(out.read_bytes())
    assert made[0][:len(magic)] == magic and made[0] == made[1]


def test_plot_of_plain_labels_has_nothing_to_draw(tmp_path):
    pytest.importorskip("matplotlib")
    truth = write_text(tmp_path / "t.svm", svm([1, 2]))
    preds = write_text(tmp_path / "p.txt", "1\n2\n")
    r = run(["eval", "--truth", truth, preds, "--plot", str(tmp_path / "x.png")], exit_code=2)
    assert "nothing to draw" in r.stderr and not (tmp_path / "x.png").exists()


def test_missing_matplotlib_exits_69_naming_the_extra(tmp_path, hand, monkeypatch):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib...` raise ImportError
    truth, preds = hand
    out = tmp_path / "x.png"
    r = run(["eval", "--truth", truth, preds, "--plot", str(out)], exit_code=69)
    assert r.stderr == "hsvm: --plot needs matplotlib, which is not installed: pip install 'hsvm[plot]'\n"
    assert r.stdout == "" and not out.exists()


def test_eval_refuses_a_prediction_count_mismatch(toy_model, tmp_path):
    train, _ = toy_model
    preds = write_text(tmp_path / "p.txt", "1\n2\n")
    r = run(["eval", "--truth", train, preds], exit_code=65)
    assert "2 predictions for the 6 samples" in r.stderr


def test_labels_beyond_2_53_are_compared_exactly_in_label_and_score_files(tmp_path):
    truth = write_text(tmp_path / "t.svm", "9007199254740993 1:1\n9007199254740992 1:2\n")
    plain = write_text(tmp_path / "p.txt", "9007199254740993\n9007199254740992\n")
    scored = write_text(tmp_path / "s.txt", "labels 9007199254740993 9007199254740992\n"
                                            "9007199254740993 0.6 0.4\n9007199254740992 0.3 0.7\n")
    for pred in (plain, scored):
        assert "accuracy             100.0000%  (2/2)" in run(["eval", "--truth", truth, pred]).stdout
    swapped = write_text(tmp_path / "w.txt", "9007199254740992\n9007199254740993\n")
    assert "(0/2)" in run(["eval", "--truth", truth, swapped]).stdout


@pytest.mark.parametrize("text, line, message", [
    ("1e30\n5\n", 1, "label '1e30' is out of the int64 range"),
    ("1\n9223372036854775808\n", 2, "label '9223372036854775808' is out of the int64 range"),
    ("1\n2.5\n", 2, "label '2.5' is not an integer"),
    ("1\n1_0\n", 2, "label '1_0' is not a number"),
    ("labels 1 2\n1 0.5 0.5\n1e30 0.6 0.4\n", 3, "label '1e30' is out of the int64 range"),
    ("labels 1 2\n1 0.5 0.5\n2 nan 0.4\n", 3, "score 'nan' is not finite"),
])
def test_labels_that_are_not_int64_are_refused_naming_the_line(tmp_path, text, line, message):
    truth = write_text(tmp_path / "t.svm", "1 1:1\n2 1:2\n")
    pred = write_text(tmp_path / "p.txt", text)
    run(["eval", "--truth", truth, pred], exit_code=65, stdout="", stderr="hsvm: %s:%d: %s\n" % (pred, line, message))


def test_whole_decimal_labels_are_taken_as_integers(tmp_path):
    truth = write_text(tmp_path / "t.svm", "3 1:1\n0 1:2\n1000 1:1\n")
    pred = write_text(tmp_path / "p.txt", "3.0\n-0\n1e3\n")
    assert "(3/3)" in run(["eval", "--truth", truth, pred]).stdout


def test_a_short_scores_file_is_blamed_on_its_last_line(tmp_path):
    truth = write_text(tmp_path / "t.svm", "1 1:1\n2 1:2\n1 1:3\n")
    scores = write_text(tmp_path / "s.txt", "labels 1 2\n1 2 1\n2 1 2\n")
    run(["eval", "--truth", truth, scores], exit_code=65, stdout="",
        stderr="hsvm: %s:3: 2 predictions for the 3 samples of %s\n" % (scores, truth))
    header = write_text(tmp_path / "h.txt", "labels 1 2\n")
    run(["eval", "--truth", truth, header], exit_code=65, stdout="",
        stderr="hsvm: %s:1: 0 predictions for the 3 samples of %s\n" % (header, truth))


def test_truth_and_predictions_swapped_is_said(tmp_path):
    truth = write_text(tmp_path / "t.svm", "1 1:1\n2 1:2 3:0.5\n")
    preds = write_text(tmp_path / "p.txt", "1\n2\n")
    run(["eval", preds, truth], exit_code=65, stdout="",
        stderr="hsvm: %s:1: svmlight data (a label, then index:value pairs), not predictions: the order is TRUTH "
               "PREDICTIONS (or --truth TRUTH PREDICTIONS); were they swapped?\n" % truth)
    scored = write_text(tmp_path / "s.txt", "labels 1 2\n1 0.9 0.1\n2 0.3 0.7\n")
    run(["eval", scored, truth], exit_code=65, stdout="",
        stderr="hsvm: %s:1: a predictions file's 'labels ...' header, not svmlight data: the order is TRUTH "
               "PREDICTIONS (or --truth TRUTH PREDICTIONS); were they swapped?\n" % scored)


def test_scores_without_their_header_and_an_empty_truth_are_refused(tmp_path):
    truth = write_text(tmp_path / "t.svm", "1 1:1\n2 1:2\n")
    headless = write_text(tmp_path / "p.txt", "1 0.9 0.1\n2 0.2 0.8\n")
    run(["eval", "--truth", truth, headless], exit_code=65, stdout="",
        stderr="hsvm: %s:1: 3 fields: without a 'labels c1 c2 ...' header line a predictions file holds one label "
               "per line\n" % headless)
    empty = write_text(tmp_path / "e.svm", "")
    none = write_text(tmp_path / "n.txt", "")
    run(["eval", "--truth", empty, none], exit_code=65, stdout="",
        stderr="hsvm: %s holds no samples to evaluate\n" % empty)

def test_a_shard_without_samples_is_evaluated_as_0_of_0_as_predict_wrote_it(tmp_path):
    # a short file cut into many shards: an array task per shard must not fail
    blank = write_text(tmp_path / "b.svm", "\n\n\n-3 1:1\n")
    none = write_text(tmp_path / "n.txt", "")
    scored = write_text(tmp_path / "s.txt", "labels -3 1\n")
    for preds in (none, scored):
        r = run(["eval", "--shard", "0/4", "--truth", blank, preds])
        # no samples: the rates are undefined ("-", null), not 0
        assert r.stdout.startswith("samples              0\naccuracy             -  (0/0)\nmean class accuracy  -\n"
                                   "macro F1             -\n")
        assert r.stderr == "hsvm: eval: shard 0/4 of %s holds no samples: its report counts 0 of 0\n" % blank
        r = run(["eval", "-q", "--json", "--shard", "0/4", "--truth", blank, preds], stderr="")
        report = json.loads(r.stdout)
        assert report["samples"] == 0 and report["accuracy"] is None and report["macro_f1"] is None


def test_a_file_of_many_blocks_is_reported_as_the_whole_matrix_gives_it(tmp_path):
    # eval reduces each block of 4,096 rows as it is read (no n x K matrix);
    # the report is the one the metrics give on the whole matrix, with
    # labels outside the header, labels that are not the top class, and a
    # reference, across block boundaries.
    from hsvm_cli.evaluation.calibration_metrics import expected_calibration_error, nll, reject_at_error
    from hsvm_cli.evaluation.metrics import class_ranks, recall_curve
    from hsvm_cli.support.labels import class_index
    rng = np.random.default_rng(4)
    n, classes = 10000, np.array([3, 5, 8, 13, 21])
    P, yi = random_proba(rng, n, len(classes))
    truth = classes[yi]
    truth[rng.choice(n, 50, replace=False)] = 99              # outside the header
    labels = classes[P.argmax(axis=1)]
    labels[rng.choice(n, 300, replace=False)] = classes[0]    # not always the top class
    ref = classes[rng.integers(0, len(classes), n)]
    t = write_text(tmp_path / "t.svm", svm(truth))
    p = write_text(tmp_path / "p.txt", proba_text(classes, labels, P))
    r_path = write_text(tmp_path / "r.txt", "".join("%d\n" % v for v in ref))
    report = json.loads(run(["eval", "--truth", t, p, "--reference", r_path, "--json"]).stdout)
    P = read_scored_predictions(p).scores          # the values as printed
    y = class_index(classes, truth)
    prob = report["probability"]
    assert prob["nll"] == nll(P, y) and prob["ece"] == expected_calibration_error(P, y)
    assert [row["reject_rate"] or 1.0 for row in prob["reject_at_error"]] == \
        list(reject_at_error(P, y, np.array([0.005, 0.004, 0.003, 0.002, 0.001])))
    assert prob["labels_not_most_probable"] == int((labels != classes[P.argmax(axis=1)]).sum())
    true_curve = recall_curve(class_ranks(P, y), len(classes))
    ref_curve = recall_curve(class_ranks(P, class_index(classes, ref)), len(classes))
    for row in report["recall"]["at_k"]:
        assert (row["true_class"], row["reference"]) == (true_curve[row["k"] - 1], ref_curve[row["k"] - 1])
    assert report["outside_classes"] == 50


def test_report_goes_to_o_whole_or_not_at_all(tmp_path, hand):
    truth, preds = hand
    out = tmp_path / "r.json"
    assert run(["eval", "--truth", truth, preds, "--json", "-o", str(out)]).stdout == ""
    assert json.loads(out.read_text())["accuracy"] == 0.75
    assert run(["eval", "--truth", truth, preds, "-o", str(out)]).stdout == ""
    assert out.read_text() == HAND_REPORT
    bad = write_text(tmp_path / "bad.txt", HAND_PROBA.replace("0.25 0.25 0.5", "0.25 x 0.5"))
    run(["eval", "--truth", truth, bad, "-o", str(out)], exit_code=65)
    assert out.read_text() == HAND_REPORT and sorted(p.name for p in tmp_path.iterdir()) == \
        sorted(["t.svm", "p.txt", "bad.txt", "r.json"])
    run(["eval", "--truth", truth, preds, "-o", truth], exit_code=2)


@pytest.mark.parametrize("text, bad_line", [
    ("1\n2\n\n4\n5\n", 3),                               # a prediction left empty: later ones would shift
    ("labels 1 2\n1 0.5 0.5\n \n2 0.1 0.9\n1 1 0\n2 0 1\n3 0 1\n", 3),
    ("1\n2\n3\n4\n5\n\n\n", None),                       # empty lines at the end are no gap
    ("# a comment\n1\n# another\n2\n3\n4\n5\n", None),   # comment lines are not predictions
])
def test_an_empty_line_among_the_predictions_is_refused_at_its_line(tmp_path, text, bad_line):
    truth = write_text(tmp_path / "t.svm", "".join("%d 1:1\n" % c for c in (1, 2, 1, 2, 1)))
    preds = write_text(tmp_path / "p.txt", text)
    if bad_line is None:
        run(["eval", "--truth", truth, preds])
        return
    r = run(["eval", "--truth", truth, preds], exit_code=65)
    assert r.stderr == ("hsvm: %s:%d: empty line among the predictions (one prediction per line, matched to the "
                        "samples by position)\n" % (preds, bad_line))


def test_a_second_labels_header_is_named_as_shards_joined_out_of_order(tmp_path):
    truth = write_text(tmp_path / "t.svm", "1 1:1\n2 1:2\n1 1:3\n")
    doubled = write_text(tmp_path / "p.txt", "labels 1 2\n1 0.9 0.1\nlabels 1 2\n2 0.2 0.8\n")
    run(["eval", "--truth", truth, doubled], exit_code=65, stdout="",
        stderr="hsvm: %s:3: a second 'labels' header: only the first line holds one (shard outputs joined out of "
               "order, or one twice?)\n" % doubled)


@pytest.mark.parametrize("truth, preds", [("-", "-"), ("/dev/stdin", "-"), ("-", "/dev/fd/0"),
                                          ("/proc/self/fd/0", "/dev/stdin")])
def test_stdin_by_any_name_for_two_inputs_is_a_usage_error(truth, preds):
    # a real process: its descriptor 0 is the pipe that /dev/stdin names
    import subprocess
    text = "1 1:0.5\n2 1:0.25\n"
    r = subprocess.run([sys.executable, "-m", "hsvm_cli", "eval", "--truth", truth, preds], input=text,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "only one of --truth and PREDICTIONS can be stdin" in r.stderr, r.stderr


def test_a_bad_test_line_past_the_first_block_is_reported_before_the_predictions_fault(tmp_path):
    # TEST is read block by block beside the predictions: its fault still comes
    # first, as when it was read whole before them
    lines = ["%d 1:0.5\n" % (1 + i % 3) for i in range(6000)]
    lines[4999] = "abc 1:0.5\n"
    truth = write_text(tmp_path / "t.svm", "".join(lines))
    preds = write_text(tmp_path / "p.txt", "".join("%d\n" % (1 + i % 3) if i != 99 else "bogus\n" for i in range(6000)))
    r = run(["eval", "--truth", truth, preds], exit_code=65)
    assert r.stderr == "hsvm: %s:5000: bad label 'abc': labels must be integers\n" % truth


def test_an_empty_predictions_file_is_named_without_a_line_and_an_empty_k_list_says_so(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = run(["eval", "--truth", DIGITS_TEST, empty], exit_code=65, stdout="")
    assert r.stderr == "hsvm: %s: 0 predictions for the 450 samples of %s\n" % (empty, DIGITS_TEST)
    r = run(["eval", "--truth", DIGITS_TEST, empty, "--recall-k", ""], exit_code=2, stdout="")
    assert "no k given" in r.stderr


def test_nothing_on_stdin_points_back_to_the_command_before_eval_in_the_pipe():
    # `hsvm predict ... | hsvm eval -`: a failing predict's message is above;
    # eval's own should not read as the first fault
    r = run(["eval", "--truth", DIGITS_TEST, "-"], input="", exit_code=65, stdout="")
    assert r.stderr == ("hsvm: <stdin>: 0 predictions for the 450 samples of %s (nothing came: did the command "
                        "writing them fail?)\n" % DIGITS_TEST)


def test_a_scored_row_whose_label_is_not_in_the_header_is_refused_naming_its_line(tmp_path):
    # predict --scores/--proba and svm-predict -b 1 label every row with one of
    # the header's classes; a hand-made file with another scored 0% accurate
    # and 50% top-1
    truth = write_text(tmp_path / "t.svm", svm([1, 2]))
    preds = write_text(tmp_path / "p.txt", "labels 1 2\n3 0.4 0.6\n1 0.9 0.1\n")
    r = run(["eval", "--truth", truth, preds], exit_code=65)
    assert r.stderr == "hsvm: %s:2: label '3' is not one of the header's labels\n" % preds and r.stdout == ""



def test_svm_predict_probability_rows_with_percent_g_labels_are_read_as_the_header_classes(tmp_path):
    # svm-predict and liblinear-predict -b 1 print the header's labels in full and each row's with %g:
    # class 1234567 heads its column, its rows say 1.23457e+06 (refused as 'label 1234570', a number in no file);
    # where %g prints two classes alike, the row's label is its most probable one, as those tools print it
    truth = write_text(tmp_path / "t.svm", svm([1234567, 2, 1234570, 1234567]))
    preds = write_text(tmp_path / "p.txt", "labels 1234567 2 1234570\n1.23457e+06 0.8 0.1 0.1\n2 0.3 0.6 0.1\n"
                                           "1.23457e+06 0.3 0.1 0.6\n1.23457e+06 0.1 0.5 0.4\n")
    assert read_scored_predictions(preds).labels.tolist() == [1234567, 2, 1234570, 1234570]
    r = run(["eval", "--truth", truth, preds, "--json"])
    assert json.loads(r.stdout)["accuracy"] == 0.75
    bad = write_text(tmp_path / "b.txt", "labels 1234567 2\n1.23456e+06 0.8 0.2\n")
    r = run(["eval", "--truth", truth, bad], exit_code=65)
    assert r.stderr == "hsvm: %s:2: label '1.23456e+06' is not one of the header's labels\n" % bad


@pytest.mark.parametrize("rows, token", [("1_0 0.2 0.8", "1_0"), ("10 0.2 0_0.8", "0_0.8")])
def test_digit_separators_in_scored_predictions_are_refused_as_the_svmlight_reader_refuses_them(tmp_path, rows,
                                                                                                 token):
    # Python's float() and numpy's integer conversion took '1_0' as 10 and '0_0.8' as 0.8 (a labels-only file,
    # and every svmlight file, refuse them)
    truth = write_text(tmp_path / "t.svm", svm([1, 10]))
    preds = write_text(tmp_path / "p.txt", "labels 1 10\n1 0.9 0.1\n%s\n" % rows)
    r = run(["eval", "--truth", truth, preds], exit_code=65, stdout="")
    assert r.stderr == "hsvm: %s:3: '%s' is not a number\n" % (preds, token)

def test_truth_indices_of_either_base_are_read_up_to_the_largest_one_based_index(tmp_path):
    # only the labels count: index 0 (a 0-based file) and 2147483646 (the
    # largest 1-based index every other command reads) alike
    preds = write_text(tmp_path / "p.txt", "1\n2\n")
    truth = write_text(tmp_path / "t.svm", "1 2147483646:1\n2 0:1\n")
    r = run(["eval", "--truth", truth, preds])
    assert "accuracy             100.0000%  (2/2)" in r.stdout
    beyond = write_text(tmp_path / "b.svm", "1 1:1\n2 2147483647:1\n")
    r = run(["eval", "--truth", beyond, preds], exit_code=65)
    assert r.stderr == "hsvm: %s:2: index 2147483647 too large (largest supported is 2147483646)\n" % beyond


def test_a_predictions_file_short_of_labels_is_named_at_its_last_line_past_comments(tmp_path):
    truth = write_text(tmp_path / "t.svm", "1 1:1\n2 1:1\n1 1:1\n")
    preds = write_text(tmp_path / "p.txt", "1\n# a note\n2\n")
    r = run(["eval", "--truth", truth, preds], exit_code=65)
    assert r.stderr == "hsvm: %s:3: 2 predictions for the 3 samples of %s\n" % (preds, truth)


def test_bytes_of_a_bad_label_that_are_not_utf8_are_shown_escaped(tmp_path):
    # as the svmlight reader shows them, where a replacement character hid the byte
    truth = write_text(tmp_path / "t.svm", "1 1:1\n2 1:1\n")
    preds = tmp_path / "p.txt"
    preds.write_bytes(b"1\n\xff\x01\n")
    r = run(["eval", "--truth", truth, str(preds)], exit_code=65)
    assert r.stderr == "hsvm: %s:2: label '\\xff\\x01' is not a number\n" % preds


def test_an_empty_item_in_the_recall_k_list_is_refused(hand):
    truth, preds = hand
    r = run(["eval", "--truth", truth, preds, "--recall-k", "1,,2"], exit_code=2, stdout="")
    assert "expected integers separated by commas" in r.stderr
    run(["eval", "--truth", truth, preds, "--recall-k", " 1, 2 "])
