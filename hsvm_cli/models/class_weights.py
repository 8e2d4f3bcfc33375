"""The class-score summaries of a one-vs-one model (the first stage of
predict/class_scores.py):

    u_c = (1/B) Σ_{classifiers j of the pairs naming c} ±w_j/‖w_j‖,
    β_c = (1/B) Σ_j ±b_j/‖w_j‖,

signed + where c is the pair's first class, so that u_c·x + β_c is the sum
of c's normalised pair margins.  Derived from W and b alone, they are
computed in one order on every machine (native/class_weights.c: norms and
sums in double, classifier after classifier) and may be stored in the model
file (``class_W``, ``class_b``), so that ranking classes never needs W read
whole at prediction time; a file without them gets them computed when
needed.  Rows can arrive in pieces of any size (a streamed model): the
result does not depend on how they are split."""
import numpy as np

from ..errors import DataError
from ..support.native import lib, ptr

__all__ = ["ClassWeightAccumulator", "compute_class_weights"]

# Classifier rows read per call when computing from a model: bounds the
# float32 copy of a memory-mapped block.
_ROWS = 1 << 13


class ClassWeightAccumulator:
    """Running sums of the summaries of a model of ``n_classes`` classes whose
    classifier rows (pair ``row // bags``) arrive in order via :meth:`add`."""

    def __init__(self, pair_a, pair_b, *, n_classes, n_features, bags):
        self.pair_a = np.ascontiguousarray(pair_a, dtype=np.int32)
        self.pair_b = np.ascontiguousarray(pair_b, dtype=np.int32)
        self.K, self.d, self.bags = int(n_classes), int(n_features), int(bags)
        self.U = np.zeros((self.K, self.d), dtype=np.float64)
        self.beta = np.zeros(self.K, dtype=np.float64)
        self.rows = 0

    def add(self, W_rows, b_rows):
        """Adds the next classifier rows (float32 [r, d] and [r])."""
        W_rows = np.ascontiguousarray(W_rows, dtype=np.float32)
        b_rows = np.ascontiguousarray(b_rows, dtype=np.float32)
        n = W_rows.shape[0]
        if W_rows.ndim != 2 or W_rows.shape[1] != self.d or b_rows.shape != (n,):
            raise ValueError("rows must be W [r, %d] with b [r]" % self.d)
        if self.rows + n > self.pair_a.shape[0] * self.bags:
            raise ValueError("more classifier rows than the model's %d" % (self.pair_a.shape[0] * self.bags))
        if n and lib.hsvm_class_weights_add(ptr("float *", W_rows), ptr("float *", b_rows), n, self.d, self.rows,
                                            self.bags, ptr("int32_t *", self.pair_a), ptr("int32_t *", self.pair_b),
                                            self.K, ptr("double *", self.U), ptr("double *", self.beta)) != 0:
            raise ValueError("a pair names a class outside 0..%d" % (self.K - 1))
        self.rows += n

    def result(self):
        """(U float32 [K, d], β float32 [K]) once every row was added."""
        if self.rows != self.pair_a.shape[0] * self.bags:
            raise ValueError("%d of the model's %d classifier rows were added"
                             % (self.rows, self.pair_a.shape[0] * self.bags))
        with np.errstate(over="ignore"):
            U, beta = self.U.astype(np.float32), self.beta.astype(np.float32)
        if not (np.isfinite(U).all() and np.isfinite(beta).all()):
            # b/|w| is a distance in the features' units: samples near
            # float32's limit (unnormalised) put it beyond float32's range.
            raise DataError("the model's class summaries overflow float32 (a pair's margin b/|w| of %.3g): its "
                            "features are too large for float32 models without normalisation; scale them, or "
                            "train with --normalize l2" % float(np.max(np.abs(self.beta))))
        return U, beta


def compute_class_weights(model):
    """(U, β) of an :class:`~hsvm_cli.models.ovo.OvoModel` from its W and b
    (read once, in blocks; the caller verifies W first when it comes from a
    file)."""
    acc = ClassWeightAccumulator(model.pair_a, model.pair_b, n_classes=model.n_classes,
                                 n_features=model.n_features, bags=model.bags)
    for s in range(0, model.n_classifiers, _ROWS):
        acc.add(model.W[s:s + _ROWS], model.b[s:s + _ROWS])
    return acc.result()
