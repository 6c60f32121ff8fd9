// reduce/histogram.cu — histogram kernels (crate `reduce`, module `histogram`).
