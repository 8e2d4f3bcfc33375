"""Property tests of the four file loaders: whatever bytes they are given, they
either return what was written or raise one of hsvm's own errors (a one-line
message and an exit status) -- never another exception, never a silently
different model.  Bounded to a few seconds; `make fuzz` runs the atheris
harness of the same property for longer."""
import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsvm_cli.errors import HsvmError
from hsvm_cli.models.calibration import load_calibration
from hsvm_cli.models.codes import read_codes
from hsvm_cli.models.hashed import load_hash_model
from hsvm_cli.models.ovo import load_model

from conftest import REPO

FIX = REPO / "tests" / "fixtures" / "release-0.1"
LOADERS = {"digits.hsvm": load_model, "digits.hbm": load_hash_model, "test.codes": read_codes,
           "digits.cal": load_calibration}
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The release fixtures written again by this hsvm (with checksums)."""
    from hsvm_cli.io.container import read_container, write_container
    d = tmp_path_factory.mktemp("fresh")
    kinds = {"digits.hsvm": "hsvm-model", "digits.hbm": "hsvm-hash-model", "test.codes": "hsvm-codes",
             "digits.cal": "hsvm-calibration"}
    for name, kind in kinds.items():
        c = read_container(FIX / name, kind=kind, versions={1})
        write_container(d / name, {k: np.array(v) for k, v in c.arrays.items()}, kind=kind, version=1, meta=c.meta)
    return d


def _load(loader, path):
    """The loaded object, or None when refused with an hsvm error."""
    try:
        obj = loader(path)
        if hasattr(obj, "verify"):
            obj.verify()          # the lazily checked weights too
        return obj
    except HsvmError as exc:
        assert "\n" not in str(exc)
        return None


def _same(a, b):
    for key in ("W", "b", "classes", "codes", "theta", "labels", "platt_A", "platt_B"):
        if hasattr(a, key):
            assert np.array_equal(np.asarray(getattr(a, key)), np.asarray(getattr(b, key)), equal_nan=False), key


@pytest.mark.parametrize("name", sorted(LOADERS))
@FUZZ
@given(data=st.data())
def test_byte_edits_are_refused_or_change_nothing(tmp_path, fresh, name, data):
    good = (fresh / name).read_bytes()
    reference = LOADERS[name](fresh / name)
    raw = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw)))]
    path = tmp_path / name
    path.write_bytes(bytes(raw))
    got = _load(LOADERS[name], path)
    if got is not None:
        _same(got, reference)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3),
                           max_leaves=6)


@pytest.mark.parametrize("name", sorted(LOADERS))
@FUZZ
@given(data=st.data())
def test_forged_metadata_and_array_descriptions_give_hsvm_errors_only(tmp_path, fresh, name, data):
    good = (fresh / name).read_bytes()
    (n,) = struct.unpack("<Q", good[:8])
    header = json.loads(good[8:8 + n])
    target = data.draw(st.sampled_from(sorted(header)))
    if target == "__metadata__":
        meta = json.loads(header["__metadata__"]["hsvm"])
        key = data.draw(st.sampled_from(sorted(meta) + ["new"]))
        meta[key] = data.draw(JSON_VALUES)
        header["__metadata__"]["hsvm"] = json.dumps(meta)
        if data.draw(st.booleans()):
            header["__metadata__"].pop("checksums", None)   # as a file from before checksums
    else:
        field = data.draw(st.sampled_from(["dtype", "shape", "data_offsets"]))
        header[target][field] = data.draw(JSON_VALUES)
    text = json.dumps(header).encode()
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(text)) + text + good[8 + n:])
    _load(LOADERS[name], path)
