"""Training one-vs-one models: LIBLINEAR over every class pair, and the
normalisation and provenance around it."""
