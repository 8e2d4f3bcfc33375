"""Probabilities of the two-stage classifier: the estimators (softmax with a
fitted temperature, Platt sigmoids, pairwise coupling) and how each stage's
estimate is formed from a model's outputs."""
