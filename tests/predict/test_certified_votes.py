"""The certified max-wins winners read from BLAS decision values: where a row
is certified its winner is the refine's label (the predictor's, computed with
the sampled product), on models built to have many near-zero and exactly
tied decision values, and uncertain rows are not certified."""
import numpy as np
import pytest

from hsvm_cli.models.hashed import hash_model
from hsvm_cli.models.pairs import PairLookup
from hsvm_cli.predict.certified_votes import certified_kept_winners, classifier_norms, sample_norms, uncertain_cells
from hsvm_cli.predict.exact import ExactScorer
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import top_classes
from hsvm_cli.preprocess import prepare

from conftest import small_ovo_model


@pytest.mark.parametrize("reordered,integer", [(False, False), (True, False), (True, True)])
def test_certified_winners_are_the_refines_labels(reordered, integer):
    K, d, n = 30, 24, 400
    model = small_ovo_model(K, d, 1, reordered, seed=4 + reordered, normalize="none" if integer else "l2")
    rng = np.random.default_rng(8)
    X = rng.standard_normal((n, d)).astype(np.float32)
    if integer:
        X = np.rint(X)                          # exact zeros and ties among decision values
    h = hash_model(model, bits=64, seed=1)
    Xn = prepare(model.normalize, X)
    dec = ExactScorer(model).decision(Xn)
    unc = uncertain_cells(dec, sample_norms(Xn), classifier_norms(model.W), d)
    hv, hm = Predictor(model, h, bits=64).filter.hash_and_vote(Xn)
    lookup = PairLookup(model.pair_a, model.pair_b, K)
    certified_rows = 0
    for k in (3, 5, 8):
        p = Predictor(model, h, bits=64, filter_k=k)
        want = p.predict_block(X, filter_votes=(hv, hm)).labels
        best, ok = certified_kept_winners(model, lookup, dec, top_classes(hv, hm, k), unc)
        np.testing.assert_array_equal(model.classes[best[ok]], want[ok])
        certified_rows += int(ok.sum())
        if integer:
            assert not ok.all()                 # exact ties are never certified
    assert certified_rows > 0


def test_a_value_within_the_rounding_bound_is_uncertain():
    dec = np.array([[0.0, 1e-6, -1e-6, 0.5, -0.5]], dtype=np.float32)
    rows, cols = uncertain_cells(dec, np.array([1.0]), np.ones(5), n_features=1000)
    # 2.1 * gamma_1000 is about 1.25e-4: the three small values are uncertain, the large ones not
    assert rows.tolist() == [0, 0, 0] and cols.tolist() == [0, 1, 2]
    # the tolerance follows each classifier's norm, not only the largest
    rows, cols = uncertain_cells(np.array([[1e-6, 1e-6]], np.float32), np.array([1.0]), np.array([1e-3, 1.0]), 1000)
    assert cols.tolist() == [1]


def test_the_certificate_refuses_bagged_models():
    model = small_ovo_model(6, 4, 2, False, seed=0)
    with pytest.raises(ValueError, match="one classifier per pair"):
        certified_kept_winners(model, PairLookup(model.pair_a, model.pair_b, 6), np.zeros((1, 30), np.float32),
                               np.zeros((1, 3), np.int32), (np.zeros(0, np.int64), np.zeros(0, np.int64)))


def test_a_certified_winner_survives_any_sign_of_its_uncertain_cells():
    """The refine's values differ from BLAS's only within the bound: give every
    uncertain cell an arbitrary sign and a certified row keeps its winner."""
    from hsvm_cli.predict.refine import kept_votes
    from hsvm_cli.predict.ties import winners
    K, d, n = 30, 24, 300
    model = small_ovo_model(K, d, 1, True, seed=11, normalize="none")
    rng = np.random.default_rng(3)
    Xn = prepare(model.normalize, np.rint(rng.standard_normal((n, d))).astype(np.float32))
    dec = ExactScorer(model).decision(Xn)
    unc = uncertain_cells(dec, sample_norms(Xn), classifier_norms(model.W), d)
    assert unc[0].size
    doubt = np.zeros(dec.shape, dtype=bool)
    doubt[unc] = True
    lookup = PairLookup(model.pair_a, model.pair_b, K)
    kept = np.argsort(rng.random((n, K)), axis=1)[:, :6].astype(np.int32)
    best, ok = certified_kept_winners(model, lookup, dec, kept, unc)
    assert ok.any() and not ok.all()
    for _ in range(30):
        other = np.where(doubt, rng.choice([-1e-7, 1e-7], size=dec.shape), dec).astype(np.float32)
        votes, conf, _ = kept_votes(other, kept, lookup=lookup, bags=1)
        mask = np.zeros(votes.shape, dtype=bool)
        np.put_along_axis(mask, kept, True, axis=1)
        win = winners(model, np.where(mask, votes, -1), conf)
        np.testing.assert_array_equal(win[ok], best[ok])
