"""Reading LIBSVM (linear kernel) and LIBLINEAR model files: the tools' text
formats, parsed as streams, with every malformed line reported as
``FILE:LINE: reason`` (:class:`hsvm_cli.errors.InputFormatError`).
:mod:`hsvm_cli.models.imported` turns what is read here into hsvm models.

LIBSVM (Chang & Lin, "LIBSVM: a library for support vector machines", 2011;
``svm.cpp``: ``svm_save_model``, ``svm_predict_values``).  A K-class C-SVC or
nu-SVC model holds, for its labels in *its own* order l_0..l_{K-1} (first
appearance in the training file), one classifier per pair (i, j), i < j, in
i-major order p = 0..K(K-1)/2-1.  The support vectors are stored class by class
(``nr_sv`` of each, in label order); SV line s of class c carries K-1
coefficients sv_coef[0..K-2][s] and the vector.  ``svm_predict_values`` decides
pair p = (i, j) by

    f_p(x) = sum_{s in class i} sv_coef[j-1][s] K(sv_s, x)
           + sum_{s in class j} sv_coef[i][s]   K(sv_s, x)  -  rho_p,

l_i when f_p(x) > 0, else l_j (so f_p = 0 goes to l_j), and predicts the label
with the most votes, the first in its label order among equal counts.  For the
linear kernel K(u, x) = u.x, so f_p(x) = w_p.x - rho_p with

    w_p = sum_{s in class i} sv_coef[j-1][s] sv_s + sum_{s in class j} sv_coef[i][s] sv_s.

Coefficient t of an SV of class c therefore belongs to pair (t, c) when t < c
and to pair (c, t+1) when t >= c: each SV line adds to exactly K-1 normals,
which lets the file be read as a stream, the normals accumulated in float64.

LIBLINEAR (Fan et al., "LIBLINEAR: a library for large linear classification",
JMLR 2008; ``linear.cpp``: ``save_model``, ``predict_values``).  The model holds
w as nr_feature (+1 when bias >= 0) rows of nr_w numbers, nr_w = 1 for two-class
models of every solver but Crammer-Singer (MCSVM_CS), nr_class otherwise.

Files may be gzip, bz2, xz or zstd compressed (recognised by their magic bytes) and
``-`` reads stdin; the SHA-256 recorded is of the bytes as stored."""
import os
import sys
from dataclasses import dataclass

import numpy as np

from ..errors import InputFormatError, InputNotFoundError, ModelFormatError
from ..support.arrays import beyond_float32
from ..support.lazy_sparse import sp
from ..support.memory import check_allocation
from .files import HashingReader, bounded_lines, display_name, open_input
from .svmlight import MAX_FEATURES

__all__ = ["LibsvmModel", "LiblinearModel", "read_libsvm_model", "read_liblinear_model", "sniff_model_kind",
           "LIBLINEAR_SOLVERS"]

LIBSVM_CLASSIFIERS = ("c_svc", "nu_svc")
LIBSVM_SVM_TYPES = ("c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr")
LIBSVM_KERNELS = ("linear", "polynomial", "rbf", "sigmoid", "precomputed")

#: LIBLINEAR's solver_type names (linear.cpp, solver_type_table) -> is a classifier.
LIBLINEAR_SOLVERS = {
    "L2R_LR": True, "L2R_L2LOSS_SVC_DUAL": True, "L2R_L2LOSS_SVC": True, "L2R_L1LOSS_SVC_DUAL": True,
    "MCSVM_CS": True, "L1R_L2LOSS_SVC": True, "L1R_LR": True, "L2R_LR_DUAL": True,
    "L2R_L2LOSS_SVR": False, "L2R_L2LOSS_SVR_DUAL": False, "L2R_L1LOSS_SVR_DUAL": False,
    "ONECLASS_SVM": False,
}

# SV lines are accumulated into the normals this many at a time (one sparse
# product per batch keeps Python's per-line work to tokenising).
_SV_BATCH = 2048


#: What a user of a kernel LIBSVM model can do instead of importing it.
HASH_SVM_HINT = ("for a kernel SVM hsvm trains Hash-SVM: kernel-hash, then train-ovo --codes, as the README's "
                 "\"Kernel SVMs: Hash-SVM\" shows")


def foreign_model_said(name, head):
    """What a LIBSVM or LIBLINEAR model file, given where an hsvm file goes,
    is to be told, from its first bytes ``head``; None for another file."""
    if not head.startswith((b"svm_type", b"solver_type")):
        return None
    for line in head.split(b"\n")[:8]:
        words = line.split()
        if len(words) == 2 and words[0] == b"kernel_type" and words[1] != b"linear":
            kernel = words[1].decode("ascii", "replace")
            return ("a LIBSVM model with the %s kernel, not an hsvm file: hsvm imports linear-kernel models only "
                    "(%s)" % (kernel, HASH_SVM_HINT))
    return ("a LIBSVM or LIBLINEAR model, not an hsvm file: convert it with `hsvm import-model %s -o MODEL.hsvm`"
            % name)


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class LibsvmModel:
    """A parsed LIBSVM linear-kernel classification model, in LIBSVM's own
    label order: pair p = (i, j), i < j, i-major; f_p(x) = W[p].x - rho[p] > 0
    decides for labels[i]."""
    path: str
    sha256: str
    svm_type: str
    kernel_type: str
    labels: np.ndarray           # int64 [K], LIBSVM's label order
    nr_sv: np.ndarray            # int64 [K]
    rho: np.ndarray              # float64 [P]
    W: np.ndarray                # float64 [P, max_index] (column i-1 = feature i; 0-based: column i)
    probA: np.ndarray = None     # float64 [P] or None
    probB: np.ndarray = None
    zero_based: bool = False

    @property
    def n_classes(self):
        return int(self.labels.shape[0])

    @property
    def total_sv(self):
        return int(self.nr_sv.sum())


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class LiblinearModel:
    """A parsed LIBLINEAR classification model: w [nr_feature (+1), nr_w] as in
    the file, labels in LIBLINEAR's order."""
    path: str
    sha256: str
    solver_type: str
    labels: np.ndarray           # int64 [nr_class]
    nr_feature: int
    bias: float
    w: np.ndarray                # float64 [nr_feature + (bias >= 0), nr_w]

    @property
    def n_classes(self):
        return int(self.labels.shape[0])

    @property
    def nr_w(self):
        return int(self.w.shape[1])


# --------------------------------------------------------------------------- reading lines

class _Lines:
    """Numbered, decoded lines of a (possibly compressed) text stream, with the
    SHA-256 of the bytes as stored (before decompression)."""

    def __init__(self, source, name):
        self.name = name if name is not None else (
            display_name(source) if isinstance(source, (str, os.PathLike)) or source is None
            else getattr(source, "name", "<input>"))
        if isinstance(source, (str, os.PathLike)) and source != "-":
            try:
                raw = open(source, "rb", buffering=0)
            except FileNotFoundError:
                raise InputNotFoundError("%s: no such file" % self.name) from None
            except IsADirectoryError:
                raise InputNotFoundError("%s: is a directory" % self.name) from None
            except PermissionError:
                raise InputNotFoundError("%s: permission denied" % self.name) from None
            except OSError as exc:
                # a loop of links, a file as a directory, a name too long: in the words every input uses
                raise InputNotFoundError("%s: cannot open: %s" % (self.name, exc.strerror or exc)) from None
        elif source == "-" or source is None:
            raw = sys.stdin.buffer
        else:
            raw = source
        self._raw = raw
        self._owned = isinstance(source, (str, os.PathLike)) and source != "-"
        self._path = source if self._owned else None
        self._hashing = HashingReader(raw)
        self._fh = open_input(self._hashing, name=self.name)
        self.lineno = 0

    def __iter__(self):
        for raw in bounded_lines(self._fh, self.name, path=self._path):
            self.lineno += 1
            try:
                text = raw.decode("ascii")
            except UnicodeDecodeError:
                self.refuse_hsvm_file()
                self.error("not a text line (non-ASCII bytes)")
            yield self.lineno, text

    def refuse_hsvm_file(self):
        """An hsvm file given to import-model is named by its kind (its first
        line, whatever its bytes, says nothing a user would recognise)."""
        kind = self._hsvm_kind() if self.lineno == 1 else None
        if kind is not None:
            from .container import kind_name
            raise ModelFormatError(self.name, "an hsvm %s file, not a LIBSVM or LIBLINEAR model%s"
                                   % (kind_name(kind), ": predict and hash-model take it as it is"
                                      if kind_name(kind) in ("model", "ovr-model") else ""))

    def _hsvm_kind(self):
        # the file's header read again from its path (its first line may end inside the header)
        if self._path is None:
            return None
        from .container import declared_format
        try:
            with open(self._path, "rb") as fh:
                return declared_format(fh.read(1 << 20))
        except OSError:
            return None

    def error(self, reason, line=None):
        raise InputFormatError(self.name, self.lineno if line is None else line, reason)

    def empty(self, what):
        # a file without a line has no line to name ("FILE:0:")
        raise ModelFormatError(self.name, "empty file: not a %s model" % what)

    def finish(self):
        """Drain what the decompressor left and return the SHA-256 of the bytes read."""
        while self._hashing.read(1 << 20):
            pass
        return self._hashing.hexdigest()

    def close(self):
        self._fh.close()
        if self._owned:
            self._raw.close()


#: The tools count features, classes and support vectors in a C int.
_TOOL_INT_MAX = 2**31 - 1


def _ints(lines, tokens, what, count=None, minimum=None, maximum=_TOOL_INT_MAX):
    """Integers of a header line, each in [minimum, maximum]: by default the
    tools' int, which holds their counts and labels alike (a label beyond it is
    a hand edit: the tool would read it back wrapped round)."""
    if count is not None and len(tokens) != count:
        lines.error("%s needs %d values, found %d" % (what, count, len(tokens)))
    out = []
    for t in tokens:
        try:
            v = int(t)
        except ValueError:
            lines.error("%s: %r is not an integer" % (what, t))
        if minimum is not None and v < minimum:
            lines.error("%s: %d is below %d" % (what, v, minimum))
        if v > maximum or v < -maximum - 1:
            lines.error("%s: %s is out of range (at most %d)" % (what, t, maximum))
        out.append(v)
    return out


def _floats(lines, tokens, what, count=None, infinite=False, float32=False):
    """Numbers of a line: finite (``infinite``: +-inf allowed, never NaN);
    ``float32``: within float32's range, hsvm's storage type (a value the
    model stores as it is, such as a support vector's)."""
    if count is not None and len(tokens) != count:
        lines.error("%s needs %d values, found %d" % (what, count, len(tokens)))
    try:
        arr = np.array(tokens, dtype=np.float64)
    except ValueError:
        bad = next(t for t in tokens if not _is_float(t))
        lines.error("%s: %r is not a number" % (what, bad))
    if np.any(np.isnan(arr)):
        # LIBSVM writes nan where its solver failed (a degenerate nu-SVC pair)
        lines.error("%s: value is NaN (the training tool's solve failed there; svm-predict would compare with "
                    "NaN)" % what)
    if not np.all(np.isfinite(arr) | (infinite & np.isinf(arr))):
        lines.error("%s: value is not finite" % what)
    if float32 and np.any(beyond_float32(arr)):
        bad = tokens[int(np.argmax(beyond_float32(arr)))]
        lines.error("%s: %s is beyond float32's range, hsvm's storage type" % (what, bad))
    return arr



def _is_float(t):
    try:
        float(t)
        return True
    except ValueError:
        return False


def _unique_labels(lines, labels):
    if len(set(labels)) != len(labels):
        lines.error("label: repeated label")
    return np.array(labels, dtype=np.int64)


# --------------------------------------------------------------------------- LIBSVM

def read_libsvm_model(source, *, zero_based=False, name=None):
    """Parse a LIBSVM model file (C-SVC or nu-SVC, linear kernel) into a
    :class:`LibsvmModel` with the pair normals w_p summed from the support
    vectors (float64).

    ``source``: a path, ``-`` for stdin, or a binary file object (gzip, bz2, xz, zstd
    recognised by magic bytes).  ``zero_based``: feature indices in the file
    start at 0 (LIBSVM accepts index 0 when the training data had it); by
    default they start at 1 and feature i is column i-1.  ``name``: how
    messages call the file.  Raises InputFormatError (``FILE:LINE: reason``) for
    a malformed line, a non-linear kernel or a non-classification model."""
    lines = _Lines(source, name)
    try:
        return _parse_libsvm(lines, bool(zero_based))
    finally:
        lines.close()


def _parse_libsvm(lines, zero_based):
    head, where = {}, {}
    it = iter(lines)
    K = P = None
    for lineno, text in it:
        tokens = text.split()
        if not tokens:
            continue
        key, args = tokens[0], tokens[1:]
        if key in head:
            lines.error("%s given twice" % key)
        where[key] = lineno
        if key == "svm_type":
            if len(args) != 1 or args[0] not in LIBSVM_SVM_TYPES:
                lines.error("unknown svm_type %s" % " ".join(args))
            if args[0] not in LIBSVM_CLASSIFIERS:
                lines.error("svm_type %s is not a classifier: only c_svc and nu_svc models can be imported"
                            % args[0])
            head[key] = args[0]
        elif key == "kernel_type":
            if len(args) != 1 or args[0] not in LIBSVM_KERNELS:
                lines.error("unknown kernel_type %s" % " ".join(args))
            if args[0] != "linear":
                lines.error("kernel_type %s: only linear-kernel LIBSVM models can be imported "
                            "(a %s kernel has no weight vector w; %s)" % (args[0], args[0], HASH_SVM_HINT))
            head[key] = args[0]
        elif key in ("degree", "gamma", "coef0"):
            # Written only for kernels that use them; harmless for a linear one.
            _floats(lines, args, key, 1)
            head[key] = args[0]
        elif key == "nr_class":
            (K,) = _ints(lines, args, key, 1)
            if K < 2:
                lines.error("nr_class %d: a classifier needs at least two classes" % K)
            P = K * (K - 1) // 2
            head[key] = K
        elif key == "total_sv":
            head[key] = _ints(lines, args, key, 1, minimum=0)[0]
        elif key in ("rho", "probA", "probB"):
            if K is None:
                lines.error("%s before nr_class" % key)
            # svm-train writes rho = +-inf for a pair whose class has no
            # support vector (-w C 0): the pair then always votes one way.
            head[key] = _floats(lines, args, key, P, infinite=key == "rho")
        elif key == "label":
            if K is None:
                lines.error("label before nr_class")
            head[key] = _unique_labels(lines, _ints(lines, args, key, K))
        elif key == "nr_sv":
            if K is None:
                lines.error("nr_sv before nr_class")
            head[key] = np.array(_ints(lines, args, key, K, minimum=0), dtype=np.int64)
        elif key == "SV":
            if args:
                lines.error("unexpected text after SV")
            break
        elif key == "prob_density_marks":
            lines.error("prob_density_marks belong to one-class models, which cannot be imported")
        else:
            lines.error("unknown header line %r" % key)
    else:
        if not head:
            lines.empty("LIBSVM")
        lines.error("file ends before the SV section")
    for key in ("svm_type", "kernel_type", "nr_class", "total_sv", "rho", "label", "nr_sv"):
        if key not in head:
            lines.error("the header lacks %s" % key)
    if ("probA" in head) != ("probB" in head):
        lines.error("probA and probB must come together", line=where.get("probA", where.get("probB")))
    nr_sv = head["nr_sv"]
    total = head["total_sv"]
    if int(nr_sv.sum()) != total:
        lines.error("nr_sv sums to %d, total_sv is %d" % (int(nr_sv.sum()), total), line=where["nr_sv"])
    acc = _PairNormals(K, lines.name)
    ends = np.cumsum(nr_sv)
    cls, seen = 0, 0
    batch = _SvBatch(K - 1)
    for lineno, text in it:
        tokens = text.split()
        if not tokens:
            continue
        if seen == total:
            lines.error("more support vectors than total_sv %d" % total)
        while seen >= ends[cls]:
            # The class changes here: the batch holds one class's SVs only.
            acc.add(cls, batch)
            cls += 1
        coef, idx, val = _sv_line(lines, tokens, K - 1, zero_based)
        batch.append(coef, idx, val)
        seen += 1
        if batch.rows >= _SV_BATCH:
            acc.add(cls, batch)
    acc.add(cls, batch)
    if seen != total:
        lines.error("file ends after %d of total_sv %d support vectors" % (seen, total))
    sha = lines.finish()
    return LibsvmModel(path=lines.name, sha256=sha, svm_type=head["svm_type"], kernel_type=head["kernel_type"],
                       labels=head["label"], nr_sv=nr_sv, rho=head["rho"], W=acc.result(),
                       probA=head.get("probA"), probB=head.get("probB"), zero_based=zero_based)


def _sv_line(lines, tokens, ncoef, zero_based):
    """Coefficients (float64 [ncoef]), 0-based columns (int64) and values of one SV line."""
    if len(tokens) < ncoef:
        lines.error("a support vector line needs %d coefficients, found %d" % (ncoef, len(tokens)))
    head = tokens[:ncoef]
    if any(":" in t for t in head):
        lines.error("a support vector line needs %d coefficients before the features" % ncoef)
    coef = _floats(lines, head, "coefficient")
    feats = tokens[ncoef:]
    if not feats:
        return coef, np.zeros(0, dtype=np.int64), np.zeros(0)
    joined = " ".join(feats)
    if joined.count(":") != len(feats):
        bad = next(t for t in feats if t.count(":") != 1)
        lines.error("feature %r is not index:value" % bad)
    parts = joined.replace(":", " ").split()
    if len(parts) != 2 * len(feats):
        bad = next(t for t in feats if "" in t.split(":"))
        lines.error("feature %r is not index:value" % bad)
    idx_tok, val_tok = parts[0::2], parts[1::2]
    try:
        idx = np.array([int(t) for t in idx_tok], dtype=np.int64)
    except ValueError:
        bad = next(t for t in idx_tok if not t.lstrip("+-").isdigit())
        lines.error("feature index %r is not an integer" % bad)
    except OverflowError:
        bad = next(t for t in idx_tok if abs(int(t)) >= 2**63)
        lines.error("feature index %s is too large" % bad)
    val = _floats(lines, val_tok, "feature value", float32=True)
    if idx[0] < (0 if zero_based else 1):
        if idx[0] == 0:
            lines.error("feature index 0 in a 1-based model file (import it as zero-based)")
        lines.error("negative feature index %d" % idx[0])
    if idx.shape[0] > 1 and np.any(np.diff(idx) <= 0):
        k = int(np.argmax(np.diff(idx) <= 0))
        lines.error("feature indices must increase: %d after %d" % (idx[k + 1], idx[k]))
    if idx[-1] + (1 if zero_based else 0) > MAX_FEATURES:     # the columns it needs, as the svmlight reader counts
        lines.error("feature index %d is too large (at most %d columns)" % (idx[-1], MAX_FEATURES))
    return coef, idx - (0 if zero_based else 1), val


class _SvBatch:
    def __init__(self, ncoef):
        self.ncoef = ncoef
        self.clear()

    def clear(self):
        self.coefs, self.idx, self.val, self.rows = [], [], [], 0

    def append(self, coef, idx, val):
        self.coefs.append(coef)
        self.idx.append(idx)
        self.val.append(val)
        self.rows += 1


class _PairNormals:
    """Accumulates w_p (float64) from batches of SVs of one class.

    The normals are kept as column blocks of _COLUMNS features, added as the
    largest index grows, so a model read as a stream never copies what it has
    accumulated until the one final assembly.  The last block is only as wide
    as the features seen need (doubling, up to _COLUMNS): with 15 features and
    K = 600 a full block was 5.9 GB of zeros, made resident by the huge pages
    numpy asks for, for 11 MB of weights."""

    _COLUMNS = 4096

    def __init__(self, K, name):
        self.K = K
        self.name = name
        self.P = K * (K - 1) // 2
        self.blocks = []
        self.width = 0

    def rows_of_class(self, c):
        """Pair index in LIBSVM order for each coefficient t of a class-c SV."""
        K = self.K
        t = np.arange(K - 1)
        i = np.where(t < c, t, c)
        j = np.where(t < c, c, t + 1)
        return i * K - i * (i + 1) // 2 + (j - i - 1)

    def add(self, c, batch):
        if batch.rows == 0:
            return
        lens = [len(i) for i in batch.idx]
        indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        if indptr[-1] == 0:
            batch.clear()
            return
        indices = np.concatenate(batch.idx)
        data = np.concatenate(batch.val)
        lo, hi = int(indices.min()), int(indices.max()) + 1
        self.width = max(self.width, hi)
        if self._capacity() < hi:
            # The blocks (float64), the assembled W (float64) and the model's
            # float32 copy: 20 bytes per pair and feature at the end.
            check_allocation(self.P * hi * 20 - self.P * self._capacity() * 8,
                             "%s: %d pair normals x %d features (a support vector uses feature %d)"
                             % (self.name, self.P, hi, hi))
            self._widen(hi)
        S = sp.csr_matrix((data, indices - lo, indptr), shape=(batch.rows, hi - lo))
        A = np.array(batch.coefs, dtype=np.float64).reshape(batch.rows, batch.ncoef)
        # Row t of the (K-1) x (hi-lo) product is sum_s A[s, t] sv_s over the
        # touched columns: the class's share of pair rows_of_class(c)[t].
        part = np.asarray(S.T @ A).T
        rows = self.rows_of_class(c)
        C = self._COLUMNS
        for blk in range(lo // C, (hi - 1) // C + 1):
            s, e = max(lo, blk * C), min(hi, (blk + 1) * C)
            self.blocks[blk][rows, s - blk * C:e - blk * C] += part[:, s - lo:e - lo]
        batch.clear()

    def _capacity(self):
        # every block but the last is _COLUMNS wide
        return (len(self.blocks) - 1) * self._COLUMNS + self.blocks[-1].shape[1] if self.blocks else 0

    def _widen(self, hi):
        C = self._COLUMNS
        while self._capacity() < hi:
            last = self.blocks[-1] if self.blocks else None
            if last is not None and last.shape[1] < C:
                need = hi - (len(self.blocks) - 1) * C
                wider = np.zeros((self.P, min(C, max(need, 2 * last.shape[1]))), dtype=np.float64)
                wider[:, :last.shape[1]] = last
                self.blocks[-1] = wider
            else:
                self.blocks.append(np.zeros((self.P, min(C, hi - len(self.blocks) * C)), dtype=np.float64))

    def result(self):
        W = np.empty((self.P, self.width), dtype=np.float64)
        C = self._COLUMNS
        for blk, block in enumerate(self.blocks):
            s, e = blk * C, min(self.width, blk * C + block.shape[1])
            W[:, s:e] = block[:, :e - s]
        return W



# --------------------------------------------------------------------------- LIBLINEAR

def read_liblinear_model(source, *, name=None):
    """Parse a LIBLINEAR classification model file into a :class:`LiblinearModel`.

    Arguments as :func:`read_libsvm_model`.  Regression and one-class solvers
    are refused (InputFormatError naming the solver line)."""
    lines = _Lines(source, name)
    try:
        return _parse_liblinear(lines)
    finally:
        lines.close()


def _parse_liblinear(lines):
    head = {}
    it = iter(lines)
    for lineno, text in it:
        tokens = text.split()
        if not tokens:
            continue
        key, args = tokens[0], tokens[1:]
        if key in head:
            lines.error("%s given twice" % key)
        if key == "solver_type":
            if len(args) != 1 or args[0] not in LIBLINEAR_SOLVERS:
                lines.error("unknown solver_type %s" % " ".join(args))
            if not LIBLINEAR_SOLVERS[args[0]]:
                lines.error("solver_type %s is not a classifier: only classification models can be imported"
                            % args[0])
            head[key] = args[0]
        elif key == "nr_class":
            (K,) = _ints(lines, args, key, 1)
            if K < 2:
                lines.error("nr_class %d: a classifier needs at least two classes" % K)
            head[key] = K
        elif key == "label":
            if "nr_class" not in head:
                lines.error("label before nr_class")
            head[key] = _unique_labels(lines, _ints(lines, args, key, head["nr_class"]))
        elif key == "nr_feature":
            # the bias feature comes after them, within the tools' int
            head[key] = _ints(lines, args, key, 1, minimum=0, maximum=_TOOL_INT_MAX - 1)[0]
        elif key == "bias":
            head[key] = float(_floats(lines, args, key, 1)[0])
        elif key == "w":
            if args:
                lines.error("unexpected text after w")
            break
        else:
            lines.error("unknown header line %r" % key)
    else:
        if not head:
            lines.empty("LIBLINEAR")
        lines.error("file ends before the w section")
    for key in ("solver_type", "nr_class", "label", "nr_feature", "bias"):
        if key not in head:
            lines.error("the header lacks %s" % key)
    K, solver, bias = head["nr_class"], head["solver_type"], head["bias"]
    nr_w = 1 if K == 2 and solver != "MCSVM_CS" else K
    rows = head["nr_feature"] + (1 if bias >= 0 else 0)
    # w in float64, then the model's float32 copy
    check_allocation(rows * nr_w * 12, "%s: w of %d features x %d classes" % (lines.name, rows, nr_w))
    w = np.empty((rows, nr_w), dtype=np.float64)
    r = 0
    # Rows are converted and checked a batch at a time (a 2M-feature model's
    # rows one by one took 75 s); a batch that fails is checked again row by
    # row, so that the error names the line as before.
    flat, batch = [], []
    for lineno, text in it:
        tokens = text.split()
        if not tokens:
            continue
        if r == rows or len(tokens) != nr_w:
            if batch:
                _w_rows(lines, flat, batch, nr_w)        # an earlier line's error first, as row by row
            if r == rows:
                lines.error("more than %d rows of w (nr_feature %d%s)"
                            % (rows, head["nr_feature"], " + bias" if bias >= 0 else ""))
            _floats(lines, tokens, "a row of w", nr_w, float32=True)     # says which count it found
        flat.extend(tokens)
        batch.append((lineno, tokens))
        r += 1
        if len(flat) >= _W_BATCH_VALUES:
            w[r - len(batch):r] = _w_rows(lines, flat, batch, nr_w)
            flat, batch = [], []
    if batch:
        w[r - len(batch):r] = _w_rows(lines, flat, batch, nr_w)
    if r != rows:
        lines.error("file ends after %d of %d rows of w" % (r, rows))
    sha = lines.finish()
    return LiblinearModel(path=lines.name, sha256=sha, solver_type=solver, labels=head["label"],
                          nr_feature=head["nr_feature"], bias=bias, w=w)


# Values of w converted at a time (as Python strings until then: a batch of
# rows of a 1,000-class model had held 8 M of them, 900 MB).
_W_BATCH_VALUES = 65536


def _w_rows(lines, flat, batch, nr_w):
    """Rows of w from their tokens, ``batch`` the (line number, tokens) of
    each: converted and checked at once, or, if any value fails, row by row
    for _floats' error at its line."""
    try:
        arr = np.array(flat, dtype=np.float64)
        good = bool(np.all(np.isfinite(arr))) and not np.any(beyond_float32(arr))
    except ValueError:
        good = False
    if not good:
        for lineno, tokens in batch:
            lines.lineno = lineno
            _floats(lines, tokens, "a row of w", nr_w, float32=True)
        raise AssertionError("a batch of w failed where none of its rows does")
    return arr.reshape(-1, nr_w)


def sniff_model_kind(source, name=None):
    """``'libsvm'`` or ``'liblinear'`` from the first non-blank line of a model
    file (``svm_type`` / ``solver_type``), else InputFormatError at that line."""
    lines = _Lines(source, name)
    try:
        for lineno, text in lines:
            tokens = text.split()
            if not tokens:
                continue
            if tokens[0] == "svm_type":
                return "libsvm"
            if tokens[0] == "solver_type":
                return "liblinear"
            lines.refuse_hsvm_file()
            lines.error("not a LIBSVM or LIBLINEAR model file (it starts with %r)" % tokens[0][:40])
        lines.empty("LIBSVM or LIBLINEAR")
    finally:
        lines.close()

