"""Small helpers every stage uses: thread counts, phase timings, class labels and
numpy buffers handed to the C library."""
