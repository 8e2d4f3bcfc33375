"""Reading LIBSVM and LIBLINEAR model text: malformed files name FILE:LINE,
files stream from compressed files, file objects and stdin."""
import gzip
import hashlib

import numpy as np
import pytest

from hsvm_cli.errors import InputFormatError, InputNotFoundError
from hsvm_cli.io.tool_models import read_liblinear_model, read_libsvm_model
from hsvm_cli.models.imported import import_model
from hsvm_cli.models.ovr import OvrModel

from conftest import TOOL_FIXTURES, write_text


def _libsvm_text(labels, nr_sv, rho, svs):
    K = len(labels)
    out = ["svm_type c_svc", "kernel_type linear", "nr_class %d" % K, "total_sv %d" % sum(nr_sv),
           "rho " + " ".join(repr(float(r)) for r in rho), "label " + " ".join(map(str, labels)),
           "nr_sv " + " ".join(map(str, nr_sv)), "SV"]
    for coef, feats in svs:
        out.append(" ".join(repr(float(c)) for c in coef) + " "
                   + " ".join("%d:%r" % (i, float(v)) for i, v in feats) + " ")
    return "\n".join(out) + "\n"


_GOOD_LIBSVM = _libsvm_text([1, 2, 3], [1, 1, 1], [0.1, 0.2, 0.3],
                            [([0.5, 0.25], [(1, 1.0), (3, 2.0)]), ([-0.5, 0.1], [(2, 1.0)]),
                             ([-0.25, -0.1], [(1, -1.0)])])

_GOOD_LIBLINEAR = "solver_type L2R_L2LOSS_SVC_DUAL\nnr_class 3\nlabel 1 2 3\nnr_feature 2\nbias 1\nw\n" \
                  "0.1 0.2 0.3 \n0.4 0.5 0.6 \n0.7 0.8 0.9 \n"


def _replace_line(text, lineno, new):
    lines = text.splitlines()
    lines[lineno - 1] = new
    return "\n".join(lines) + "\n"


def test_the_base_of_the_malformed_cases_imports(tmp_path):
    m = import_model(write_text(tmp_path / "ok.model", _GOOD_LIBSVM)).model
    assert m.n_pairs == 3 and m.n_features == 3
    m = import_model(write_text(tmp_path / "ok2.model", _GOOD_LIBLINEAR)).model
    assert isinstance(m, OvrModel) and m.n_features == 2


@pytest.mark.parametrize("edit, line, reason", [
    (lambda t: _replace_line(t, 2, "kernel_type rbf"), 2, "kernel_type rbf: only linear-kernel"),
    (lambda t: _replace_line(t, 2, "kernel_type precomputed"), 2, "kernel_type precomputed"),
    (lambda t: _replace_line(t, 1, "svm_type one_class"), 1, "svm_type one_class is not a classifier"),
    (lambda t: _replace_line(t, 1, "svm_type c_svm"), 1, "unknown svm_type c_svm"),
    (lambda t: _replace_line(t, 3, "nr_class three"), 3, "'three' is not an integer"),
    (lambda t: _replace_line(t, 5, "rho 0.1 0.2"), 5, "rho needs 3 values, found 2"),
    (lambda t: _replace_line(t, 5, "rho 0.1 x 0.3"), 5, "'x' is not a number"),
    (lambda t: _replace_line(t, 6, "label 1 2 2"), 6, "repeated label"),
    (lambda t: _replace_line(t, 7, "nr_sv 1 1 2"), 7, "nr_sv sums to 4, total_sv is 3"),
    (lambda t: _replace_line(t, 7, "bogus 1"), 7, "unknown header line 'bogus'"),
    (lambda t: _replace_line(t, 9, "0.5 1:1 3:2"), 9, "needs 2 coefficients before the features"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 1:1 3"), 9, "feature '3' is not index:value"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 1:1 3:"), 9, "feature '3:' is not index:value"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 3:1 1:2"), 9, "feature indices must increase: 1 after 3"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 0:1"), 9, "feature index 0 in a 1-based model file"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 a:1"), 9, "feature index 'a' is not an integer"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 1:zz"), 9, "'zz' is not a number"),
    (lambda t: _replace_line(t, 9, "0.5 nan 1:1"), 9, "value is NaN"),
    (lambda t: _replace_line(t, 9, "0.5 inf 1:1"), 9, "value is not finite"),
    (lambda t: t + "0.1 0.2 1:1\n", 12, "more support vectors than total_sv 3"),
    (lambda t: "\n".join(t.splitlines()[:10]) + "\n", 10, "file ends after 2 of total_sv 3"),
    (lambda t: "\n".join(t.splitlines()[:6]) + "\n", 6, "file ends before the SV section"),
    (lambda t: _replace_line(t, 4, "nr_class 3"), 4, "nr_class given twice"),
    # numbers beyond what the tools or hsvm's float32 model can hold: one line, not a traceback
    (lambda t: _replace_line(t, 6, "label 1 99999999999999999999 3"), 6, "99999999999999999999 is out of range"),
    # labels are the tools' int: one beyond it they would read back wrapped round
    (lambda t: _replace_line(t, 6, "label 1 99999999999 3"), 6, "99999999999 is out of range (at most 2147483647)"),
    (lambda t: _replace_line(t, 6, "label 1 -2147483649 3"), 6, "-2147483649 is out of range"),
    (lambda t: _replace_line(t, 7, "nr_sv 1 1 99999999999999999999"), 7, "99999999999999999999 is out of range"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 1:1 99999999999999999999:1"), 9,
     "feature index 99999999999999999999 is too large"),
    # the last column the svmlight reader and every hsvm file can address is 2^31 - 2
    (lambda t: _replace_line(t, 9, "0.5 0.25 1:1 2147483647:1"), 9,
     "feature index 2147483647 is too large (at most 2147483646 columns)"),
    (lambda t: _replace_line(t, 9, "0.5 0.25 1:1e45"), 9, "1e45 is beyond float32's range"),
    (lambda t: _replace_line(t, 5, "rho 0.1 nan 0.3"), 5, "value is NaN"),
])
def test_malformed_libsvm_model_names_file_and_line(tmp_path, edit, line, reason):
    path = write_text(tmp_path / "bad.model", edit(_GOOD_LIBSVM))
    with pytest.raises(InputFormatError) as exc:
        import_model(path)
    assert str(exc.value).startswith("%s:%d: " % (path, line)), str(exc.value)
    assert reason in str(exc.value)


@pytest.mark.parametrize("edit, line, reason", [
    (lambda t: _replace_line(t, 1, "solver_type L2R_L2LOSS_SVR"), 1, "L2R_L2LOSS_SVR is not a classifier"),
    (lambda t: _replace_line(t, 1, "solver_type ONECLASS_SVM"), 1, "ONECLASS_SVM is not a classifier"),
    (lambda t: _replace_line(t, 1, "solver_type FAST"), 1, "unknown solver_type FAST"),
    (lambda t: _replace_line(t, 3, "label 1 2"), 3, "label needs 3 values, found 2"),
    (lambda t: _replace_line(t, 4, "nr_feature -2"), 4, "-2 is below 0"),
    (lambda t: _replace_line(t, 5, "bias one"), 5, "'one' is not a number"),
    (lambda t: _replace_line(t, 8, "0.4 0.5"), 8, "a row of w needs 3 values, found 2"),
    (lambda t: _replace_line(t, 8, "0.4 0.5 x"), 8, "'x' is not a number"),
    (lambda t: t + "1 2 3\n", 10, "more than 3 rows of w (nr_feature 2 + bias)"),
    (lambda t: "\n".join(t.splitlines()[:8]) + "\n", 8, "file ends after 2 of 3 rows of w"),
    (lambda t: _replace_line(t, 3, "weights 1 2 3"), 3, "unknown header line 'weights'"),
    (lambda t: _replace_line(t, 5, "nr_feature 2"), 5, "nr_feature given twice"),
    (lambda t: _replace_line(t, 3, "label 99999999999999999999 2 3"), 3, "99999999999999999999 is out of range"),
    (lambda t: _replace_line(t, 3, "label 2147483648 2 3"), 3, "2147483648 is out of range (at most 2147483647)"),
    (lambda t: _replace_line(t, 4, "nr_feature 2147483647"), 4, "2147483647 is out of range"),
    (lambda t: _replace_line(t, 8, "0.4 5e38 0.6"), 8, "5e38 is beyond float32's range"),
])
def test_malformed_liblinear_model_names_file_and_line(tmp_path, edit, line, reason):
    path = write_text(tmp_path / "bad.model", edit(_GOOD_LIBLINEAR))
    with pytest.raises(InputFormatError) as exc:
        import_model(path)
    assert str(exc.value).startswith("%s:%d: " % (path, line)), str(exc.value)
    assert reason in str(exc.value)


@pytest.mark.parametrize("bad, reason", [("x", "'x' is not a number"), ("nan", "value is NaN"),
                                         ("inf", "value is not finite"), ("1e39", "1e39 is beyond float32's range")])
@pytest.mark.parametrize("row", [0, 21845, 21846, 50000])
def test_w_rows_read_in_batches_name_the_line_of_a_bad_value(tmp_path, bad, reason, row):
    # w is converted 65,536 values (21,846 rows of 3) at a time; a failing batch names its line as one row did
    values = np.arange(50001 * 3, dtype=np.float64).reshape(-1, 3) / 7
    text = ["%r %r %r" % tuple(float(v) for v in r) for r in values]
    good = "solver_type L2R_L2LOSS_SVC_DUAL\nnr_class 3\nlabel 1 2 3\nnr_feature 50000\nbias 1\nw\n"
    model = import_model(write_text(tmp_path / "ok.model", good + "\n".join(text) + "\n")).model
    assert np.array_equal(model.W, values[:-1].T.astype(np.float32)) and np.array_equal(
        model.b, values[-1].astype(np.float32))
    text[row] = "0.5 %s 0.25" % bad
    path = write_text(tmp_path / "bad.model", good + "\n".join(text) + "\n")
    with pytest.raises(InputFormatError) as exc:
        import_model(path)
    assert str(exc.value).startswith("%s:%d: a row of w: %s" % (path, 7 + row, reason)), str(exc.value)
    # a bad value before a line of another kind of error is the one named, as when rows were read one by one
    for tail in ("1 2 3\n", "1 2\n"):
        path = write_text(tmp_path / "bad2.model", good + "\n".join(text) + "\n" + (tail if row == 50000 else ""))
        if row < 50000:
            lines = (good + "\n".join(text) + "\n").splitlines()
            lines[7 + row] = tail.strip()                     # the next row: too short, or fine
            path = write_text(tmp_path / "bad2.model", "\n".join(lines) + "\n")
        with pytest.raises(InputFormatError) as exc:
            import_model(path)
        assert str(exc.value).startswith("%s:%d: a row of w: %s" % (path, 7 + row, reason)), str(exc.value)


def test_a_file_of_neither_kind_is_refused_at_its_first_line(tmp_path):
    path = write_text(tmp_path / "x.model", "\n1 1:0.5 2:1\n")
    with pytest.raises(InputFormatError, match=r"x\.model:2: not a LIBSVM or LIBLINEAR model file"):
        import_model(path)


def test_a_missing_model_file_is_input_not_found(tmp_path):
    with pytest.raises(InputNotFoundError, match="no such file"):
        import_model(str(tmp_path / "absent.model"))
    with pytest.raises(InputNotFoundError, match="is a directory"):
        read_libsvm_model(str(tmp_path))


def test_models_stream_from_file_objects_and_stdin(monkeypatch):
    import io
    import sys
    raw = (TOOL_FIXTURES / "liblinear_cs3.model").read_bytes()
    packed = gzip.compress(raw)
    a = read_liblinear_model(io.BytesIO(packed), name="given")
    assert a.path == "given" and a.sha256 == hashlib.sha256(packed).hexdigest()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    b = read_liblinear_model("-")
    assert b.path == "<stdin>" and np.array_equal(a.w, b.w)


def test_liblinear_two_class_models_store_one_column_except_crammer_singer():
    assert read_liblinear_model(str(TOOL_FIXTURES / "liblinear_bin2.model")).nr_w == 1
    assert read_liblinear_model(str(TOOL_FIXTURES / "liblinear_cs2.model")).nr_w == 2


@pytest.mark.parametrize("make", [lambda d: (d / "loop").symlink_to("loop") or d / "loop",
                                  lambda d: d / "file" / "x", lambda d: d / ("n" * 300)])
def test_a_path_that_cannot_be_opened_is_one_line_exit_66(tmp_path, make):
    # a loop of links, a file as a directory, a name too long: a traceback before
    from conftest import run
    (tmp_path / "file").write_text("x\n")
    path = make(tmp_path)
    r = run(["import-model", str(path), "-o", str(tmp_path / "o.hsvm")], exit_code=66)
    assert r.stderr.startswith("hsvm: %s: cannot open: " % path) and r.stderr.count("\n") == 1


def test_pair_normals_grow_only_as_wide_as_the_features_seen():
    # a block of 4,096 columns per pair for a model of 15 features was 5.9 GB
    # at K = 600; the last block now grows with the widest index, doubling
    from hsvm_cli.io.tool_models import _PairNormals, _SvBatch
    rng = np.random.default_rng(3)
    K = 4
    acc = _PairNormals(K, "m")
    ref = np.zeros((K * (K - 1) // 2, 9000))
    widths = []
    for c, top in ((0, 12), (1, 15), (2, 700), (3, 5000), (1, 9000), (0, 30)):
        batch = _SvBatch(K - 1)
        for _ in range(3):
            idx = np.unique(rng.integers(0, top, size=6))
            idx[-1] = top - 1
            val, coef = rng.normal(size=idx.size), rng.normal(size=K - 1)
            batch.append(coef, idx, val)
            for t, p in enumerate(acc.rows_of_class(c)):
                ref[p, idx] += coef[t] * val
        acc.add(c, batch)
        widths.append([b.shape[1] for b in acc.blocks])
    assert widths[:3] == [[12], [24], [700]]
    assert widths[3] == [4096, 904] and widths[4][:2] == [4096, 4096] and sum(widths[4]) >= 9000
    np.testing.assert_allclose(acc.result(), ref, atol=1e-12)
