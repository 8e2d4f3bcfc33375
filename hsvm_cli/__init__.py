"""hsvm: apply very many one-vs-one linear SVMs cheaply with hashing."""
__version__ = "0.1.0"
