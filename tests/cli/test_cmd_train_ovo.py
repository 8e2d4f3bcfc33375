import numpy as np

from hsvm_cli.models.ovo import load_model

from conftest import DIGITS_TRAIN, run, write_text


def test_training_on_malformed_input_writes_no_model(tmp_path):
    src = write_text(tmp_path / "bad.svm", "1 1:1\n2 1:1 1:2\n")
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", src, "-o", str(out)], exit_code=65)
    assert not out.exists()
    assert r.stderr.startswith("hsvm: %s:2: " % src)


def test_seed_makes_training_byte_identical_across_runs_and_jobs(tmp_path):
    outs = []
    for i, jobs in enumerate(["1", "1", "2"]):
        out = tmp_path / ("m%d.hsvm" % i)
        run(["train-ovo", DIGITS_TRAIN, "-o", str(out), "--seed", "3", "--per-class", "40",
             "--jobs", jobs, "-q"])
        outs.append(load_model(out))
    for m in outs[1:]:
        assert np.array_equal(m.W, outs[0].W) and np.array_equal(m.b, outs[0].b)
        assert m.content_sha256() == outs[0].content_sha256()


def test_model_records_provenance_and_parameters(toy_model):
    train, model = toy_model
    m = load_model(model)
    assert m.provenance["train_input"] == train
    assert len(m.provenance["train_sha256"]) == 64
    assert m.provenance["hsvm_version"]
    assert m.params["normalize"] == "l2" and m.normalize == "l2"


def test_training_output_file_is_byte_identical_across_runs_and_jobs(tmp_path):
    out = tmp_path / "m.hsvm"
    blobs = []
    for jobs in ["1", "2", "1"]:
        run(["train-ovo", DIGITS_TRAIN, "-o", str(out), "--seed", "5", "--bags", "3", "--jobs", jobs, "-q"])
        blobs.append(out.read_bytes())
    assert blobs[0] == blobs[1] == blobs[2]


def test_recorded_command_leaves_out_jobs_and_quiet():
    from hsvm_cli.models.provenance import recorded_command
    assert recorded_command(["/x/hsvm", "train-ovo", "a.svm", "-j", "4", "--quiet", "--jobs=2", "-o", "m"]) == \
        "hsvm train-ovo a.svm -o m"


def test_training_on_one_class_exits_65_with_a_clear_message(tmp_path):
    src = write_text(tmp_path / "one.svm", "3 1:1\n3 2:1\n")
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", src, "-o", str(out)], exit_code=65)
    assert not out.exists()
    assert r.stderr == "hsvm: %s: training needs samples of at least two classes, found 1\n" % src


def test_recorded_command_leaves_out_every_spelling_of_the_options_that_do_not_change_the_model():
    from hsvm_cli.models.provenance import recorded_command
    argv = ["/x/hsvm", "train-ovo", "-j2", "a.svm", "--jobs", "3", "-q", "--pairs", "1/4", "--pairs=2/4",
            "--dask", "local:2", "--dask=tcp://h:8786", "-c", "0.5", "-o", "m"]
    assert recorded_command(argv) == "hsvm train-ovo a.svm -c 0.5 -o m"
