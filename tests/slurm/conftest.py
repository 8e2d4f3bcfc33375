"""One private single-node Slurm for the session (tests/slurm/slurm.py):
started once, stopped and removed at the end."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm import local_slurm  # noqa: E402


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm-root")
    with local_slurm(root=root) as c:
        yield c
