"""Prediction: exact one-vs-one scoring, the hash filter, the exact refine
among the kept classes, ranking rules, and the :class:`Predictor` that puts
them together."""
