"""The Predictor: one object for exact, filter and filter-and-refine
prediction, with the setting of a calibration."""
import numpy as np
import pytest

from hsvm_cli import DataError, OptionError, Predictor, hash_model
from hsvm_cli.models.calibration import Calibration, Setting
from hsvm_cli.models.codes import hash_data, read_codes
from hsvm_cli.predict.predictor import default_filter_k

from conftest import DIGITS_TEST


@pytest.fixture(scope="module")
def hm(digits_model):
    return hash_model(digits_model, bits=256, seed=1)


def _calibration(model, hm, setting):
    K = model.n_classes
    return Calibration(alphas={128: 2.0, 256: 3.0}, platt_A=-np.ones(model.n_pairs), platt_B=np.zeros(model.n_pairs),
                       model_sha256=model.content_sha256(),
                       hash_identity={"seed": hm.seed, "generator": hm.generator, "bits": hm.bits,
                                      "model_sha256": hm.model_sha256},
                       setting=setting, grid=[{"mode": "exact", "mean_refined": K}])


def test_without_a_hash_model_the_predictor_is_exact(digits_model, digits):
    p = Predictor(digits_model)
    assert p.mode == "exact" and p.phases[2:4] == ("score", "vote")
    labels = p.predict(digits[2])
    assert labels.dtype == np.int64 and set(labels) <= set(digits_model.classes.tolist())


def test_default_k_is_a_tenth_of_the_classes_at_least_five(digits_model, hm):
    assert default_filter_k(10) == 5 and default_filter_k(242) == 25 and default_filter_k(2) == 2
    assert default_filter_k(50) == 5 and default_filter_k(51) == 6 and default_filter_k(5) == 5
    assert Predictor(digits_model, hm).k == default_filter_k(digits_model.n_classes)


def test_hash_options_without_a_hash_model_are_option_errors_in_each_callers_words(digits_model):
    # a Python caller reads its keyword arguments, the hsvm command its flags
    for kw, flag, words in (({"bits": 64}, "--bits", "bits needs a hash model (hash_model)"),
                            ({"filter_k": 3}, "--filter-k", "filter_k needs a first stage"),
                            ({"refine": False}, "--no-refine", "refine=False needs a first stage")):
        with pytest.raises(OptionError) as info:
            Predictor(digits_model, **kw)
        assert str(info.value).startswith(words) and "-H" not in str(info.value)
        assert info.value.cli_message.startswith(flag) and "-H" in info.value.cli_message


def test_probabilities_and_thresholds_need_a_calibration(digits_model, hm, digits):
    with pytest.raises(OptionError, match="calibration") as info:
        Predictor(digits_model, hm, epsilon=0.1)
    assert info.value.cli_message.startswith("--filter-threshold needs a calibration (-C; hsvm calibrate -m MODEL")
    with pytest.raises(OptionError, match="Predictor.from_calibration") as info:
        Predictor(digits_model, hm).predict_proba(digits[2])
    assert info.value.cli_message.startswith("--proba needs a calibration (-C; hsvm calibrate -m MODEL")
    with pytest.raises(OptionError, match="filter_k must be an integer of at least 1, not 0"):
        Predictor(digits_model, hm, filter_k=0)
    with pytest.raises(OptionError, match="bits must be a multiple of 64 between 64 and the hash model's"):
        Predictor(digits_model, hm, bits=hm.bits + 64)
    # a whole number, not text nor a fraction that int() would cut
    for bits in ("128", 128.5, b"128", True):
        with pytest.raises(OptionError, match="bits must be a whole number"):
            Predictor(digits_model, hm, bits=bits)
    assert Predictor(digits_model, hm, bits=128.0).filter.bits == 128
    assert Predictor(digits_model, hm, bits=np.int64(128)).filter.bits == 128


def test_from_calibration_takes_the_chosen_hash_setting_unless_overridden(digits_model, hm):
    cal = _calibration(digits_model, hm, Setting("hash", 128, 4, None))
    p = Predictor.from_calibration(digits_model, cal, hm)
    assert (p.mode, p.filter.bits, p.k, p.epsilon) == ("hash", 128, 4, None)
    p = Predictor.from_calibration(digits_model, cal, hm, filter_k=2)
    assert (p.filter.bits, p.k) == (128, 2)
    assert Predictor.from_calibration(digits_model, cal, hm, exact=True).mode == "exact"
    with pytest.raises(OptionError, match="-H"):
        Predictor.from_calibration(digits_model, cal)


def test_from_calibration_with_an_exact_setting_predicts_exactly(digits_model, hm, digits):
    cal = _calibration(digits_model, hm, Setting("exact"))
    p = Predictor.from_calibration(digits_model, cal, hm)
    assert p.mode == "exact"
    proba = p.predict_proba(digits[2][:20])
    assert proba.shape == (20, 10) and np.allclose(proba.sum(axis=1), 1)


def test_codes_of_another_sample_count_are_a_data_error(digits_model, hm, digits, tmp_path):
    out = tmp_path / "t.codes"
    hash_data(hm, DIGITS_TEST, out)
    codes = read_codes(out)
    p = Predictor(digits_model, hm, filter_k=3)
    few = [type("Chunk", (), {"X": digits[2][:100], "y": digits[3][:100]})()]
    with pytest.raises(DataError, match="450 codes but the input has 100 samples"):
        list(p.iter_predict(few, codes=codes))


def test_predict_file_writes_what_iter_predict_yields(digits_model, hm, digits, tmp_path):
    p = Predictor(digits_model, hm, filter_k=3)
    out = tmp_path / "p.txt"
    writer = p.predict_file(DIGITS_TEST, out)
    expected = p.predict(digits[2])
    assert out.read_text() == "".join("%d\n" % v for v in expected)
    assert writer.total == 450 and writer.correct == int((expected == digits[3]).sum())


def test_probabilities_are_refused_with_the_dag_rule(digits_model, hm, digits):
    cal = _calibration(digits_model, hm, Setting("hash", 256, 3, None))
    p = Predictor(digits_model, hm, bits=256, filter_k=3, calibration=cal, rule="dag")
    assert p.predict(digits[2]).shape == (450,)
    with pytest.raises(OptionError, match="coupling"):
        p.predict_proba(digits[2])
    with pytest.raises(OptionError, match="vote or dag"):
        Predictor(digits_model, rule="tree")


def test_thresholded_probabilities_of_a_model_storing_pairs_reversed_are_its_canonical_twins(digits_model, hm,
                                                                                             digits):
    # An import keeps the tool's pair order, some pairs stored (b, a).  With a
    # threshold, rows refine fewer classes than the cap and the padding pairs
    # of the sorted kept classes name no classifier: they were looked up
    # anyway, and such a model failed ("no classifier for some pair").
    from hsvm_cli.models.ovo import OvoModel
    from hsvm_cli.models.pairs import PairLookup

    from conftest import reorder_and_flip_pairs
    m = digits_model
    a, b = reorder_and_flip_pairs(np.random.default_rng(4), m.pair_a, m.pair_b)
    pid, _ = PairLookup(m.pair_a, m.pair_b, m.n_classes).lookup(np.minimum(a, b), np.maximum(a, b))
    s = np.where(a < b, 1.0, -1.0).astype(np.float32)
    twin = OvoModel(classes=m.classes, pair_a=a, pair_b=b, W=np.asarray(m.W)[pid] * s[:, None],
                    b=np.asarray(m.b)[pid] * s, bags=1)
    got = []
    for model in (m, twin):
        h = hash_model(model, bits=256, seed=1)
        cal = _calibration(model, h, Setting("hash", 256, 4, 0.05))
        cal.alphas[256] = 10.0        # sharp enough that rows keep 1 to 4 classes
        p = Predictor.from_calibration(model, cal, h, proba=True)
        assert p.epsilon == 0.05
        got.append(p.predict_block(digits[2], proba=True))
    assert np.array_equal(got[0].labels, got[1].labels)
    assert np.allclose(got[0].proba, got[1].proba, atol=1e-12)


def test_predict_file_reports_the_rows_done_after_each_chunk(digits_model, tmp_path):
    calls = []
    out = tmp_path / "p.txt"
    Predictor(digits_model).predict_file(DIGITS_TEST, str(out), chunk_rows=100,
                                         progress=lambda done, total: calls.append((done, total)))
    assert calls == [(100, None), (200, None), (300, None), (400, None), (450, None)]


def test_a_progress_bar_over_many_classes_moves_every_few_hundred_rows_with_the_same_predictions(
        digits_model, tmp_path, monkeypatch):
    # a row costs ~K^2: at K = 2,000 one 16,384-row chunk of --exact --proba left the bar still for 12 minutes
    from hsvm_cli.predict import predictor
    assert [predictor.progress_chunk_rows(K) for K in (10, 242, 1000, 2000, 50000)] == \
        [2684354, 4583, 268, 256, 256]
    plain, shown = tmp_path / "plain.txt", tmp_path / "shown.txt"
    Predictor(digits_model).predict_file(DIGITS_TEST, str(plain), scores=True)
    monkeypatch.setattr(predictor, "progress_chunk_rows", lambda K: 128 if K == 10 else 1 / 0)
    calls = []
    Predictor(digits_model).predict_file(DIGITS_TEST, str(shown), scores=True,
                                         progress=lambda done, total: calls.append(done))
    assert calls == [128, 256, 384, 450] and shown.read_bytes() == plain.read_bytes()


def test_probabilities_after_a_class_score_setting_use_the_k_their_second_stage_was_fitted_at():
    # a calibration from an hsvm whose default k was 2 (K = 10): --proba runs
    # the hash filter at the k its two-stage sharpness was fitted at, not
    # today's default k, where the fitted sharpness would not apply
    from types import SimpleNamespace

    from hsvm_cli.predict.predictor import _setting_arguments
    cal = SimpleNamespace(setting=SimpleNamespace(mode="scores", k=2, rule=None, bits=None, epsilon=None),
                          alphas={128: 1.0, 256: 2.0},
                          two_stage={"bits": 256, "k": 2, "epsilon": None, "sharpness": 7.96})
    args = dict(model=None, calibration=cal, hash_model=object(), exact=False, bits=None, epsilon=None, rule=None,
                first_stage=None, scores=False)
    assert _setting_arguments(filter_k=None, proba=True, **args)["filter_k"] == 2
    assert _setting_arguments(filter_k=None, proba=True, **args)["bits"] == 256
    assert _setting_arguments(filter_k=7, proba=True, **args)["filter_k"] == 7          # said: kept
    cal.two_stage = {"bits": 128, "k": 2, "epsilon": None, "sharpness": 7.96}         # fitted at other bits
    assert _setting_arguments(filter_k=None, proba=True, **args)["filter_k"] is None


def test_iter_predict_names_what_it_takes(digits_model, digits):
    _, _, Xt, _ = digits
    p = Predictor(digits_model)
    with pytest.raises(TypeError, match="iter_predict takes chunks as iter_svmlight yields them .* not ndarray"):
        list(p.iter_predict([Xt[:2].toarray()]))
    with pytest.raises(OptionError, match="chunks may be None only with codes and refine=False"):
        list(p.iter_predict(None))
