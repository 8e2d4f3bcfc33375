"""The hashing maths: the seeded Gaussian generator, sign random projections
with machine-independent signs, the classifier angles θ and range-query
thresholds ρ, and the Hamming kernels that answer the range queries."""

#: The longest code any hsvm file holds (hash models, kernel hashes, codes):
#: longer is no hash filter any more, and would be a D x d projection of
#: gigabytes for ordinary d.  Defined here, free of imports, for the
#: command-line checks that refuse a longer --bits before any work.
MAX_CODE_BITS = 1 << 20
