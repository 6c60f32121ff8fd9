// reduce/reduce.cuh
