"""The Python API refuses what the commands refuse (a review of it as a
scikit-learn user would call it): outputs that would replace inputs, NaN in
cross-validation, C beside a grid, bad folds, one-vs-one models given to the
one-vs-rest functions, a top-k recall of k < 1, svmlight rows for a model
trained on codes it has no record of; and predict_file drops an imported
model's extra features as predict does."""
import dataclasses
import gzip
import shutil

import numpy as np
import pytest

import hsvm_cli as H
from hsvm_cli.errors import ModelMismatchError, OptionError, SampleError

from conftest import DIGITS_TEST, DIGITS_TRAIN, TOOL_FIXTURES, run


@pytest.fixture()
def plain_test(tmp_path):
    path = tmp_path / "test.svm"
    with gzip.open(DIGITS_TEST, "rb") as fin, open(path, "wb") as f:
        shutil.copyfileobj(fin, f)
    return path


def test_library_outputs_never_replace_their_inputs(digits_model, plain_test, tmp_path):
    before = plain_test.read_bytes()
    with pytest.raises(OptionError, match="is an input: refusing to overwrite it"):
        H.Predictor(digits_model).predict_file(str(plain_test), str(plain_test))
    link = tmp_path / "link.txt"
    link.symlink_to(plain_test)
    with pytest.raises(OptionError, match=r"is an input \(as .*test.svm\)"):
        H.Predictor(digits_model).predict_file(str(plain_test), str(link))
    hm = H.hash_model(digits_model, bits=64)
    with pytest.raises(OptionError, match="is an input"):
        H.hash_data(hm, str(plain_test), str(plain_test))
    hbm = tmp_path / "h.hbm"
    H.save_hash_model(hm, str(hbm))
    kept_hbm = hbm.read_bytes()
    with pytest.raises(OptionError, match="is an input"):     # any file the prediction reads
        H.Predictor(digits_model, H.load_hash_model(str(hbm)), filter_k=3).predict_file(str(plain_test), str(hbm))
    assert hbm.read_bytes() == kept_hbm
    assert plain_test.read_bytes() == before
    parts = [str(tmp_path / ("p%d" % i)) for i in range(2)]
    for i, p in enumerate(parts):
        run(["train-ovo", "-q", DIGITS_TRAIN, "--pairs", "%d/2" % i, "-o", p])
    kept = open(parts[0], "rb").read()
    with pytest.raises(OptionError, match="is an input"):
        H.merge_models(parts, parts[0])
    assert open(parts[0], "rb").read() == kept


def test_cross_validation_refuses_nan_and_infinities(digits):
    X, y, _, _ = digits
    X = X.toarray()
    X[::7, 3] = np.nan
    with pytest.raises(SampleError, match="NaN or infinite"):
        H.cross_validate_ovo(X, y, C=1.0, folds=3)
    with pytest.raises(SampleError, match="NaN or infinite"):
        H.search_c(np.where(np.isnan(X), np.inf, X), y, grid=[1.0], folds=3)


def test_train_ovo_refuses_a_c_beside_a_grid_and_folds_below_two(digits):
    X, y, _, _ = digits
    with pytest.raises(OptionError, match="c_grid both given"):
        H.train_ovo(X, y, C=4.0, c_grid=[1, 2])
    with pytest.raises(OptionError, match="c_grid both given"):
        H.cross_validate_ovo(X, y, C=4.0, c_grid=[0.5, 1])
    for folds in (0, 1, 2.5, True):
        with pytest.raises(OptionError, match="cv_folds must be an integer of at least 2"):
            H.train_ovo(X, y, C=1.0, cv_folds=folds)
    # the search's own folds: 2.5 had run 2 folds and "3" three
    for folds in (1, 2.5, "3", True):
        with pytest.raises(OptionError, match="folds must be a whole number of at least 2"):
            H.search_c(X, y, folds=folds)
        with pytest.raises(OptionError, match="folds must be a whole number of at least 2"):
            H.cross_validate_ovo(X, y, folds=folds)
    with pytest.raises(OptionError, match="the grid of C values is empty"):
        H.search_c(X, y, grid=[])


def test_refine_and_outputs_of_the_wrong_kind_are_refused_by_name(digits_model, plain_test, tmp_path):
    import io
    with pytest.raises(OptionError, match=r"refine must be True or False, not 'dag' \(the refine's rule is rule="):
        H.Predictor(digits_model, refine="dag")        # had refined by votes
    with pytest.raises(OptionError, match="refine must be True or False, not 'no'"):
        H.Predictor(digits_model, refine="no")         # had meant yes
    with pytest.raises(TypeError, match="predict_file writes text: give a path, '-' or a text file object"):
        H.Predictor(digits_model).predict_file(plain_test, io.BytesIO())
    text = io.StringIO()
    H.Predictor(digits_model).predict_file(plain_test, text)
    assert len(text.getvalue().splitlines()) == 450
    hm = H.hash_model(digits_model, bits=64)
    with pytest.raises(TypeError, match="output must be a path or '-'"):
        H.hash_data(hm, plain_test, io.BytesIO())


def test_one_vs_rest_functions_refuse_a_one_vs_one_model(digits_model, tmp_path):
    for call in (lambda: H.OvrPredictor(digits_model), lambda: H.hash_ovr_model(digits_model),
                 lambda: H.save_ovr_model(digits_model, tmp_path / "o.hsvm")):
        with pytest.raises(TypeError, match="one-vs-rest model"):
            call()
    assert not (tmp_path / "o.hsvm").exists()


def test_evaluate_refuses_a_top_k_recall_below_one(digits_model, plain_test, tmp_path):
    scores = tmp_path / "s.txt"
    H.Predictor(digits_model).predict_file(str(plain_test), str(scores), scores=True)
    for ks in ([0], [-1, 2], [1.5], [1, "2"], [None, 2]):
        with pytest.raises(OptionError, match="whole numbers of at least 1"):
            H.evaluate(str(plain_test), str(scores), recall_k=ks)
    assert H.evaluate(str(plain_test), str(scores), recall_k=[1, 2]).report["recall"]
    # the value is checked before the files: a labels-only file does not hide it
    labels = tmp_path / "l.txt"
    H.Predictor(digits_model).predict_file(str(plain_test), str(labels))
    for ks in (0, "a", [0]):
        with pytest.raises(OptionError, match="whole numbers of at least 1"):
            H.evaluate(str(plain_test), str(labels), recall_k=ks)


def test_library_errors_are_typed_for_a_service(digits_model, digits, tmp_path):
    # label problems are DataErrors and ValueErrors; a wrong argument type a TypeError; a bad
    # kernel refused when the Predictor is made, not at its first prediction; calibrations compare
    X, y = digits[0], digits[1]
    from hsvm_cli.errors import DataError
    for bad in (np.zeros_like(y), y[:-1], y + 0.5):
        with pytest.raises(DataError) as info:
            H.train_ovo(X, bad)
        assert isinstance(info.value, ValueError)
    with pytest.raises(TypeError, match="OvoModel"):
        H.hash_model("m.hsvm")
    with pytest.raises(OptionError, match="multiple of 64"):
        H.hash_model(digits_model, bits="a")
    with pytest.raises(ValueError, match="kernel must be one of"):
        H.Predictor(digits_model, kernel="x")
    with pytest.raises(TypeError, match="source must be a path"):
        H.load_svmlight(None)
    cal = H.calibrate(digits_model, None, digits[2][:150], digits[3][:150], repeat=1)
    assert cal == cal and cal != H.calibrate(digits_model, None, digits[2][:150], digits[3][:150], repeat=1)


def test_predict_file_drops_an_imported_models_extra_features(tmp_path):
    imp = H.import_model(str(TOOL_FIXTURES / "libsvm_c3.model"))
    wide = tmp_path / "wide.svm"
    lines = (TOOL_FIXTURES / "digits3.test.svm").read_text().splitlines()
    wide.write_text("".join(line + " 900:1\n" for line in lines))
    out, ref = tmp_path / "w.txt", tmp_path / "r.txt"
    H.Predictor(imp.model).predict_file(str(wide), str(out))
    H.Predictor(imp.model).predict_file(str(TOOL_FIXTURES / "digits3.test.svm"), str(ref))
    assert out.read_text() == ref.read_text()


def test_a_model_trained_on_unrecorded_codes_refuses_svmlight_rows(digits, plain_test, tmp_path):
    X, y, Xt, _ = digits
    kh = H.fit_kernel_hash(X, kernel="rbf", landmarks=64, bits=128, seed=1)
    m = H.train_ovo_codes(kh.codes(X), y)
    with pytest.raises(ModelMismatchError, match="no record of the kernel hash"):
        H.Predictor(m).predict_file(str(plain_test), str(tmp_path / "o.txt"))
    with pytest.raises(ModelMismatchError, match="not rows of 64 features"):
        H.Predictor(m).predict(Xt)
    assert np.array_equal(H.Predictor(m).predict(H.expand_codes(kh.codes(Xt))),
                          H.Predictor(H.train_ovo_codes(kh.codes(X), y, kernel_hash=kh), kernel_hash=kh).predict(Xt))
    H.save_model(m, tmp_path / "m.hsvm")
    r = run(["predict", "-m", tmp_path / "m.hsvm", plain_test], exit_code=65)
    assert "no record of the kernel hash that made them" in r.stderr
    with pytest.raises(ModelMismatchError, match="trained on kernel hash codes: calibrate takes"):
        H.calibrate(m, None, X, y, repeat=1)


def test_calibrate_takes_samples_as_predictor_does(digits):
    X, y, Xt, yt = digits
    m = H.train_ovo(X, y)
    hm = H.hash_model(m, bits=64)
    narrow = H.calibrate(m, hm, Xt[:, :60], yt, repeat=1, k_grid=[3], bits_grid=[64])
    assert narrow.setting is not None            # zeros for the missing features
    wide = H.load_svmlight(DIGITS_TEST, n_features=70)[0]
    with pytest.raises(SampleError, match="X has 70 features, the model 64"):
        H.calibrate(m, hm, wide, yt, repeat=1)


def test_raw_samples_through_a_kernel_hash_are_checked_as_samples(digits):
    X, y, Xt, _ = digits
    kh = H.fit_kernel_hash(X, kernel="rbf", landmarks=64, bits=128, seed=1)
    p = H.Predictor(H.train_ovo_codes(kh.codes(X), y, kernel_hash=kh), kernel_hash=kh)
    bad = Xt.toarray()
    bad[0, 0] = np.nan
    for X_bad, why in ((bad, "NaN or infinite"), (bad[0, 1:], "2-d"),
                       (np.zeros((2, 70)), "X has 70 features, the kernel hash 64$")):
        with pytest.raises(SampleError, match=why):
            p.predict(X_bad)
    assert np.array_equal(p.predict(Xt.toarray().tolist()), p.predict(Xt))


def test_trainer_options_out_of_range_are_option_errors(digits):
    # OptionError is a ValueError too: callers catching ValueError still do.
    X, y, _, _ = digits
    for kw in ({"C": 0}, {"bags": 0}, {"jobs": 0}, {"per_class": 0}, {"tol": -1.0}, {"solver": "smo"}):
        with pytest.raises(OptionError):
            H.train_ovo(X, y, **kw)


def test_the_one_vs_rest_filter_takes_a_whole_number_of_classes():
    imp = H.import_model(str(TOOL_FIXTURES / "liblinear_ovr3.model"))
    hm = H.hash_ovr_model(imp.model, bits=64)
    with pytest.raises(OptionError, match="whole number"):
        H.OvrPredictor(imp.model, hm, filter_k=2.5)
    assert H.OvrPredictor(imp.model, hm, filter_k=np.int64(2)).k == 2


def test_train_ovo_takes_a_negative_bias_as_no_bias_term_as_the_command_does(digits):
    # LIBLINEAR's -B -1; train-ovo -B -1 gives every b = 0, and so does the library now
    X, y = digits[0], digits[1]
    none = H.train_ovo(X, y, bias=-1, seed=0)
    assert np.all(none.b == 0) and np.array_equal(none.W, H.train_ovo(X, y, bias=0, seed=0).W)
    with pytest.raises(OptionError, match="bias feature must be a number"):
        H.train_ovo(X, y, bias="x")
    with pytest.raises(OptionError, match="finite"):
        H.train_ovo(X, y, bias=float("inf"))


def test_a_bad_normalisation_is_an_option_error_naming_auto(digits):
    X, y = digits[0], digits[1]
    with pytest.raises(OptionError, match="normalize must be one of l2, none, auto, not 'l3'"):
        H.train_ovo(X, y, normalize="l3")


def test_predictor_refuses_swapped_or_foreign_models_by_type(digits_model):
    hm = H.hash_model(digits_model, bits=64)
    with pytest.raises(TypeError, match=r"model must be a one-vs-one model .* not HashModel\(10 classes"):
        H.Predictor(hm, digits_model)
    with pytest.raises(TypeError, match=r"hash_model must be a hash model .* not OvoModel\(10 classes"):
        H.Predictor(digits_model, digits_model)
    with pytest.raises(TypeError, match="not a value of type ndarray$"):
        H.Predictor(np.zeros((3, 3)))


def test_reprs_say_the_setting_and_the_chosen_c(digits_model):
    hm = H.hash_model(digits_model, bits=64)
    model = repr(digits_model)
    assert model == "OvoModel(10 classes, 45 pairs x 1 bag, 64 features, normalize='l2', C=1)"
    assert repr(H.Predictor(digits_model)) == "Predictor(exact, max-wins votes; %s)" % model
    assert repr(H.Predictor(digits_model, hm, filter_k=3)) == \
        "Predictor(hash filter at 64 bits, k=3, refined by votes; %s)" % model
    assert repr(H.Predictor(digits_model, first_stage="scores", filter_k=4, rule="dag", refine=False)) == \
        "Predictor(class scores, k=4, not refined; %s)" % model


def test_one_vs_rest_and_imported_models_show_their_shape(digits_model):
    imp = H.import_model(str(TOOL_FIXTURES / "liblinear_ovr3.model"))
    assert repr(imp) == "ImportedModel(liblinear, OvrModel(3 classes, 64 features, normalize='none'))"
    assert repr(H.OvrPredictor(imp.model)) == "OvrPredictor(exact; %r)" % imp.model
    hm = H.hash_ovr_model(imp.model, bits=64)
    assert repr(H.OvrPredictor(imp.model, hm, filter_k=2)) == \
        "OvrPredictor(hash filter at 64 bits, k=2, margin, refined; %r)" % imp.model
    as_float32 = dataclasses.replace(digits_model, params=dict(digits_model.params, C=np.float32(2)))
    assert repr(as_float32).endswith("normalize='l2', C=2)")


def test_a_kernel_hash_predictor_names_its_kernel_hash(digits):
    X, y = digits[0], digits[1]
    kh = H.fit_kernel_hash(X, kernel="rbf", landmarks=64, bits=128, seed=1)
    assert repr(kh) == "KernelHash(rbf kernel, 64 landmarks x 64 features, 128 bits, gaussian projection, seed 1)"
    p = H.Predictor(H.train_ovo_codes(kh.codes(X), y, kernel_hash=kh), kernel_hash=kh)
    assert repr(p).endswith("128 features, normalize='none', C=1); through %r)" % kh)


def test_the_library_warns_where_the_commands_print_notices(digits, tmp_path):
    # a validation set missing classes, and probabilities from another path
    # than the labels: HsvmWarnings at the caller's line for Python; the
    # commands print their own notice and no Python warning
    X, y, Xt, yt = digits
    m = H.train_ovo(X, y, C=1.0)
    few = np.isin(yt, np.unique(yt)[:4])
    with pytest.warns(H.HsvmWarning, match="cover 4 of the model's 10 classes") as caught:
        cal = H.calibrate(m, None, Xt[few], yt[few], repeat=1, first_stages=())
    assert caught[0].filename == __file__
    # as if the exact DAG had been the fastest (it may be, by its timing): its
    # probabilities come from its max-wins twin
    cal.setting = dataclasses.replace(cal.setting, mode="exact", rule="dag")
    p = H.Predictor.from_calibration(m, cal)
    with pytest.warns(H.HsvmWarning, match=r"probabilities come from exact prediction .* \(exact, decision DAG\)"):
        p.predict_block(Xt[:5], proba=True)
    H.save_model(m, tmp_path / "m.hsvm")
    with open(tmp_path / "v.svm", "wb") as f:
        H.write_svmlight(f, Xt[few], yt[few])
    r = run(["calibrate", "-m", tmp_path / "m.hsvm", "--repeat", "1", "-o", tmp_path / "c.json", tmp_path / "v.svm"])
    assert r.stderr.count("cover 4 of the model's 10 classes") == 1 and "HsvmWarning" not in r.stderr
    with pytest.warns(H.HsvmWarning, match="cover 4 of"):      # the command's silence ended with it
        H.calibrate(m, None, Xt[few], yt[few], repeat=1, first_stages=())


def test_file_errors_are_the_standard_exceptions_a_python_caller_catches(tmp_path, digits_model):
    # a generic `except (ValueError, OSError)` catches what hsvm raises for a
    # missing or malformed file, as for numpy's and scikit-learn's loaders
    from hsvm_cli.errors import CorruptInputError, InputFormatError, InputNotFoundError, ModelFormatError, OutputError
    with pytest.raises(OSError) as missing:
        H.load_svmlight(tmp_path / "nope.svm")
    assert isinstance(missing.value, InputNotFoundError) and str(missing.value).endswith("nope.svm: no such file")
    bad = tmp_path / "bad.svm"
    bad.write_bytes(b"1 1:1\n2 x\n")
    with pytest.raises(ValueError) as malformed:
        H.load_svmlight(bad)
    assert isinstance(malformed.value, InputFormatError) and ":2: " in str(malformed.value)
    cut = tmp_path / "cut.svm.gz"
    cut.write_bytes(gzip.compress(b"1 1:1\n" * 1000)[:-20])
    with pytest.raises(ValueError) as corrupt:
        H.load_svmlight(cut)
    assert isinstance(corrupt.value, CorruptInputError) and "truncated gzip" in str(corrupt.value)
    junk = tmp_path / "junk.hsvm"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(ValueError) as model:
        H.load_model(junk)
    assert isinstance(model.value, ModelFormatError)
    with pytest.raises(OSError) as output:
        H.save_model(digits_model, tmp_path / "no-such-dir" / "m.hsvm")
    assert isinstance(output.value, OutputError) and str(output.value).count("cannot write") == 1


def test_more_folds_than_samples_warns_of_leave_one_out_as_the_command_notes():
    from hsvm_cli.errors import HsvmWarning
    X, y = H.load_svmlight(DIGITS_TRAIN)
    with pytest.warns(HsvmWarning, match=r"^100 folds for 30 samples: leave-one-out cross-validation \(30 folds\)"):
        search = H.cross_validate_ovo(X[:30], y[:30], folds=100)
    assert search.folds == 30


def test_the_wrong_object_is_a_type_error_saying_what_to_pass(tmp_path):
    import numpy as np
    import pytest

    from hsvm_cli import evaluate, import_model, imported_calibration, logistic_predictor, save_calibration, train_ovo

    from conftest import DIGITS_TRAIN, TOOL_FIXTURES
    imp = import_model(TOOL_FIXTURES / "liblinear_lr3.model")
    with pytest.raises(TypeError, match=r"import_model\(...\).model"):
        logistic_predictor(imp)
    with pytest.raises(TypeError, match="what import_model returns"):
        imported_calibration(imp.model)
    with pytest.raises(TypeError, match="takes a Calibration"):
        save_calibration(imp.model, tmp_path / "c.cal")
    with pytest.raises(TypeError, match="train_ovo_file"):
        train_ovo(DIGITS_TRAIN, [1, 2])
    # an array where a file goes: named by its type, not printed whole
    with pytest.raises(TypeError) as info:
        evaluate(np.arange(100000), np.arange(100000))
    assert str(info.value).endswith("not ndarray") and len(str(info.value)) < 100
    assert not list(tmp_path.iterdir())


def test_models_compare_by_identity_and_can_be_kept_in_sets(digits_model, tmp_path):
    # the generated __eq__ compared their arrays: "truth value of an array is
    # ambiguous" for model == model (a loaded model against its original too)
    imp = H.import_model(str(TOOL_FIXTURES / "liblinear_ovr3.model"))
    H.save_model(digits_model, tmp_path / "m.hsvm")
    for a in (digits_model, H.hash_model(digits_model, bits=64), imp, imp.model, H.load_model(tmp_path / "m.hsvm")):
        assert a == a and a != dataclasses.replace(a) and len({a, a}) == 1


def test_a_circulant_projection_checks_its_shape_and_memory_before_drawing():
    # a width of 2^31 asked for 16 GiB without a check (the process was killed)
    from hsvm_cli.support.memory import TooLargeError
    for kw, error in (({"bits": 64, "n_features": 2**31}, OptionError), ({"bits": float("inf"), "n_features": 64},
                                                                          OptionError),
                      ({"bits": 0, "n_features": 64}, OptionError), ({"bits": 64, "n_features": 2**31 - 2},
                                                                      TooLargeError)):
        with pytest.raises(error):
            H.CirculantProjection.from_seed(seed=0, **kw)


def test_kernel_hashes_and_trainers_take_every_sparse_format_and_nested_lists(digits):
    import scipy.sparse as sp
    X, y = digits[2][:60], digits[3][:60]
    D = X.toarray()
    kh = H.fit_kernel_hash(D.tolist(), kernel="rbf", landmarks=16, bits=64)
    assert kh.content_sha256() == H.fit_kernel_hash(X, kernel="rbf", landmarks=16, bits=64).content_sha256()
    codes, y_sub = kh.codes(X), kh.transform(X)
    narrow = np.hstack([D[:, :8], np.zeros((60, 56))])
    assert np.array_equal(kh.codes(sp.dia_matrix(D[:, :8])), kh.codes(narrow))      # DIA stores diagonals: narrow
    for form in (X.tocoo(), X.tobsr(), X.tocsc(), D.tolist()):
        assert np.array_equal(kh.codes(form), codes) and np.array_equal(kh.transform(form), y_sub)
    assert H.cross_validate_ovo(D.tolist(), y, C=1.0).best.correct == H.cross_validate_ovo(X, y, C=1.0).best.correct
    assert H.train_pair_block(D.tolist(), y, block="0/2").pair_stop == H.train_pair_block(X, y, block="0/2").pair_stop
    fitted = H.fit_circulant_hash(D.tolist(), bits=16)
    assert fitted.content_sha256() == H.fit_circulant_hash(D, bits=16).content_sha256()


def test_objects_of_the_wrong_kind_are_type_errors_naming_what_was_wanted(digits_model, digits):
    X, y = digits[2][:100], digits[3][:100]
    imp = H.import_model(str(TOOL_FIXTURES / "liblinear_ovr3.model"))
    hm = H.hash_model(digits_model, bits=64)
    lc = H.fit_circulant_hash(X.toarray(), bits=16)
    cal = H.calibrate(digits_model, None, X, y, repeat=1)
    for call, wanted in ((lambda: H.calibrate(imp.model, None, X, y), "one-vs-one model"),
                         (lambda: H.calibrate(digits_model, digits_model, X, y), "hash model"),
                         (lambda: H.Predictor(digits_model, lc), "hash_model must be a hash model"),
                         (lambda: H.Predictor(digits_model, calibration=3), "calibration must be a Calibration"),
                         (lambda: H.Predictor(digits_model, kernel_hash="x"), "kernel_hash must be a KernelHash"),
                         (lambda: H.Predictor.from_calibration(imp.model, cal), "one-vs-one model"),
                         (lambda: hm.check_model(imp.model), "OvoModel"),
                         (lambda: H.save_part(digits_model, "p.part"), "ModelPart")):
        with pytest.raises(TypeError, match=wanted):
            call()


def test_numbers_int_cannot_take_are_option_errors_not_overflow_errors():
    imp = H.import_model(str(TOOL_FIXTURES / "liblinear_ovr3.model"))
    hm = H.hash_ovr_model(imp.model, bits=64)
    for call in (lambda: H.hash_ovr_model(imp.model, bits=float("inf")),
                 lambda: H.hash_ovr_model(imp.model, seed=float("inf")),
                 lambda: hm.check_bits(float("nan")),
                 lambda: H.import_model(str(TOOL_FIXTURES / "libsvm_c3.model"), n_features=float("inf"))):
        with pytest.raises(OptionError):
            call()


def test_grids_biases_seeds_and_blocks_of_the_wrong_kind_are_option_errors_naming_them(digits):
    X, y, _, _ = digits
    for grid in (5, "1,2", [1, float("nan")], [0.5, -1], [True], []):
        with pytest.raises(OptionError, match="grid of C values|every C of the grid"):
            H.train_ovo(X, y, c_grid=grid)
    with pytest.raises(OptionError, match="bias must be a finite number"):
        H.search_c(X.toarray(), y, bias="x")
    with pytest.raises(OptionError, match=r"seed must be an integer in \[0, 2\*\*64\), not -1"):
        H.fit_circulant_hash(X.toarray()[:300], bits=64, seed=-1)
    with pytest.raises(OptionError, match="block must be an integer >= 1, not 0"):
        H.fit_kernel_hash(X[:200], kernel="rbf", landmarks=50, bits=64, block=0)
    with pytest.raises(TypeError, match="kernel_hash must be a KernelHash"):
        H.train_ovo_codes(np.zeros((4, 1), np.uint64), [1, 1, 2, 2], kernel_hash=5)


def test_a_grid_given_as_a_generator_is_searched_whole(digits):
    X, y, _, _ = digits
    once = H.train_ovo(X, y, c_grid=(c for c in (0.25, 4.0)), cv_folds=3, seed=1)
    listed = H.train_ovo(X, y, c_grid=[0.25, 4.0], cv_folds=3, seed=1)
    assert once.params["cross_validation"] == listed.params["cross_validation"]
    assert [row["C"] for row in listed.params["cross_validation"]["table"]] == [0.25, 4.0]
    # both normalisations of "auto" search the whole grid
    auto = H.cross_validate_ovo(X, y, c_grid=(c for c in (0.25, 4.0)), folds=3, normalize="auto", seed=1)
    assert sorted(auto.compared) == ["l2", "none"]
    assert all(len(s.steps) == 2 for s in auto.compared.values()), auto.compared


def test_class_weights_take_whole_number_float_labels_as_y_does(digits):
    X, y, _, _ = digits
    label = int(np.unique(y)[0])
    by_float = H.train_ovo(X, y, class_weight={float(label): 2.0})
    by_int = H.train_ovo(X, y, class_weight={label: 2.0})
    assert np.array_equal(by_float.W, by_int.W) and np.array_equal(by_float.b, by_int.b)
    with pytest.raises(OptionError, match="class_weight labels must be integers, not 1.5"):
        H.train_ovo(X, y, class_weight={1.5: 2.0})


def test_the_estimator_names_random_state_in_its_error():
    pytest.importorskip("sklearn")
    X, y = np.eye(4), np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="random_state must be an integer"):
        H.HashedOvoSVC(random_state=-1).fit(X, y)


def test_merge_models_refuses_one_path_where_a_list_of_parts_goes(tmp_path):
    with pytest.raises(TypeError, match="part_paths must be a list of part files, not one path"):
        H.merge_models(str(tmp_path / "part.0"), str(tmp_path / "m.hsvm"))
    assert not (tmp_path / "m.hsvm").exists()
