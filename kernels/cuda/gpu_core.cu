// gpu_core.cu — gpu-core's own kernels.
//
// fill: writes one value into every element of a buffer. Used to poison
// outputs before a test or benchmark run (so an element the algorithm failed
// to write is visible) and by DeviceBuffer::filled.
//   work O(n), steps O(1), bytes moved: n·sizeof(T) written.
//   Geometry: 1-D, one element per thread, grid from gpu_core::launch::Geometry1d
//   (the y dimension extends the grid past 2^31-1 blocks).
template <typename T>
__device__ __forceinline__ void fill_impl(T* out, u64 n, T value) {
    u64 i = global_thread_index();
    if (i < n) out[i] = value;
}
