"""Running on a cluster: what a job array or a distributed engine needs beyond
the single-process library.  Sharded input is io/shard.py, pair blocks and the
merge train/pair_blocks.py and train/merge.py; here the Dask backend
(:mod:`hsvm_cli.cluster.dask_backend`, optional extra ``hsvm[dask]``)."""
