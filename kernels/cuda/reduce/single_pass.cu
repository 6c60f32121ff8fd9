// reduce/single_pass.cu
