"""The hashing maths: the seeded Gaussian generator, sign random projections
with machine-independent signs, the classifier angles θ and range-query
thresholds ρ, and the Hamming kernels that answer the range queries."""
