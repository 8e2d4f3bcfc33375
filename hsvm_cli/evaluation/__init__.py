"""Measuring predictions: label metrics, top-k recall, probability quality,
agreement with a reference; the report ``hsvm eval`` prints, as text or JSON;
plots."""
