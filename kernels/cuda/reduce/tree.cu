// reduce/tree.cu
