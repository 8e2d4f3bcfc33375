"""Retrieval recall of codes (evaluation/retrieval.py)."""
import numpy as np

from hsvm_cli.evaluation.retrieval import retrieval_recall


def test_retrieval_recall_is_one_for_the_reference_and_low_for_noise():
    rng = np.random.default_rng(13)
    Xd = rng.standard_normal((400, 20))
    Xq = rng.standard_normal((30, 20))
    P = rng.standard_normal((20, 32))
    ref_d, ref_q = Xd @ P > 0, Xq @ P > 0
    assert retrieval_recall(ref_q, ref_d, ref_q, ref_d, X_query=Xq, X_db=Xd, k=10, R=10) >= 0.9
    assert retrieval_recall(ref_q, ref_d, ref_q, ref_d, X_query=Xq, X_db=Xd, k=10, R=100) == 1.0
    noise_d, noise_q = rng.random((400, 32)) > 0.5, rng.random((30, 32)) > 0.5
    assert retrieval_recall(ref_q, ref_d, noise_q, noise_d, X_query=Xq, X_db=Xd, k=10, R=100) < 0.5
