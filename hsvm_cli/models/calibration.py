"""Calibration files (``hsvm calibrate`` output, ``hsvm-calibration``
containers): the fitted probability parameters of the two-stage classifier
(proba/) and the accuracy-speed setting chosen for this model on this machine
(tune.py)."""
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelFormatError, ModelMismatchError, OptionError
from ..io.container import read_container, write_container
from .metadata import meta_dict, meta_digest

CALIB_KIND = "hsvm-calibration"
CALIB_VERSION = 1
# A setting a version-1 reader would misread (a decision DAG, the class-score
# first stage) is written as version 2: hsvm 0.1 refuses it instead of
# predicting with max-wins votes after the hash filter.
CALIB_VERSION_EXTENDED = 2
MODES = ("exact", "hash", "scores")
RULES = ("vote", "dag")


@dataclass(frozen=True)
class Setting:
    """How to predict: ``mode`` "exact" (every pair), "hash" (the hash filter
    at ``bits``, refining ``k`` classes, or with ``epsilon`` the classes whose
    first-stage probability exceeds it, at most ``k``) or "scores" (the
    class-score first stage keeping ``k`` classes; no bits).  ``rule``: how
    the exact classifiers decide -- "vote" (max-wins over every pair among
    the classes) or "dag" (a decision DAG: exact DAG, or DAG refine)."""

    mode: str
    bits: int = None
    k: int = None
    epsilon: float = None
    rule: str = "vote"

    def as_dict(self):
        """The setting as stored in a calibration file."""
        d = {"mode": self.mode, "bits": self.bits, "k": self.k, "epsilon": self.epsilon}
        if self.rule != "vote":
            d["rule"] = self.rule
        return d

    @property
    def extended(self):
        """Whether the setting needs a calibration file of version 2."""
        return self.rule != "vote" or self.mode == "scores"

    def describe(self):
        """The setting in a few words, as `calibrate` prints it."""
        dag = " + DAG" if self.rule == "dag" else ""
        if self.mode == "exact":
            return "exact DAG" if self.rule == "dag" else "exact"
        if self.mode == "scores":
            return "class scores, k=%d%s" % (self.k, dag)
        what = "k=%d" % self.k if self.epsilon is None else "p>%g (at most %d)" % (self.epsilon, self.k)
        return "hash %d bits, %s%s" % (self.bits, what, dag)

    @classmethod
    def from_dict(cls, d):
        """Validated; raises ValueError naming what is wrong."""
        if not isinstance(d, dict):
            raise ValueError("setting must be an object, not %s" % type(d).__name__)
        mode = d.get("mode")
        if mode not in MODES:
            raise ValueError("setting mode must be exact, hash or scores, not %r" % (mode,))

        def positive_int(key):
            v = d.get(key)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError("setting %s must be a positive integer or null, not %r" % (key, v))
            return v
        bits, k = positive_int("bits"), positive_int("k")
        eps = d.get("epsilon")
        if eps is not None and (isinstance(eps, bool) or not isinstance(eps, (int, float))
                                or not 0.0 <= eps < 1.0):
            raise ValueError("setting epsilon must be a number in [0, 1) or null, not %r" % (eps,))
        rule = d.get("rule", "vote")
        if rule not in RULES:
            raise ValueError("setting rule must be vote or dag, not %r" % (rule,))
        if mode == "hash" and (bits is None or bits % 64):
            raise ValueError("a hash setting needs bits, a multiple of 64")
        if mode == "scores" and (bits is not None or eps is not None or k is None):
            raise ValueError("a class-score setting has k and no bits or epsilon")
        if mode == "exact" and (bits, k, eps) != (None, None, None):
            raise ValueError("an exact setting has no bits, k or epsilon")
        return cls(mode, bits, k, None if eps is None else float(eps), rule)


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class Calibration:
    alphas: dict                    # bits -> first-stage temperature
    platt_A: np.ndarray             # float64 [P]
    platt_B: np.ndarray             # float64 [P]
    model_sha256: str
    hash_identity: dict             # seed, generator, bits and model digest of the hash model (or None)
    setting: Setting = None         # the setting `calibrate` chose
    grid: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    path: str = None
    # The two-stage probabilities' second-stage sharpness, fitted for one
    # filter setting: {"bits", "k", "epsilon", "sharpness"} (None: none fitted)
    two_stage: dict = None

    def __repr__(self):
        return "Calibration(%d pairs, first stage at bits %s, setting %s%s)" % (
            self.platt_A.shape[0], ", ".join(map(str, sorted(self.alphas))) or "none",
            self.setting, ", path=%r" % self.path if self.path else "")

    def second_stage_sharpness(self, bits, k, epsilon):
        """The factor on every refined pair's logit in the two-stage
        probabilities of the hash filter at ``bits`` keeping ``k`` classes
        (or those above ``epsilon``, at most k): the fitted one for that
        setting, else 1 (the pair sigmoids as they are)."""
        t = self._two_stage_of(bits, k, epsilon)
        return 1.0 if t is None else float(t["sharpness"])

    def kept_mass_shift(self, bits, k, epsilon):
        """The shift on the logit of the kept classes' first-stage mass in the
        two-stage probabilities of that same setting (absent in files made
        before it existed, and for every other setting: 0, the mass as it is)."""
        t = self._two_stage_of(bits, k, epsilon)
        return 0.0 if t is None else float(t.get("mass_shift", 0.0))

    def two_stage_filter(self):
        """The filter setting its two-stage probabilities were fitted for, in
        words ("the hash filter at 256 bits, k = 5"), or None when none was
        fitted: what `predict -C -H --proba` runs, said by calibrate's report
        and by predict when -H is missing."""
        t = self.two_stage
        if not t or "bits" not in t or "k" not in t:
            return None
        return "the hash filter at %d bits, k = %d" % (t["bits"], t["k"])

    def _two_stage_of(self, bits, k, epsilon):
        # the fitted two-stage parameters when they are this setting's
        t = self.two_stage
        if t and (t.get("bits"), t.get("k"), t.get("epsilon")) == (
                int(bits), int(k), None if epsilon is None else float(epsilon)):
            return t
        return None

    @property
    def from_libsvm(self):
        """Whether these are LIBSVM's sigmoids (``import-model
        --calibration``), whose probabilities should be svm-predict -b 1's."""
        return str(self.info.get("platt", "")).startswith("LIBSVM probA/probB")

    def alpha(self, bits):
        """The first-stage temperature fitted at ``bits``."""
        a = self.alphas.get(int(bits))
        if a is None:
            if not self.alphas:
                imported = self.from_libsvm
                raise OptionError("the calibration has no first-stage temperatures (%s): probabilities and "
                                  "--filter-threshold after the hash filter need one made with -H and the hash "
                                  "votes among its first stages%s"
                                  % ("it holds LIBSVM's sigmoids from import-model, for exact prediction" if imported
                                     else "it was made without -H, or with --first-stages scores only",
                                     " (hsvm calibrate -m MODEL -H HBM VALID)" if imported else ""))
            raise OptionError("the calibration has first-stage temperatures for %s bits, not %d"
                              % (", ".join(str(b) for b in sorted(self.alphas)), bits))
        return a

    def check(self, model, h=None):
        """Refuse a model (or hash model) other than the one this was fitted for."""
        if self.platt_A.shape != (model.n_pairs,) and model.content_sha256() == self.model_sha256:
            # the model it names, but not one sigmoid per pair: damage, not a mismatch
            raise ModelFormatError(self.path or "<calibration>", "platt_A and platt_B hold %d entries, the model it "
                                   "was fitted for has %d pairs" % (self.platt_A.shape[0], model.n_pairs))
        if self.platt_A.shape != (model.n_pairs,) or model.content_sha256() != self.model_sha256:
            # The identity comes from the model file's block digests, which W
            # is checked against only where it is used: a corrupt digest must
            # be reported as the model's fault, not as a mismatch.
            model.verify()
            raise ModelMismatchError("calibration %s was fitted for another model (fit one for this model: hsvm "
                                     "calibrate -m MODEL VALIDATION -o CAL)" % (self.path or "<calibration>"))
        if self.from_libsvm and "infinite_rho" not in self.info and 0 in (model.provenance or {}).get("nr_sv", []):
            # imported before the pairs of a class without support vectors
            # (rho = +-inf) got svm-predict's probabilities: its B values
            # would give them ~0.5 each, far from svm-predict's
            raise ModelMismatchError("calibration %s was imported by an older hsvm, whose probabilities for the pairs "
                                     "of a class without support vectors differ from svm-predict -b 1's: import it "
                                     "again (hsvm import-model MODEL_FILE -o MODEL --calibration %s)"
                                     % (self.path or "<calibration>", self.path or "CAL"))
        if h is not None and self.hash_identity and hash_identity(h) != self.hash_identity:
            raise ModelMismatchError("calibration %s was fitted with another hash model (give that one with -H, or "
                                     "calibrate again with this one)" % (self.path or "<calibration>"))


def hash_identity(h):
    """What a calibration records of the hash model it was fitted with: a
    non-Gaussian projection adds its kind (calibrations of Gaussian hash
    models stay as hsvm 0.1 wrote them)."""
    ident = {"seed": int(h.seed), "generator": h.generator, "bits": int(h.bits), "model_sha256": h.model_sha256}
    kind = getattr(h, "projection_kind", "gaussian")
    if kind != "gaussian":
        ident["projection_kind"] = kind
    return ident


def save_calibration(cal, path):
    """Write ``cal`` as an ``hsvm-calibration`` container (atomically)."""
    if not isinstance(cal, Calibration):
        raise TypeError("save_calibration takes a Calibration (from calibrate or load_calibration), not %s"
                        % type(cal).__name__)
    meta = {
        "alphas": {str(b): float(a) for b, a in cal.alphas.items()},
        "model_sha256": cal.model_sha256,
        "hash_identity": cal.hash_identity,
        "setting": cal.setting.as_dict() if cal.setting is not None else {},
        "grid": cal.grid,
        "info": cal.info,
    }
    if cal.two_stage:
        meta["two_stage"] = cal.two_stage
    write_container(path, {"platt_A": np.asarray(cal.platt_A, np.float64),
                           "platt_B": np.asarray(cal.platt_B, np.float64)},
                    kind=CALIB_KIND, meta=meta,
                    version=CALIB_VERSION_EXTENDED if cal.setting is not None and cal.setting.extended
                    else CALIB_VERSION)


def load_calibration(path):
    """Read and validate an ``hsvm-calibration`` file."""
    c = read_container(path, kind=CALIB_KIND, versions={CALIB_VERSION, CALIB_VERSION_EXTENDED})
    A, B = c.arrays.get("platt_A"), c.arrays.get("platt_B")
    if A is None or B is None or A.shape != B.shape or A.ndim != 1 or A.dtype != np.float64 \
            or B.dtype != np.float64:
        raise ModelFormatError(c.path, "platt_A and platt_B must be float64 vectors of one length")
    raw_alphas = meta_dict(c, "alphas")
    try:
        alphas = {int(b): float(a) for b, a in raw_alphas.items()}
    except (TypeError, ValueError, OverflowError):
        raise ModelFormatError(c.path, "alphas must map bit counts to temperatures") from None
    if any(not np.isfinite(a) or a <= 0 for a in alphas.values()) or any(b < 64 or b % 64 for b in alphas):
        raise ModelFormatError(c.path, "temperatures must be positive, at multiples of 64 bits")
    model_sha = meta_digest(c, "model_sha256")
    identity = c.meta.get("hash_identity")
    if identity is not None and not isinstance(identity, dict):
        raise ModelFormatError(c.path, "hash_identity must be an object")
    grid, info = c.meta.get("grid") or [], c.meta.get("info") or {}
    if not isinstance(grid, list) or not isinstance(info, dict):
        raise ModelFormatError(c.path, "grid must be a list and info an object")
    raw_setting = c.meta.get("setting")
    if raw_setting is not None and not isinstance(raw_setting, dict):
        # {} is a calibration without a setting; [], 0 or "" are damage
        raise ModelFormatError(c.path, "setting must be an object, not %s" % type(raw_setting).__name__)
    try:
        setting = Setting.from_dict(raw_setting) if raw_setting else None
    except ValueError as exc:
        raise ModelFormatError(c.path, str(exc)) from None
    two_stage = c.meta.get("two_stage")
    if two_stage is not None:
        try:
            if not isinstance(two_stage, dict) or any(isinstance(two_stage[key], bool) or not isinstance(
                    two_stage[key], int) or two_stage[key] < 1 for key in ("bits", "k")):
                raise ValueError
            two_stage = {"bits": two_stage["bits"], "k": two_stage["k"],
                         "epsilon": None if two_stage.get("epsilon") is None else float(two_stage["epsilon"]),
                         "sharpness": float(two_stage["sharpness"])}
        except (TypeError, KeyError, ValueError):
            raise ModelFormatError(c.path, "two_stage must hold bits and k (positive integers), epsilon and "
                                   "sharpness") from None
        shift = c.meta["two_stage"].get("mass_shift")
        if shift is not None:
            if not isinstance(shift, (int, float)) or isinstance(shift, bool):
                raise ModelFormatError(c.path, "the two-stage mass_shift must be a number, not %r" % (shift,))
            two_stage["mass_shift"] = float(shift)
        if not (np.isfinite(two_stage["sharpness"]) and two_stage["sharpness"] > 0):
            raise ModelFormatError(c.path, "the two-stage sharpness must be positive")
        if not np.isfinite(two_stage.get("mass_shift", 0.0)):
            raise ModelFormatError(c.path, "the two-stage mass shift must be finite")
    return Calibration(alphas=alphas, platt_A=np.array(A), platt_B=np.array(B), model_sha256=model_sha,
                       hash_identity=identity, setting=setting, grid=grid, info=info, path=c.path,
                       two_stage=two_stage)
