"""The files hsvm writes and the objects they hold: the exact one-vs-one model,
the hash model (which hands out its sample encoder and its voter), sample
codes, and calibrations."""
