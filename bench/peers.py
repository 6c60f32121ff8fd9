#!/usr/bin/env python3
"""Peer benchmarks for parprims: the same workloads through PyTorch and CuPy.

Times, on one CUDA GPU, what a user of PyTorch (and CuPy, when importable)
would call for each parprims primitive, with the methodology of parprims'
own harness (parprims_testkit::bench), and writes the parprims results CSV format so that
`parprims bench ... --compare FILE` can merge the rows.

    python3 bench/peers.py                       # everything, defaults below
    python3 bench/peers.py --only scan,compact --sizes 2^28,123123123 --reps 20
    python3 bench/peers.py --only reduce,histogram
    python3 bench/peers.py --only sort,segmented,spmv --reps 10
    python3 bench/peers.py --out $OUT/peers.csv
    python3 bench/peers.py --self-test           # CSV/bytes/parsing checks, no torch needed
    python3 bench/peers.py latency --sizes 1024,65536,1048576 --csv $OUT/latency-peers.csv

Method (the same as parprims_testkit::bench::time_device)
-------------------------------------------------
* Copy ceiling first, in the same process: `dst.copy_(src)` of a 1 GiB
  tensor (a device-to-device cudaMemcpyAsync), bytes counted read + write
  (2 GiB per copy), median of --reps copies after --warmup untimed ones.
* Every case: fresh random inputs drawn on the GPU (a new seed per input
  set, drawn from one run seed that is printed and can be replayed with
  --seed; never zeros). When one input set (inputs + outputs) is smaller
  than 4x the L2 cache, runs rotate among enough sets that consecutive runs
  do not find their operands in L2; at the default sizes one set suffices.
* Before timing, every peer is checked against a CPU reference (float64 or
  int64) at small sizes (1, non-powers of two); a peer that fails is not
  timed and the script exits 1 at the end.
* Timing: --warmup untimed runs (module load, cuDNN autotuning, allocator
  warm-up), then --reps runs, each bracketed by two CUDA events recorded on
  the stream the peer runs on; the median is reported. Before each run an
  untimed `prepare` step poisons preallocated outputs (a NaN bit pattern) so
  the last timed run must write every element.
* After timing, the output of the last timed run is checked at full size
  (integers exactly, floats against float64 by ||out - ref|| / ||ref||).
* GB/s = declared bytes / median time / 1e9; the declared bytes are the
  fewest bytes the operation must move (each input read once, each output
  written once), the same formulas parprims declares (see *_bytes below).

What is timed (primitive / algorithm / type / shape)
----------------------------------------------------
scan       "torch.cumsum"      torch.cumsum(x, 0, dtype=x.dtype, out=y)
           Inclusive sum. dtype is passed on purpose: torch.cumsum on int32
           returns int64 without it (12n bytes instead of 8n). Output is
           preallocated (out=). u64 is timed only if this torch has a CUDA
           uint64 cumsum (otherwise a printed note says it was skipped).
           "cupy.cumsum(cub)"  cupy.cumsum(xc, dtype=xc.dtype, out=yc) with
           CuPy's CUB routine accelerator on. The CuPy sources we read (v13)
           implement it as a copy of x into y followed by CUB's in-place
           DeviceScan::InclusiveSum, so it moves 16n bytes while 8n are
           declared: the user-visible cost.
           "cupy.cub_scan(in-place)"  cupy.cuda.cub.cub_scan(yc, CUMSUM): the
           CUB device scan alone, in place on y; the untimed prepare step
           copies x into y (memcpy) before each run. This is CUB's own
           throughput. Both CuPy peers are optional: if CuPy is missing or
           cannot run them, a note says so and the exit status is unaffected.
           types i32 f32 i64 u64; bytes 2*n*size (8n for 4-byte types);
           shape "268435456" (the element count).
compact    "torch.masked_select"  torch.masked_select(x, mask): x i32, mask a
           bool tensor made from random bytes that are non-zero with
           probability 0.5 (values 1..255, as parprims' flags); the bool
           conversion is untimed. Bytes 4n + n + 4*kept (the same as
           parprims' select_flagged with byte flags).
           "torch.x[x>t]"  x[x > t] with t = 0 on x uniform in [-2^30, 2^30)
           (about half kept): a comparison predicate, no flags array.
           Bytes 4n + 4*kept. Both synchronise with the host inside the timed
           region (torch must learn the output length): that is their cost.
           shape "268435456".
transpose  "torch.t().contiguous()"  y = x.t().contiguous(), x f32 R x C
           row-major; bytes 8*R*C; shape "RxC" of the input ("16384x16384").
matvec     "torch.mv(cuBLAS)"  torch.mv(A, x, out=y), A f32 R x C row-major:
           shape "RxC". Transposed product A^T x on the same row-major A:
           torch.mv(A.t(), x, out=y) (cuBLAS gemv with the transpose flag, no
           copy): same algorithm name, shape "RxC/T". TF32 off. Bytes
           4*R*C + 4*(R + C) for both.
reduce     "torch.sum"  torch.sum(x): the whole tensor to a 0-d tensor, which
           torch allocates in the call. On int32 input torch returns int64
           (and accumulates in int64): that is the peer as a user calls it.
           "torch.sum(dtype=x.dtype)"  torch.sum(x, dtype=x.dtype) on integer
           input: the sum in the input's own type (wrapping), as parprims
           returns it; not timed for f32 (the same call as torch.sum).
           "cupy.sum(cub)"  cupy.sum(xc, dtype=xc.dtype) with CuPy's CUB
           routine accelerator on: CUB's DeviceReduce::Sum. dtype is passed
           on purpose: without it CuPy promotes int32 to int64 and does not
           take the CUB path (the CuPy sources we read, v13, only hand an
           un-promoted sum to CUB); a printed note says when CUB cannot take
           the type. Optional, as for scan.
           "torch.argmax"  torch.argmax(x) on f32 x uniform in [-1, 1)
           (many ties at 2^28: torch.rand draws multiples of 2^-24; the
           check wants the first index of the maximum, as torch documents).
           sum types i32 f32 (i64 too when --types names it), argmax f32;
           inputs: i32 uniform in [-1000, 1000), f32 whole numbers in
           [-8, 8] (every partial sum exact in any order; the check still
           allows eps * ceil(log2 n) * sum|x|, a pairwise-summation bound);
           bytes n*size (the input read once; the one-element output is not
           counted); shape "268435456". Default sizes 2^16, 2^20, 2^24, 2^28.
histogram  256 even bins [0, 256), values uniform in [0, 256), shape
           "N/bins256"; all values equal to one random v in [0, 256), shape
           "N/bins256-onebin"; 65 536 bins, values uniform in [0, 65536),
           shape "N/bins65536". Bytes: the input read once (4n for i32 and
           f32, n for u8; the counts are not counted).
           "torch.bincount"  torch.bincount(x, minlength=bins) on i32 (and on
           u8 for 256 bins): int64 counts allocated in the call. torch reads
           the input for its minimum and maximum first (the output length
           depends on them) and synchronises with the host: its cost.
           "torch.histc"  torch.histc(xf, bins, 0, bins) on f32 input: xf is
           the i32 values converted to float32 outside the timed region
           (type f32 in the CSV): histc's own throughput. CUDA histc does not
           take integer tensors.
           "torch.histc(x.float())"  torch.histc(x.float(), bins, 0, bins) on
           the i32 input, the conversion inside the timed region (type i32):
           what a user with i32 data pays (4n read + 4n written + 4n read
           again, 4n declared). Both histc rows are written; histc counts in
           float32 and is not run on the one-bin input (2^28 counts in one
           float32 bin are past 2^24, where adding 1 is lost).
           Checked exactly against a scatter_add of ones in int64 (an
           independent route), and the counts must add up to n.
sort       Keys ascending; cases (SORT_CASES): u32, i32 and f32 keys at 2^28
           ("268435456"; uniform over the type's bits, f32 normal), u64 and
           i64 at 2^27, i32 keys drawn from 65 536 distinct values
           ("/distinct65536") and already sorted ("/sorted") at 2^28, u32
           and i32 at 2^16 (one small sort: launch and host overhead
           dominate), argsort of i32 at 2^28 ("/argsort").
           "cupy.sort"  cupy.sort(xc): CuPy copies x and sorts the copy in
           place with thrust::sort, which hands primitive keys to CUB's
           radix sort; the copy is part of the call. "cupy.ndarray.sort
           (in-place)"  yc.sort() after an untimed yc = x (memcpy): the
           sort alone. "cupy.argsort"  cupy.argsort(xc): int64 indices,
           thrust's stable sort by key on a copy of the keys. "torch.sort"
           torch.sort(x): values and int64 indices, always (the only call
           torch has; stable=False, its default); on "/argsort" the same
           call, checked as values + indices. torch has u32/u64 sorts in
           some versions only: where torch.sort refuses the dtype a printed
           note says so (not a failure). Bytes: what an LSD radix sort with
           8-bit digits moves, one read of the keys for the upsweep (every
           digit's histogram at once) plus one read and one write of keys
           and values per digit pass: n*k + 2*passes*n*(k + v), passes =
           8k/8 (k key bytes, v value bytes: 4 for argsort, as parprims'
           u32 indices): 36n for 32-bit keys, 136n for 64-bit, 68n for
           argsort; the same for every peer whatever it writes (torch's
           indices are not counted), so the fraction of the ceiling
           compares times. Keys per second (n / time) are printed in the
           check column ("G/s"). Checked: ascending in the type's order
           (u32 unsigned, u64 unsigned, f32 by value), a permutation of the
           input (an order-independent hash of the keys' bits: the
           wrapping sum of mix64 of each), at small sizes equal to the
           CPU's sort; indices: a permutation, x[indices] equal to the
           values; whether equal keys kept their order is printed
           ("stable"/"not stable"), not required.
           "torch.topk"  torch.topk(x, k) on f32 normal x at 2^28, k = 16
           and 1024 ("/top16", "/top1024"): the k largest, largest first,
           with int64 indices; checked exactly (every key above the k-th
           value among them, in order). Bytes 4n + 8k (keys read once, k
           keys and k 4-byte indices written).
segmented  "torch.segment_reduce(lengths)"  torch.segment_reduce(x, "sum",
           lengths=lengths) on 2^28 f32 uniform in [-1, 1), segment
           lengths uniform in [1, 1999] (mean 1000; int64), shape
           "268435456/seg1000", written as the Rust segreduce lab writes its
           rows (primitive "segreduce"); "(offsets)" the same by offsets (segments +
           1 int64, from 0); "(offsets,unsafe)" with unsafe=True (no
           validation pass and no host synchronisation). Checked against
           differences of float64 prefix sums at the offsets. "cupy.add.
           reduceat"  cupy.add.reduceat(xc, offsets[:-1]) where this CuPy
           has it (CuPy has no public CUB segmented reduce with variable
           segments); the CuPy sources we read (v13) take differences of a
           float32 cumsum at the offsets (several passes; rounding that
           grows with n), so it is checked to 1e-2 relative error, the
           others to 1e-4. Bytes 4n + 8*segments.
           "torch.unique_consecutive"  torch.unique_consecutive(x,
           return_counts=True) on 2^28 sorted i32 in runs of 1 to 31
           items (uniform, mean 16; each run 1..3 above the one before),
           the input of the Rust runs lab, written as its rows are:
           primitive "runs", shape "268435456"; checked against the run
           starts; bytes 4n + 8*runs. It synchronises with the host (output
           length).
           "torch.repeat_interleave"  torch.repeat_interleave(values,
           counts): 2^26 i32 values, i32 counts uniform in [0, 8] (mean 4,
           zeros included), about 2^28 outputs; shape "67108864/mean4" (the
           input count); "(output_size)" the same with output_size= the
           total, so torch need not synchronise. Checked against a
           searchsorted of every output position in the counts' prefix
           sums. Bytes 4*n_in + 4*n_counts + 4*n_out. --sizes sets the
           values (segment_reduce, unique_consecutive) and the output
           (repeat_interleave: n/4 inputs).
spmv       y = A x, CSR, f32 values, int32 row offsets and column indices,
           rows = cols = --spmv-rows (2^22): "/uniform32" (32 non-zeros per
           row) and "/pareto1.5" (row lengths Pareto, alpha 1.5, mean ~32),
           shape "4194304x4194304/uniform32". The matrices and x are the
           Rust lab's (parprims_lab::prims::spmv, docs/spmv.md): the
           generator's definition is the scalar code under "The SpMV
           benchmark matrices" below, the GPU builds the same (spmv_matrix)
           and is checked against it on sampled rows (the first, the last,
           the longest and 32 random ones) before any peer runs.
           "cupyx.csr@x(cuSPARSE)"  cupyx.scipy.sparse.csr_matrix((values,
           cols, offsets)) @ xc: cuSPARSE's SpMV; "torch.sparse_csr@x"
           torch.sparse_csr_tensor(offsets, cols, values) @ x (cuSPARSE
           too). Matrix construction is untimed; y is allocated in the call.
           Checked against float64 products summed by row (index_add_).
           Bytes 8*nnz + 4*(rows+1) + 4*rows + 4*cols.
conv       "F.conv2d(cuDNN)"  torch.nn.functional.conv2d on a (1,1,H,W) f32
           input with a (1,1,K,K) filter, padding 0 ("valid", cross-
           correlation), cudnn.benchmark = True, cudnn.allow_tf32 = False: a
           fair float32 comparison. "F.conv2d(cuDNN+TF32)": the same with
           allow_tf32 = True (PyTorch's default), for reference. Bytes
           4*H*W + 4*(H-K+1)*(W-K+1); shape "HxW/kK" ("8192x8192/k3").

CSV: parprims_testkit::bench::CSV_HEADER, numbers formatted as Record::to_csv (ms 6
decimals, GB/s 2, ceiling 2, fraction 4); text fields quoted when they hold a
comma, a quote or a newline. Device field: "<torch.cuda.get_device_name()>,
sm_XY" (quoted, since it holds a comma). Failed or
skipped cases are not written to the CSV (they are printed).

Exit status: 0 all good; 1 a peer failed its check (the others still ran);
2 no usable CUDA device or no torch.

Latency mode (`peers.py latency`)
---------------------------------
The peers of examples/latency.rs, with its three numbers per row, for small
inputs (--sizes, default 1024,65536,1048576), in steady state: inputs and
preallocated outputs made once per row, --warmup untimed calls (default 20)
before each phase, the median of --reps (default 200):

* device_us_one: CUDA events around one call, the stream idle (synchronised)
  when the start event is recorded, so Python's and the library's host work
  inside the call is seen too;
* device_us_back_to_back: events around --calls calls (default 100),
  divided by the count;
* host_us: time.perf_counter() before the call to after the stream's
  synchronize() returns: call to result ready, Python included.

Rows (primitive, the call): "torch.sum" torch.sum(x) on int32 (an int64
0-d output allocated in the call); "cupy.sum(cub)" cupy.sum(x,
dtype=x.dtype) on int32 with CUB on; "torch.cumsum" torch.cumsum(x, 0,
dtype=torch.int32, out=y) on int32; "torch.masked_select"
torch.masked_select(x, mask), int32 x, a bool mask from random byte flags
(about half kept), the output allocated by torch in the call, which
synchronises with the host to learn its length; "torch.x[x>t]" x[x > 0];
"torch.Tensor.copy_" y.copy_(x) of n int32 (the floor); "torch.sort"
torch.sort(x) of n int32 (values and int64 indices allocated in the call);
"cupy.sort" cupy.sort(x) of n int32 (a sorted copy); "cupy.cumsum(cub)"
cupy.cumsum(x, dtype=x.dtype, out=y) on int32 CuPy arrays with the CUB
routine accelerator on. Outputs are poisoned before each phase and checked
after it. A peer whose package (torch, cupy) is missing or cannot run is
skipped with a note. CSV (--csv, default $OUT/latency-peers.csv or
./latency-peers.csv): primitive,n,device_us_one,device_us_back_to_back,
host_us,device, microseconds with 3 decimals, the same columns as
examples/latency.rs writes. Exit status: 0 all good, 1 a check failed, 2
neither torch nor CuPy could use a CUDA device.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import math
import os
import random
import struct
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional

# ---------------------------------------------------------------------------
# CSV and arithmetic shared with parprims_testkit::bench (pure Python, no torch)
# ---------------------------------------------------------------------------

CSV_HEADER = (
    "primitive,algorithm,type,shape,ms_median,gbps,ceiling_gbps,"
    "fraction_of_ceiling,device"
)

PRIMITIVES = ("scan", "compact", "transpose", "matvec", "conv", "reduce", "histogram", "sort",
              "segmented", "spmv")
SCAN_TYPES = ("i32", "f32", "i64", "u64")
# Key types the sort section times (u32 only there).
SORT_KEY_TYPES = ("u32", "i32", "f32", "u64", "i64")
# Sums the reduce section times: i32 and f32 by default, i64 when --types names it.
REDUCE_TYPES = ("i32", "f32", "i64")
REDUCE_DEFAULT_TYPES = ["i32", "f32"]
# Element counts: scan, compact and histogram at the headline size; the
# reduce section from L2-resident to the headline (small sums are launch-bound).
DEFAULT_SIZES = [1 << 28]
REDUCE_SIZES = [1 << 16, 1 << 20, 1 << 24, 1 << 28]
# Histogram cases: (element type, bins, all in one bin).
HISTOGRAM_CASES = (("i32", 256, False), ("f32", 256, False), ("u8", 256, False),
                   ("i32", 256, True), ("i32", 65536, False), ("f32", 65536, False))
# Element sizes in bytes, by parprims type name.
ELEMENT_BYTES = {"u8": 1, "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}


def csv_field(text: str) -> str:
    """Quotes a text field the way parprims_testkit::bench's csv_field does."""
    if any(c in text for c in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def split_csv(line: str) -> list[str]:
    """Splits one CSV line the way parprims_testkit::bench's split_csv does."""
    fields, field, quoted, i = [], [], False, 0
    while i < len(line):
        c = line[i]
        if c == '"' and quoted and i + 1 < len(line) and line[i + 1] == '"':
            field.append('"')
            i += 1
        elif c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            fields.append("".join(field))
            field = []
        else:
            field.append(c)
        i += 1
    fields.append("".join(field))
    return fields


@dataclass
class Record:
    """One measured result: a row of the CSV (parprims_testkit::bench::Record)."""

    primitive: str
    algorithm: str
    element_type: str
    shape: str
    ms_median: float
    gbps: float
    ceiling_gbps: float
    device: str

    def fraction_of_ceiling(self) -> float:
        return self.gbps / self.ceiling_gbps if self.ceiling_gbps > 0 else 0.0

    def to_csv(self) -> str:
        return ",".join(
            [
                csv_field(self.primitive),
                csv_field(self.algorithm),
                csv_field(self.element_type),
                csv_field(self.shape),
                f"{self.ms_median:.6f}",
                f"{self.gbps:.2f}",
                f"{self.ceiling_gbps:.2f}",
                f"{self.fraction_of_ceiling():.4f}",
                csv_field(self.device),
            ]
        )


def write_csv(path: str, records: list[Record]) -> None:
    """Writes the header and one line per record (replacing the file)."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write(CSV_HEADER + "\n")
        for record in records:
            file.write(record.to_csv() + "\n")


# The latency table's CSV (examples/latency.rs writes the same columns).
LATENCY_COLUMNS = "primitive,n,device_us_one,device_us_back_to_back,host_us,device"
LATENCY_SIZES = [1 << 10, 1 << 16, 1 << 20]


@dataclass
class LatencyRow:
    """One row of the latency table, times in microseconds (medians)."""

    primitive: str
    n: int
    device_us_one: float
    device_us_back_to_back: float
    host_us: float
    device: str

    def to_csv(self) -> str:
        return ",".join(
            [
                csv_field(self.primitive),
                str(self.n),
                f"{self.device_us_one:.3f}",
                f"{self.device_us_back_to_back:.3f}",
                f"{self.host_us:.3f}",
                csv_field(self.device),
            ]
        )

    def table_cells(self) -> list[str]:
        # The shape column of examples/latency.rs's table: n for 1-D calls.
        return [f"`{self.primitive}`", str(self.n), str(self.n), f"{self.device_us_one:.2f}",
                f"{self.device_us_back_to_back:.2f}", f"{self.host_us:.2f}"]


def write_latency_csv(path: str, rows: list[LatencyRow]) -> None:
    """Writes LATENCY_COLUMNS and one line per row (replacing the file)."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write(LATENCY_COLUMNS + "\n")
        for row in rows:
            file.write(row.to_csv() + "\n")


def latency_markdown(rows: list[LatencyRow]) -> str:
    """The rows as the Markdown table examples/latency.rs prints (µs)."""
    lines = ["| primitive | n | shape | device µs, one call | device µs, back to back | host µs |",
             "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row.table_cells()) + " |" for row in rows]
    return "\n".join(lines)


def median(samples: list[float]) -> float:
    """Median as parprims_testkit::bench's Timing::from_samples computes it."""
    if not samples:
        raise ValueError("at least one timed run is needed")
    ordered = sorted(samples)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return 0.5 * (ordered[mid - 1] + ordered[mid])


def gbps(bytes_moved: float, ms: float) -> float:
    """10^9 bytes per second for `bytes_moved` in `ms` milliseconds."""
    return bytes_moved / (ms * 1e-3) / 1e9 if ms > 0 else 0.0


def items_per_second(items: int, ms: float) -> float:
    """Keys (or values) per second for `items` in `ms` milliseconds."""
    return items / (ms * 1e-3) if ms > 0 else 0.0


# Declared bytes: each input read once, each output written once.


def scan_bytes(n: int, element_bytes: int) -> int:
    """Inclusive scan: read n elements, write n elements."""
    return 2 * n * element_bytes


def compact_flags_bytes(n: int, kept: float, element_bytes: int = 4) -> float:
    """Selection by byte flags: n inputs, n one-byte flags, `kept` outputs."""
    return n * element_bytes + n + kept * element_bytes


def compact_predicate_bytes(n: int, kept: float, element_bytes: int = 4) -> float:
    """Selection by a predicate on the values: n inputs, `kept` outputs."""
    return n * element_bytes + kept * element_bytes


def transpose_bytes(rows: int, cols: int, element_bytes: int = 4) -> int:
    """Transpose: read R*C, write R*C."""
    return 2 * rows * cols * element_bytes


def matvec_bytes(rows: int, cols: int, element_bytes: int = 4) -> int:
    """A*x or A^T*x: read the matrix and the vector once, write the result."""
    return element_bytes * (rows * cols + rows + cols)


def conv_outputs(height: int, width: int, k: int) -> int:
    """Outputs of a valid (unpadded) K x K cross-correlation."""
    return max(height - k + 1, 0) * max(width - k + 1, 0)


def conv_bytes(height: int, width: int, k: int, element_bytes: int = 4) -> int:
    """Valid 2-D convolution: read the image once, write every output once
    (the K*K filter is negligible and not counted)."""
    return element_bytes * (height * width + conv_outputs(height, width, k))


def reduce_bytes(n: int, element_bytes: int) -> int:
    """Reduction (sum, argmax) to one value: read n elements once; the
    one-element result is not counted."""
    return n * element_bytes


def histogram_bytes(n: int, element_bytes: int) -> int:
    """Histogram: read n elements once; the counts (bins * 4 or 8 bytes)
    are not counted."""
    return n * element_bytes


def radix_sort_passes(key_bytes: int, digit_bits: int = 8) -> int:
    """Digit passes of an LSD radix sort over every bit of the key."""
    return -(-8 * key_bytes // digit_bits)


def radix_sort_bytes(n: int, key_bytes: int, value_bytes: int = 0, digit_bits: int = 8) -> int:
    """What an LSD radix sort with `digit_bits`-bit digits moves: one read
    of the keys for the upsweep (every digit's histogram at once), then per
    digit pass one read and one write of the keys and the values:
    n*key + 2*passes*n*(key + value). u32 keys: 36n; i32 keys with i32
    values (argsort): 68n; u64 keys: 136n."""
    passes = radix_sort_passes(key_bytes, digit_bits)
    return n * key_bytes + 2 * passes * n * (key_bytes + value_bytes)


def topk_bytes(n: int, k: int, key_bytes: int = 4, index_bytes: int = 4) -> int:
    """Top-k: read the n keys once, write k keys and k indices (counted
    as 4-byte indices, as parprims returns them)."""
    return n * key_bytes + k * (key_bytes + index_bytes)


def segmented_reduce_bytes(n: int, segments: int, element_bytes: int = 4) -> int:
    """Reduce by segment offsets (issue 21): the n values read once, and
    8 bytes per segment (its offset read, its result written)."""
    return n * element_bytes + 8 * segments


def run_length_bytes(n: int, runs: int, element_bytes: int = 4) -> int:
    """Run-length encode (issue 21): the n values read once, one value
    and one 4-byte count written per run."""
    return n * element_bytes + 8 * runs


def expand_bytes(n_in: int, n_out: int, element_bytes: int = 4, count_bytes: int = 4) -> int:
    """repeat_interleave / expand (issue 21): the values and the counts
    read once, the output written once: 4*n_in + 4*n_counts + 4*n_out."""
    return n_in * element_bytes + n_in * count_bytes + n_out * element_bytes


def spmv_bytes(rows: int, cols: int, nnz: int) -> int:
    """CSR y = A*x, f32 values and i32 column indices (issue 21): values and
    column indices (8*nnz), row offsets (4*(rows+1)), y written (4*rows), x
    read once (4*cols)."""
    return 8 * nnz + 4 * (rows + 1) + 4 * rows + 4 * cols


def sum_tolerance(n: int, abs_sum: float, epsilon: float = 2.0 ** -23) -> float:
    """Absolute error allowed for a float sum of n terms whose magnitudes
    add up to abs_sum: eps * ceil(log2 n) * sum|x| (pairwise summation)."""
    return epsilon * max(1, math.ceil(math.log2(max(n, 2)))) * abs_sum


# Shapes as parprims writes them.


def shape_1d(n: int) -> str:
    return str(n)


def shape_histogram(n: int, bins: int, one_bin: bool = False) -> str:
    """"268435456/bins256", "268435456/bins256-onebin" (every value equal)."""
    return f"{n}/bins{bins}" + ("-onebin" if one_bin else "")


def shape_matrix(rows: int, cols: int, transposed: bool = False) -> str:
    return f"{rows}x{cols}" + ("/T" if transposed else "")


def shape_conv(height: int, width: int, k: int) -> str:
    return f"{height}x{width}/k{k}"


def shape_sort(n: int, case: str = "uniform") -> str:
    """"268435456" (uniform keys), "268435456/distinct65536",
    "268435456/sorted", "268435456/argsort", "268435456/top16"."""
    return str(n) if case == "uniform" else f"{n}/{case}"


def shape_segmented(n: int, case: str) -> str:
    """"268435456/seg1000" (segments of ~1000, the segreduce lab's name),
    "67108864/mean4" (n_in counts of mean 4)."""
    return f"{n}/{case}"


def shape_spmv(rows: int, cols: int, kind: str) -> str:
    """"4194304x4194304/uniform32", "4194304x4194304/pareto1.5"."""
    return f"{rows}x{cols}/{kind}"


# ---------------------------------------------------------------------------
# The SpMV benchmark matrices: the generator of the Rust lab
# (parprims_lab::prims::spmv, documented in docs/spmv.md), mirrored
# exactly: a counter hash, integer and correctly rounded float64 arithmetic,
# so both sides build bit-identical matrices. The scalar functions here are
# the definition; spmv_matrix() below computes the same on the GPU and is
# checked against them on sampled rows before any peer runs.
# ---------------------------------------------------------------------------

SPMV_SEED = 0x53504D56  # "SPMV"
SPMV_STREAM = 0xD1B54A32D192ED03
SPMV_GOLDEN = 0x9E3779B97F4A7C15
SPMV_MIX1 = 0xBF58476D1CE4E5B9
SPMV_MIX2 = 0x94D049BB133111EB
SPMV_KINDS = ("uniform32", "pareto1.5")
SPMV_ROWS = 1 << 22
MASK64 = (1 << 64) - 1


def mix64(z: int) -> int:
    """The SplitMix64 finaliser, mod 2^64."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * SPMV_MIX1) & MASK64
    z = ((z ^ (z >> 27)) * SPMV_MIX2) & MASK64
    return z ^ (z >> 31)


def spmv_bits(stream: int, i: int) -> int:
    return mix64(SPMV_SEED + stream * SPMV_STREAM + (i + 1) * SPMV_GOLDEN)


def spmv_unit(stream: int, i: int) -> float:
    """float64 in [0, 1)."""
    return (spmv_bits(stream, i) >> 11) * 2.0 ** -53


def spmv_open_unit(stream: int, i: int) -> float:
    """float64 in (0, 1]."""
    return ((spmv_bits(stream, i) >> 11) + 1) * 2.0 ** -53


def spmv_row_length(kind: str, row: int, cols: int) -> int:
    """uniform32: 32. pareto1.5: floor(x_m * U^(-2/3)) with x_m = 32/3,
    U^(1/3) drawn as the largest of three open units, in this order of
    float64 operations: t = v*v; t = 3*t; floor(32/t), at most cols."""
    if kind == "uniform32":
        return 32
    if kind != "pareto1.5":
        raise ValueError(f"unknown SpMV matrix kind {kind!r}")
    v = max(spmv_open_unit(4, row), spmv_open_unit(5, row), spmv_open_unit(6, row))
    t = v * v
    t = 3.0 * t
    return min(math.floor(32.0 / t), cols)


def spmv_column(k: int, cols: int) -> int:
    """The column drawn for CSR position k (before the sort within its row)."""
    return ((spmv_bits(1, k) >> 32) * cols) >> 32


def f32_round(value: float) -> float:
    """value rounded to the nearest float32 (ties to even), as a float."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def spmv_value(k: int) -> float:
    """The value at final CSR position k: float32(2*unit(2, k) - 1)."""
    return f32_round(2.0 * spmv_unit(2, k) - 1.0)


def spmv_x(c: int) -> float:
    """x[c] = float32(2*unit(3, c) - 1)."""
    return f32_round(2.0 * spmv_unit(3, c) - 1.0)


def spmv_row(start: int, length: int, cols: int) -> tuple[list[int], list[float]]:
    """One row's sorted column indices and values, given where it starts."""
    columns = sorted(spmv_column(k, cols) for k in range(start, start + length))
    return columns, [spmv_value(k) for k in range(start, start + length)]


# Command-line numbers: "268435456", "2^28", "5*2^25", "(2^31)+1".


def parse_count(text: str) -> int:
    """A positive integer from a small arithmetic expression (+ - * / ^ **,
    parentheses, integers only; the result must be a whole number)."""
    expression = text.strip().replace("^", "**")
    if not expression:
        raise ValueError("empty size")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as error:
        raise ValueError(f"not a size: {text!r}") from error

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                if right == 0:
                    raise ValueError(f"division by zero in {text!r}")
                return left / right
            if isinstance(node.op, ast.Pow):
                if right.denominator != 1 or not 0 <= right <= 64:
                    raise ValueError(f"exponent must be a whole number 0..64 in {text!r}")
                return left ** int(right)
        raise ValueError(f"not a size: {text!r} (integers, + - * / ^ and parentheses)")

    result = value(tree)
    if result.denominator != 1:
        raise ValueError(f"{text!r} is not a whole number ({float(result)})")
    if result < 1 or result > 1 << 40:
        raise ValueError(f"{text!r} must be between 1 and 2^40")
    return int(result)


def parse_counts(text: str) -> list[int]:
    return [parse_count(part) for part in text.split(",") if part.strip()]


def parse_dims(text: str) -> list[tuple[int, int]]:
    """"16384x16384,1000x777" -> [(16384, 16384), (1000, 777)]."""
    dims = []
    for part in text.split(","):
        if not part.strip():
            continue
        pieces = part.lower().split("x")
        if len(pieces) != 2:
            raise ValueError(f"not a ROWSxCOLS shape: {part!r}")
        dims.append((parse_count(pieces[0]), parse_count(pieces[1])))
    return dims


def parse_only(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    for name in names:
        if name not in PRIMITIVES and name != "all":
            raise ValueError(f"unknown primitive {name!r}: choose from {', '.join(PRIMITIVES)}, all")
    if "all" in names:
        return list(PRIMITIVES)
    return [p for p in PRIMITIVES if p in names]


def parse_types(text: str) -> list[str]:
    """Element types for scan, reduce and sort (each section keeps the
    ones it times)."""
    known = list(dict.fromkeys(SCAN_TYPES + SORT_KEY_TYPES))
    names = [p.strip() for p in text.split(",") if p.strip()]
    for name in names:
        if name not in known:
            raise ValueError(f"unknown type {name!r}: choose from {', '.join(known)}")
    return names


def rotation_sets(set_bytes: int, l2_bytes: int, most: int = 8) -> int:
    """How many input sets to rotate among so that consecutive runs do not
    find their operands in L2: one set when it is 4x the L2 or larger."""
    if set_bytes <= 0:
        return 1
    return max(1, min(most, math.ceil(4 * l2_bytes / set_bytes)))


def format_table(rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Self-test (no torch)
# ---------------------------------------------------------------------------


class Wrap64:
    """A stand-in for an int64 tensor in the self-test: the operators the
    GPU generator uses, wrapping to 64-bit two's complement."""

    def __init__(self, value: int):
        self.value = signed64(value)

    @staticmethod
    def _v(other) -> int:
        return other.value if isinstance(other, Wrap64) else other

    def __mul__(self, other):
        return Wrap64(self.value * self._v(other))

    def __add__(self, other):
        return Wrap64(self.value + self._v(other))

    def __xor__(self, other):
        return Wrap64(self.value ^ self._v(other))

    def __and__(self, other):
        return Wrap64(self.value & self._v(other))

    def __or__(self, other):
        return Wrap64(self.value | self._v(other))

    def __rshift__(self, shift: int):
        return Wrap64(self.value >> shift)  # arithmetic, as on int64 tensors

    def __lshift__(self, shift: int):
        return Wrap64(self.value << shift)


def self_test() -> int:
    failures = []

    def expect(condition: bool, what: str) -> None:
        if not condition:
            failures.append(what)

    record = Record(
        "scan", "DecoupledLookback", "i32", "268435456", 0.75, 2863.3, 3000.0,
        "NVIDIA H100 80GB HBM3, sm_90",
    )
    line = record.to_csv()
    expect(
        line == 'scan,DecoupledLookback,i32,268435456,0.750000,2863.30,3000.00,'
        '0.9544,"NVIDIA H100 80GB HBM3, sm_90"',
        f"Record.to_csv formatting: {line}",
    )
    expect(split_csv(line)[8] == "NVIDIA H100 80GB HBM3, sm_90", "split_csv quoted field")
    expect(len(split_csv(line)) == 9, "nine fields")
    expect(next(csv.reader(io.StringIO(line))) == split_csv(line), "csv module agrees")
    odd = Record('torch "x", y', "a", "f32", "1", 1.0, 0.0, 0.0, "d")
    odd_line = odd.to_csv()
    expect(odd_line.startswith('"torch ""x"", y",a,'), f"quotes doubled: {odd_line}")
    expect(split_csv(odd_line)[0] == 'torch "x", y', "quotes round trip")
    expect(odd.fraction_of_ceiling() == 0.0 and odd_line.endswith(",0.00,0.00,0.0000,d"),
           "zero ceiling gives fraction 0")
    expect(csv_field("a\nb") == '"a\nb"' and csv_field("plain") == "plain", "csv_field")
    expect(CSV_HEADER.split(",")[4:8] == ["ms_median", "gbps", "ceiling_gbps", "fraction_of_ceiling"],
           "header")

    expect(median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0, 2.0, 3.0]) == 2.5, "median")
    expect(abs(gbps(2e9, 1.0) - 2000.0) < 1e-9 and gbps(1.0, 0.0) == 0.0, "gbps")

    n = 1 << 28
    expect(scan_bytes(n, 4) == 8 * n and scan_bytes(n, 8) == 16 * n, "scan bytes")
    expect(compact_flags_bytes(n, n // 2) == 5 * n + 4 * (n // 2), "compact flags bytes")
    expect(compact_predicate_bytes(n, n // 2) == 4 * n + 4 * (n // 2), "compact predicate bytes")
    expect(transpose_bytes(16384, 16384) == 8 * 16384 * 16384, "transpose bytes")
    expect(matvec_bytes(16384, 8192) == 4 * 16384 * 8192 + 4 * (16384 + 8192), "matvec bytes")
    expect(conv_outputs(8192, 8192, 3) == 8190 * 8190 and conv_outputs(2, 2, 3) == 0, "conv outputs")
    expect(conv_bytes(8192, 8192, 5) == 4 * (8192 * 8192 + 8188 * 8188), "conv bytes")
    expect(reduce_bytes(n, 4) == 4 * n and reduce_bytes(n, 8) == 8 * n, "reduce bytes")
    expect(histogram_bytes(n, 4) == 4 * n and histogram_bytes(n, ELEMENT_BYTES["u8"]) == n,
           "histogram bytes: 4n for i32/f32, n for u8")
    # The issue's figures: torch.sum at 0.98 of a 3000 GB/s ceiling is
    # 2^28 i32 read once in 0.3653 ms (read-only bytes against read+write).
    sum_record = Record("reduce", "torch.sum", "i32", shape_1d(n), 0.365, gbps(reduce_bytes(n, 4),
                        0.365), 3000.0, "d")
    expect(abs(sum_record.fraction_of_ceiling() - 0.9806) < 1e-3,
           f"reduce fraction: {sum_record.fraction_of_ceiling()}")
    expect(sum_tolerance(1 << 20, 1000.0) == 2.0 ** -23 * 20 * 1000.0
           and sum_tolerance(1, 5.0) == 2.0 ** -23 * 5.0, "sum tolerance")

    # Sort: an 8-bit-digit LSD radix sort's reads and writes.
    expect(radix_sort_passes(4) == 4 and radix_sort_passes(8) == 8
           and radix_sort_passes(4, digit_bits=6) == 6, "radix passes")
    expect(radix_sort_bytes(n, 4) == 36 * n, "u32 keys: 4n upsweep + 4 passes x 8n")
    expect(radix_sort_bytes(n, 4, 4) == 68 * n, "i32 keys + i32 values: 4n + 4 x 16n")
    expect(radix_sort_bytes(n >> 1, 8) == 136 * (n >> 1), "u64 keys: 8n + 8 passes x 16n")
    expect(topk_bytes(n, 16) == 4 * n + 16 * 8, "topk bytes")
    expect(abs(items_per_second(n, 5.5) - n / 5.5e-3) < 1.0 and items_per_second(n, 0.0) == 0.0,
           "keys per second")
    # Issue 22: 5.5 ms for 2^28 u32 keys is 48.8 G keys/s, 1.76 TB/s of radix traffic.
    expect(abs(items_per_second(n, 5.5) / 1e9 - 48.8) < 0.1
           and abs(gbps(radix_sort_bytes(n, 4), 5.5) - 1757.0) < 1.0, "issue 22's 5.5 ms")
    # Segmented primitives (issue 21's bytes).
    expect(segmented_reduce_bytes(n, n // 1000) == 4 * n + 8 * (n // 1000), "segmented bytes")
    expect(run_length_bytes(n, n // 16) == 4 * n + 8 * (n // 16), "run-length bytes")
    expect(expand_bytes(n // 4, n) == 4 * (n // 4) + 4 * (n // 4) + 4 * n, "expand bytes")
    # SpMV: issue 21's cuSPARSE figure, 1.238 ms on 2^27 non-zeros, ~0.3 of ~3000 GB/s.
    spmv_total = spmv_bytes(1 << 22, 1 << 22, 1 << 27)
    expect(spmv_total == 8 * (1 << 27) + 4 * ((1 << 22) + 1) + 4 * (1 << 22) + 4 * (1 << 22),
           "spmv bytes")
    spmv_record = Record("spmv", "cupyx.csr@x(cuSPARSE)", "f32",
                         shape_spmv(1 << 22, 1 << 22, "uniform32"), 1.238,
                         gbps(spmv_total, 1.238), 3000.0, "d")
    expect(abs(spmv_record.fraction_of_ceiling() - 0.303) < 0.005,
           f"spmv fraction: {spmv_record.fraction_of_ceiling()}")
    expect(shape_sort(n) == "268435456" and shape_sort(n, "argsort") == "268435456/argsort"
           and shape_sort(n, "top16") == "268435456/top16", "sort shapes")
    expect(shape_segmented(n, "seg1000") == "268435456/seg1000", "segmented shape")
    expect(RUN_MAX == 31 and (1 + RUN_MAX) / 2 == 16, "runs of 1..31, mean 16, as the runs lab")
    expect(spmv_record.shape == "4194304x4194304/uniform32"
           and shape_spmv(4, 5, "pareto1.5") == "4x5/pareto1.5", "spmv shapes")
    expect({t for t, _, _ in SORT_CASES} == set(SORT_KEY_TYPES)
           and ("i32", n, "argsort") in SORT_CASES and ("u64", n >> 1, "uniform") in SORT_CASES
           and ("u32", 1 << 16, "uniform") in SORT_CASES, "sort cases cover issue 22's")

    # The SpMV generator's definition: SplitMix64's first output from seed 0.
    expect(mix64(SPMV_GOLDEN) == 0xE220A8397B1DCDAF, "mix64 (SplitMix64 test vector)")
    expect(spmv_bits(1, 0) == mix64(SPMV_SEED + SPMV_STREAM + SPMV_GOLDEN), "spmv_bits")
    units = [spmv_unit(2, k) for k in range(1000)] + [spmv_open_unit(4, k) for k in range(1000)]
    expect(all(0.0 <= u <= 1.0 for u in units) and 0.0 not in units[1000:], "units")
    lengths = [spmv_row_length("pareto1.5", r, 1 << 22) for r in range(20000)]
    expect(min(lengths) >= 10 and 20 < sum(lengths) / len(lengths) < 60,
           f"pareto lengths: min {min(lengths)}, mean {sum(lengths) / len(lengths):.1f}")
    expect(spmv_row_length("uniform32", 5, 7) == 32 and spmv_row_length("pareto1.5", 3, 12) <= 12,
           "row lengths")
    columns, values = spmv_row(64, 32, 1000)
    expect(columns == sorted(columns) and all(0 <= c < 1000 for c in columns)
           and len(values) == 32 and all(-1.0 <= v < 1.0 and v == f32_round(v) for v in values),
           "a row: sorted columns in range, float32 values in [-1, 1)")
    expect(f32_round(0.1) != 0.1 and f32_round(0.5) == 0.5, "f32_round")
    # The GPU path's arithmetic (int64 bits, wrapping, logical shifts by
    # masking) on wrapping integers that behave as int64 tensors do.
    expect(all(torch_mix64(Wrap64(signed64(z))).value == signed64(mix64(z))
               for z in (0, 1, SPMV_GOLDEN, MASK64, 1 << 63, 0x0123456789ABCDEF)),
           "torch_mix64 agrees with mix64")
    expect(all(torch_spmv_bits(None, stream, Wrap64(k)).value == signed64(spmv_bits(stream, k))
               for stream in (1, 2, 6) for k in (0, 1, 12345, (1 << 31) + 7)),
           "torch_spmv_bits agrees with spmv_bits")
    expect(all(((torch_spmv_bits(None, 1, Wrap64(k)) >> 32) & 0xFFFFFFFF).value * 4194304 >> 32
               == spmv_column(k, 4194304) for k in (0, 99, 1 << 27)), "column draw")
    expect(sort_order_key(None, Wrap64(-1), "u64").value == signed64(MASK64 ^ (1 << 63))
           and sort_order_key(None, Wrap64(0), "u64").value == -(1 << 63),
           "u64 order key: sign bit flipped")

    expect(shape_1d(n) == "268435456", "1-D shape")
    expect(shape_matrix(16384, 16384) == "16384x16384", "matrix shape")
    expect(shape_matrix(16384, 8192, transposed=True) == "16384x8192/T", "transposed shape")
    expect(shape_conv(8192, 8192, 3) == "8192x8192/k3", "conv shape")
    expect(shape_histogram(n, 256) == "268435456/bins256"
           and shape_histogram(n, 256, one_bin=True) == "268435456/bins256-onebin"
           and shape_histogram(n, 65536) == "268435456/bins65536", "histogram shapes")
    expect({(t, b, o) for t, b, o in HISTOGRAM_CASES} >= {("i32", 256, False), ("u8", 256, False),
                                                         ("i32", 256, True), ("i32", 65536, False)},
           "histogram cases cover the issue's four")

    expect(parse_counts("2^28,123123123, 5*2^25") == [n, 123123123, 5 << 25], "parse_counts")
    expect(parse_count("5/8*2^28") == 5 * (1 << 25) and parse_count("2**31+1") == (1 << 31) + 1,
           "fractions and powers")
    for bad in ("0", "abc", "2^70", "3/2", "1.5", "-4", "__import__('os')", ""):
        try:
            parse_count(bad)
            failures.append(f"parse_count accepted {bad!r}")
        except ValueError:
            pass
    expect(parse_dims("16384x16384,1x5") == [(16384, 16384), (1, 5)], "parse_dims")
    expect(parse_only("conv,scan") == ["scan", "conv"] and parse_only("all") == list(PRIMITIVES),
           "parse_only")
    expect(parse_only("histogram,reduce") == ["reduce", "histogram"], "parse_only new sections")
    defaults = parse_args([])
    expect(defaults.sizes is None and defaults.types is None, "sizes and types per section")
    expect(parse_args(["--only", "reduce", "--sizes", "2^16"]).sizes == [1 << 16], "--sizes")
    for bad_only in ("sorting", "spmv2"):
        try:
            parse_only(bad_only)
            failures.append(f"parse_only accepted {bad_only}")
        except ValueError:
            pass
    expect(parse_only("spmv,sort,segmented,scan") == ["scan", "sort", "segmented", "spmv"],
           "parse_only: sort, segmented, spmv after the older sections")
    expect(list(PRIMITIVES[:7]) == ["scan", "compact", "transpose", "matvec", "conv", "reduce",
                                    "histogram"], "the older sections run first")
    expect(parse_types("u64,i32") == ["u64", "i32"], "parse_types")
    expect(parse_types("u32,f32") == ["u32", "f32"], "parse_types: sort's u32")
    try:
        parse_types("u16")
        failures.append("parse_types accepted u16")
    except ValueError:
        pass
    expect(parse_args(["--spmv-rows", "2^10"]).spmv_rows == 1024
           and parse_args([]).spmv_rows == 1 << 22, "--spmv-rows")
    expect(rotation_sets(1 << 31, 50 << 20) == 1 and rotation_sets(1 << 20, 50 << 20) == 8
           and rotation_sets(100 << 20, 50 << 20) == 2, "rotation_sets")

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "sub", "peers.csv")
        write_csv(path, [record, odd])
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
        expect(lines[0] == CSV_HEADER and lines[1] == line and len(lines) == 3, "write_csv")

    table = format_table([["a", "ms"], ["scan", "1.0"]], {1})
    expect(table.splitlines()[2].endswith("1.0"), "table")

    latency = LatencyRow("torch.cumsum", 65536, 5.5, 4.25, 21.0,
                         "NVIDIA H100 80GB HBM3, sm_90")
    expect(latency.to_csv() == 'torch.cumsum,65536,5.500,4.250,21.000,'
           '"NVIDIA H100 80GB HBM3, sm_90"', f"LatencyRow.to_csv: {latency.to_csv()}")
    expect(len(split_csv(latency.to_csv())) == len(LATENCY_COLUMNS.split(",")),
           "latency columns")
    expect(latency_markdown([latency]).splitlines()[2]
           == "| `torch.cumsum` | 65536 | 65536 | 5.50 | 4.25 | 21.00 |", "latency table")
    latency_args = parse_latency_args(["--sizes", "2^10,65536", "--csv", "x.csv", "--calls", "7"])
    expect(latency_args.sizes == [1024, 65536] and latency_args.csv == "x.csv"
           and latency_args.calls == 7 and latency_args.reps == 200, "latency arguments")
    expect(parse_latency_args([]).sizes == LATENCY_SIZES, "latency default sizes")
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "latency.csv")
        write_latency_csv(path, [latency])
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
        expect(lines == [LATENCY_COLUMNS, latency.to_csv()], "write_latency_csv")

    if failures:
        for failure in failures:
            print(f"self-test FAILED: {failure}", file=sys.stderr)
        return 1
    print("self-test: all checks passed")
    return 0


# ---------------------------------------------------------------------------
# GPU side (torch imported lazily)
# ---------------------------------------------------------------------------

# Poison patterns written into outputs before each run: quiet NaNs when read
# as floats, unlikely values when read as integers.
POISON_4 = 0x7FC0DEAD
POISON_8 = 0x7FF8DEADDEADBEEF


class CheckFailed(Exception):
    """A peer's output did not match the reference."""


@dataclass
class Bound:
    """A peer bound to one input set."""

    prepare: Callable[[], None]  # untimed, before each run
    run: Callable[[], None]  # timed
    output: Callable[[], object]  # the torch tensor the last run produced


@dataclass
class Peer:
    algorithm: str
    clock: object  # TorchClock or CupyClock: events on the stream the peer uses
    bind: Callable[[dict], Bound]
    tolerance: float = 1e-4  # relative error allowed for float outputs
    optional: bool = False  # a peer that cannot run at all is a note, not a failure


@dataclass
class Workload:
    primitive: str
    element_type: str
    shape: str
    make_inputs: Callable[[], dict]  # one fresh random input set on the GPU
    set_bytes: int  # bytes of one input set (inputs + outputs), for rotation
    bytes_moved: Callable[[dict], float]  # declared bytes of one run on a set
    # check(inputs, output, tolerance, full): raises CheckFailed, returns a note
    check: Callable[[dict, object, float, bool], str]
    items: int = 0  # keys (or values) per run: printed as G items/s when set


class TorchClock:
    def __init__(self, torch):
        self.torch = torch

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    @staticmethod
    def record(event):
        event.record()

    @staticmethod
    def elapsed_ms(start, stop) -> float:
        stop.synchronize()
        return start.elapsed_time(stop)

    def synchronize(self):
        self.torch.cuda.synchronize()


class CupyClock:
    def __init__(self, cupy):
        self.cupy = cupy

    def event(self):
        return self.cupy.cuda.Event()

    @staticmethod
    def record(event):
        event.record()

    def elapsed_ms(self, start, stop) -> float:
        stop.synchronize()
        return self.cupy.cuda.get_elapsed_time(start, stop)

    def synchronize(self):
        self.cupy.cuda.Device().synchronize()


def time_device(clock, warmup: int, reps: int, prepare: Callable[[int], None],
                run: Callable[[int], None]) -> list[float]:
    """parprims_testkit::bench::time_device: warm-up, then events around each run."""
    for i in range(warmup):
        prepare(i)
        run(i)
    clock.synchronize()
    start, stop = clock.event(), clock.event()
    samples = []
    for i in range(reps):
        prepare(warmup + i)
        clock.record(start)
        run(warmup + i)
        clock.record(stop)
        samples.append(clock.elapsed_ms(start, stop))
    return samples


def time_device_batched(clock, warmup: int, reps: int, calls: int,
                        prepare: Callable[[int], None], run: Callable[[int], None]) -> list[float]:
    """parprims_testkit::bench::time_device_batched: events around `calls`
    runs back to back, each sample the time per run."""
    start, stop = clock.event(), clock.event()
    samples = []
    for group in range(warmup + reps):
        prepare(group)
        clock.record(start)
        for call in range(calls):
            run(group * calls + call)
        clock.record(stop)
        ms = clock.elapsed_ms(start, stop)
        if group >= warmup:
            samples.append(ms / calls)
    return samples


def time_host(warmup: int, reps: int, run: Callable[[int], None]) -> list[float]:
    """parprims_testkit::bench::time_host: the wall clock around each run
    (which must wait for its device work itself), in milliseconds."""
    for i in range(warmup):
        run(i)
    samples = []
    for i in range(reps):
        started = time.perf_counter()
        run(warmup + i)
        samples.append((time.perf_counter() - started) * 1e3)
    return samples


class Context:
    """The device, its copy ceiling, the libraries and the results."""

    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        self.device = torch.device("cuda", 0)
        props = torch.cuda.get_device_properties(0)
        self.label = f"{torch.cuda.get_device_name(0)}, sm_{props.major}{props.minor}"
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or (50 << 20))
        self.seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(63)
        self.seeds = random.Random(self.seed)
        self.torch_clock = TorchClock(torch)
        self.cupy = None
        self.cupy_clock = None
        self.cub_scan = None
        self.cub_cumsum_op = None
        self.cub_reduction = None
        self.cub_sum_op = None
        self.ceiling_gbps = 0.0
        self.records: list[Record] = []
        self.rows: list[list[str]] = []
        self.failures: list[str] = []
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"note: {text}", flush=True)

    def generator(self):
        generator = self.torch.Generator(device=self.device)
        generator.manual_seed(self.seeds.getrandbits(63))
        return generator

    def to_cupy(self, tensor):
        """A CuPy view of a torch tensor (same memory). uint64 goes through
        an int64 view: the array interface of some torch builds has no u8."""
        torch, cp = self.torch, self.cupy
        if tensor.dtype == getattr(torch, "uint64", None):
            return cp.asarray(tensor.view(torch.int64)).view(cp.uint64)
        if tensor.dtype == getattr(torch, "uint32", None):
            return cp.asarray(tensor.view(torch.int32)).view(cp.uint32)
        return cp.asarray(tensor)

    def bits_of(self, array):
        """The bits of a torch tensor or a CuPy array as a torch signed
        integer tensor of the same element size (int32 or int64), sharing
        memory: exact comparisons whatever the dtype."""
        torch = self.torch
        if not isinstance(array, torch.Tensor):
            cp = self.cupy
            signed = {4: cp.int32, 8: cp.int64}[int(array.itemsize)]
            array = torch.as_tensor(array.view(signed), device=self.device)
        return array.view({4: torch.int32, 8: torch.int64}[array.element_size()])

    def free(self) -> None:
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()
        if self.cupy is not None:
            self.cupy.get_default_memory_pool().free_all_blocks()

    def add_row(self, workload: Workload, algorithm: str, samples: list[float], rate: float,
                check: str) -> None:
        ms = median(samples)
        spread = f"{min(samples):.4f}..{max(samples):.4f}"
        fraction = rate / self.ceiling_gbps if self.ceiling_gbps > 0 else 0.0
        if workload.items:
            check = f"{items_per_second(workload.items, ms) / 1e9:.2f} G/s, " + check
        self.rows.append([
            workload.primitive, algorithm, workload.element_type, workload.shape,
            f"{ms:.4f}", spread, f"{rate:.1f}", f"{fraction:.3f}", check,
        ])
        print(f"  {algorithm:28} {workload.element_type:4} {workload.shape:16} "
              f"{ms:10.4f} ms ({spread}) {rate:9.1f} GB/s  {fraction:6.3f} of ceiling  {check}",
              flush=True)

    def fail(self, workload: Workload, algorithm: str, reason: str) -> None:
        self.failures.append(f"{workload.primitive} {algorithm} {workload.element_type} "
                             f"{workload.shape}: {reason}")
        self.rows.append([workload.primitive, algorithm, workload.element_type,
                          workload.shape, "-", "-", "-", "-", f"FAILED: {reason}"])
        print(f"  {algorithm:28} {workload.element_type:4} {workload.shape:16} FAILED: {reason}",
              flush=True)


def measure_ceiling(ctx: Context) -> None:
    torch = ctx.torch
    words = max(1, (ctx.args.ceiling_mib << 20) // 4)
    generator = ctx.generator()
    src = torch.randint(-(1 << 31), (1 << 31) - 1, (words,), dtype=torch.int32,
                        device=ctx.device, generator=generator)
    buffers = {"src": src, "dst": torch.empty_like(src)}
    del src

    def copy(_: int) -> None:
        buffers["dst"].copy_(buffers["src"])

    samples = time_device(ctx.torch_clock, ctx.args.warmup, ctx.args.reps, lambda i: None, copy)
    if not torch.equal(buffers["dst"], buffers["src"]):
        raise SystemExit("error: the copy-ceiling copy did not copy (device broken?)")
    buffers.clear()
    ms = median(samples)
    ctx.ceiling_gbps = gbps(2.0 * words * 4, ms)
    print(f"copy ceiling: {ctx.ceiling_gbps:.1f} GB/s (dst.copy_(src) of {words * 4 >> 20} MiB, "
          f"read + write, median {ms:.4f} ms of {len(samples)})", flush=True)
    ctx.free()


def run_workload(ctx: Context, small: list[Workload], full: Workload, peers: list[Peer]) -> None:
    """Checks every peer on the small workloads, then times the survivors on
    the full one and checks the last timed run's output."""
    torch = ctx.torch
    for peer in peers:
        try:
            for workload in small:
                inputs = workload.make_inputs()
                bound = peer.bind(inputs)
                bound.prepare()
                bound.run()
                peer.clock.synchronize()
                workload.check(inputs, bound.output(), peer.tolerance, False)
                del inputs, bound
        except CheckFailed as error:
            ctx.fail(full, peer.algorithm, f"small-size check: {error}")
            peer.bind = None  # type: ignore[assignment]
        except Exception as error:  # a peer that cannot run is reported, not fatal
            reason = f"could not run: {type(error).__name__}: {error}".splitlines()[0]
            if peer.optional:
                ctx.note(f"{full.primitive} {peer.algorithm} {full.element_type} skipped: {reason}")
            else:
                ctx.fail(full, peer.algorithm, reason)
            peer.bind = None  # type: ignore[assignment]
    ctx.free()
    live = [p for p in peers if p.bind is not None]
    if not live:
        return
    try:
        sets = [full.make_inputs()]
        count = rotation_sets(full.set_bytes, ctx.l2_bytes)
        sets += [full.make_inputs() for _ in range(count - 1)]
    except Exception as error:  # out of memory, or an input the device could not make
        what = "inputs do not fit" if isinstance(error, torch.cuda.OutOfMemoryError) else \
            f"inputs could not be made ({type(error).__name__})"
        for peer in live:
            ctx.fail(full, peer.algorithm, f"{what}: {error}".splitlines()[0])
        ctx.free()
        return
    declared = sum(full.bytes_moved(s) for s in sets) / len(sets)
    for peer in live:
        try:
            bound = [peer.bind(s) for s in sets]
            samples = time_device(
                peer.clock, ctx.args.warmup, ctx.args.reps,
                lambda i: bound[i % len(bound)].prepare(),
                lambda i: bound[i % len(bound)].run(),
            )
            peer.clock.synchronize()
            last = (ctx.args.warmup + ctx.args.reps - 1) % len(bound)
            note = full.check(sets[last], bound[last].output(), peer.tolerance, True)
        except CheckFailed as error:
            ctx.fail(full, peer.algorithm, f"full-size check: {error}")
            continue
        except Exception as error:
            ctx.fail(full, peer.algorithm, f"{type(error).__name__}: {error}".splitlines()[0])
            continue
        finally:
            bound = []
            ctx.free()
        ms = median(samples)
        rate = gbps(declared, ms)
        ctx.records.append(Record(full.primitive, peer.algorithm, full.element_type, full.shape,
                                  ms, rate, ctx.ceiling_gbps, ctx.label))
        ctx.add_row(full, peer.algorithm, samples, rate, "ok" + (f" ({note})" if note else ""))
    del sets
    ctx.free()


# --- checks ---------------------------------------------------------------


def relative_error(torch, out, ref) -> float:
    """||out - ref|| / ||ref|| in float64 (NaN if anything is NaN)."""
    out64, ref64 = out.to(torch.float64), ref.to(torch.float64)
    ref_norm = torch.linalg.vector_norm(ref64).item()
    diff = torch.linalg.vector_norm(out64 - ref64).item()
    return diff / ref_norm if ref_norm > 0 else diff


def expect_close(torch, out, ref, tolerance: float) -> str:
    if tuple(out.shape) != tuple(ref.shape):
        raise CheckFailed(f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
    error = relative_error(torch, out, ref)
    if not error <= tolerance:  # NaN fails too
        raise CheckFailed(f"relative error {error:.3g} > {tolerance:g}")
    return f"rel.err {error:.1e}"


def expect_equal(torch, out, ref) -> str:
    if tuple(out.shape) != tuple(ref.shape):
        raise CheckFailed(f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
    if not torch.equal(out, ref):
        mismatches = int((out != ref).sum().item())
        raise CheckFailed(f"{mismatches} of {out.numel()} elements differ")
    return ""


def signed_view(torch, tensor):
    """Same bits as a signed integer tensor (uint64 -> int64), for exact
    comparisons that torch supports on every dtype."""
    if tensor.dtype == getattr(torch, "uint64", None):
        return tensor.view(torch.int64)
    return tensor


def poison(torch, tensor) -> None:
    if tensor.element_size() == 4:
        tensor.view(torch.int32).fill_(POISON_4)
    else:
        tensor.view(torch.int64).fill_(POISON_8)


# --- scan -----------------------------------------------------------------


def torch_dtype(torch, type_name: str):
    names = {"u8": "uint8", "i32": "int32", "f32": "float32", "i64": "int64",
             "u64": "uint64", "u32": "uint32"}
    return getattr(torch, names[type_name], None)


def scan_workload(ctx: Context, n: int, type_name: str) -> Workload:
    torch = ctx.torch
    dtype = torch_dtype(torch, type_name)
    size = ELEMENT_BYTES[type_name]

    def make_inputs() -> dict:
        generator = ctx.generator()
        if type_name == "f32":
            x = torch.rand(n, device=ctx.device, generator=generator) * 2 - 1
        elif type_name == "u64":
            x = torch.randint(0, 2000, (n,), dtype=torch.int64, device=ctx.device,
                              generator=generator).view(dtype)
        else:
            x = torch.randint(-1000, 1000, (n,), dtype=dtype, device=ctx.device,
                              generator=generator)
        return {"x": x, "y": torch.empty_like(x)}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x = inputs["x"]
        if out.dtype != x.dtype:
            raise CheckFailed(f"output dtype {out.dtype}, expected {x.dtype}")
        if type_name == "f32":
            if full:
                ref = torch.cumsum(x.to(torch.float64), 0)
            else:
                ref = torch.cumsum(x.cpu().to(torch.float64), 0)
                out = out.cpu()
            return expect_close(torch, out, ref, tolerance)
        xs, ys = signed_view(torch, x), signed_view(torch, out)
        if full:
            # Exact, in the type's own wrapping arithmetic: y[0] = x[0] and
            # y[i] - y[i-1] = x[i] for every i (covers every element).
            if not torch.equal(ys[:1], xs[:1]):
                raise CheckFailed("y[0] != x[0]")
            differences = ys[1:] - ys[:-1]
            return expect_equal(torch, differences, xs[1:])
        ref = torch.cumsum(xs.cpu().to(torch.int64), 0)
        if size == 4:  # wrap to 32 bits as the device does
            ref = ((ref + (1 << 31)) % (1 << 32)) - (1 << 31)
        return expect_equal(torch, ys.cpu().to(torch.int64), ref)

    return Workload("scan", type_name, shape_1d(n), make_inputs, 2 * n * size,
                    lambda inputs: scan_bytes(n, size), check)


def scan_peers(ctx: Context, type_name: str) -> list[Peer]:
    torch = ctx.torch
    dtype = torch_dtype(torch, type_name)
    peers = []

    def bind_torch(inputs: dict) -> Bound:
        x, y = inputs["x"], inputs["y"]
        return Bound(lambda: poison(torch, y),
                     lambda: torch.cumsum(x, 0, dtype=dtype, out=y),
                     lambda: y)

    peers.append(Peer("torch.cumsum", ctx.torch_clock, bind_torch))

    if ctx.cupy is not None:
        cp = ctx.cupy

        def bind_cupy(inputs: dict) -> Bound:
            x, y = inputs["x"], inputs["y"]
            xc, yc = ctx.to_cupy(x), ctx.to_cupy(y)
            ctx.torch_clock.synchronize()

            def prepare():
                if y.element_size() == 4:
                    yc.view(cp.int32).fill(POISON_4)
                else:
                    yc.view(cp.int64).fill(POISON_8)

            return Bound(prepare, lambda: cp.cumsum(xc, dtype=xc.dtype, out=yc), lambda: y)

        def bind_cub(inputs: dict) -> Bound:
            x, y = inputs["x"], inputs["y"]
            xc, yc = ctx.to_cupy(x), ctx.to_cupy(y)
            ctx.torch_clock.synchronize()

            def run():
                if ctx.cub_scan(yc, ctx.cub_cumsum_op) is None:
                    raise RuntimeError(f"CuPy's CUB scan does not take {yc.dtype}")

            def prepare():  # the scan is in place: y = x again, a plain memcpy
                yc.data.copy_from_device_async(xc.data, xc.nbytes)

            return Bound(prepare, run, lambda: y)

        if ctx.cub_scan is not None:
            peers.append(Peer("cupy.cumsum(cub)", ctx.cupy_clock, bind_cupy, optional=True))
            peers.append(Peer("cupy.cub_scan(in-place)", ctx.cupy_clock, bind_cub,
                              optional=True))
    return peers


def run_scan(ctx: Context) -> None:
    torch = ctx.torch
    print("\n== scan: inclusive sum", flush=True)
    ctx.note("torch.cumsum is called with dtype=x.dtype and out=y: without dtype, int32 input "
             "gives an int64 output (12n bytes moved instead of 8n)")
    for type_name in ctx.args.types or SCAN_TYPES:
        if type_name not in SCAN_TYPES:
            ctx.note(f"scan {type_name}: not a scan type ({', '.join(SCAN_TYPES)}); skipped")
            continue
        if torch_dtype(torch, type_name) is None:
            ctx.note(f"scan {type_name}: this torch has no {type_name} dtype; skipped")
            continue
        peers = scan_peers(ctx, type_name)
        if type_name == "u64":
            peers = [p for p in peers if p.algorithm != "torch.cumsum" or torch_u64_cumsum(ctx)]
        small = [scan_workload(ctx, n, type_name) for n in (1, 4097, 1_000_003)]
        for n in ctx.args.sizes or DEFAULT_SIZES:
            run_workload(ctx, small, scan_workload(ctx, n, type_name), peers)


def torch_u64_cumsum(ctx: Context) -> bool:
    torch = ctx.torch
    try:
        x = torch.ones(4, dtype=torch.int64, device=ctx.device).view(torch.uint64)
        torch.cumsum(x, 0, dtype=torch.uint64)
        torch.cuda.synchronize()
        return True
    except (RuntimeError, TypeError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        ctx.note(f"torch.cumsum u64 skipped: torch {torch.__version__} has no CUDA uint64 "
                 f"cumsum ({first})")
        return False


# --- compact --------------------------------------------------------------


def compact_workload(ctx: Context, n: int, by_flags: bool) -> Workload:
    torch = ctx.torch
    threshold = 0

    def make_inputs() -> dict:
        generator = ctx.generator()
        x = torch.randint(-(1 << 30), 1 << 30, (n,), dtype=torch.int32, device=ctx.device,
                          generator=generator)
        inputs = {"x": x}
        if by_flags:
            # Byte flags as parprims draws them: zero with probability 0.5,
            # otherwise 1..255; torch wants a bool mask (converted untimed).
            keep = torch.rand(n, device=ctx.device, generator=generator) < 0.5
            values = torch.randint(1, 256, (n,), dtype=torch.uint8, device=ctx.device,
                                   generator=generator)
            flags = torch.where(keep, values, torch.zeros_like(values))
            inputs["mask"] = flags != 0
            del keep, values, flags
            inputs["kept"] = int(inputs["mask"].sum().item())
        else:
            inputs["kept"] = int((x > threshold).sum().item())
        return inputs

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x = inputs["x"]
        mask = inputs["mask"] if by_flags else x > threshold
        if out.numel() != inputs["kept"]:
            raise CheckFailed(f"{out.numel()} kept, expected {inputs['kept']}")
        if full:  # an independent path: nonzero + index_select
            ref = torch.index_select(x, 0, torch.nonzero(mask).squeeze(1))
            return expect_equal(torch, out, ref)
        return expect_equal(torch, out.cpu(), x.cpu()[mask.cpu()])

    if by_flags:
        declared = lambda inputs: compact_flags_bytes(n, inputs["kept"])  # noqa: E731
        set_bytes = 4 * n + n + 4 * n
    else:
        declared = lambda inputs: compact_predicate_bytes(n, inputs["kept"])  # noqa: E731
        set_bytes = 4 * n + 4 * n
    return Workload("compact", "i32", shape_1d(n), make_inputs, set_bytes, declared, check)


def run_compact(ctx: Context) -> None:
    torch = ctx.torch
    threshold = 0
    print("\n== compact: keep x[i] where flag[i] != 0 (50 %), or where x[i] > 0", flush=True)

    def bind_masked(inputs: dict) -> Bound:
        holder = []

        def run():
            holder[:] = [torch.masked_select(inputs["x"], inputs["mask"])]

        return Bound(holder.clear, run, lambda: holder[0])

    def bind_predicate(inputs: dict) -> Bound:
        holder = []

        def run():
            x = inputs["x"]
            holder[:] = [x[x > threshold]]

        return Bound(holder.clear, run, lambda: holder[0])

    small = [1, 4097, 1_000_003]
    for n in ctx.args.sizes or DEFAULT_SIZES:
        run_workload(ctx, [compact_workload(ctx, m, True) for m in small],
                     compact_workload(ctx, n, True),
                     [Peer("torch.masked_select", ctx.torch_clock, bind_masked)])
        run_workload(ctx, [compact_workload(ctx, m, False) for m in small],
                     compact_workload(ctx, n, False),
                     [Peer("torch.x[x>t]", ctx.torch_clock, bind_predicate)])


# --- transpose ------------------------------------------------------------


def transpose_workload(ctx: Context, rows: int, cols: int) -> Workload:
    torch = ctx.torch

    def make_inputs() -> dict:
        generator = ctx.generator()
        return {"x": torch.rand(rows, cols, device=ctx.device, generator=generator) * 2 - 1}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x = inputs["x"]
        if not out.is_contiguous():
            raise CheckFailed("output is not contiguous")
        if full:
            return expect_equal(torch, out, x.t())
        return expect_equal(torch, out.cpu(), x.cpu().t().contiguous())

    return Workload("transpose", "f32", shape_matrix(rows, cols), make_inputs, 8 * rows * cols,
                    lambda inputs: transpose_bytes(rows, cols), check)


def run_transpose(ctx: Context) -> None:
    print("\n== transpose: y = x^T, f32 row-major", flush=True)

    def bind(inputs: dict) -> Bound:
        holder = []

        def run():
            holder[:] = [inputs["x"].t().contiguous()]

        return Bound(holder.clear, run, lambda: holder[0])

    small = [transpose_workload(ctx, r, c) for r, c in ((1, 5), (33, 1), (1000, 777))]
    for rows, cols in ctx.args.dims:
        run_workload(ctx, small, transpose_workload(ctx, rows, cols),
                     [Peer("torch.t().contiguous()", ctx.torch_clock, bind)])


# --- matvec ---------------------------------------------------------------


def matvec_workload(ctx: Context, rows: int, cols: int, transposed: bool) -> Workload:
    torch = ctx.torch
    x_len, y_len = (rows, cols) if transposed else (cols, rows)

    def make_inputs() -> dict:
        generator = ctx.generator()
        a = torch.rand(rows, cols, device=ctx.device, generator=generator) * 2 - 1
        x = torch.rand(x_len, device=ctx.device, generator=generator) * 2 - 1
        return {"a": a, "x": x, "y": torch.empty(y_len, device=ctx.device)}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        a, x = inputs["a"], inputs["x"]
        if not full:
            a, x, out = a.cpu(), x.cpu(), out.cpu()
        a64 = a.to(torch.float64)
        ref = torch.mv(a64.t() if transposed else a64, x.to(torch.float64))
        return expect_close(torch, out, ref, tolerance)

    return Workload("matvec", "f32", shape_matrix(rows, cols, transposed), make_inputs,
                    4 * (rows * cols + rows + cols),
                    lambda inputs: matvec_bytes(rows, cols), check)


def run_matvec(ctx: Context) -> None:
    torch = ctx.torch
    print("\n== matvec: y = A x and y = A^T x, f32 (cuBLAS gemv through torch.mv)", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    ctx.note("matvec: torch.backends.cuda.matmul.allow_tf32 = False; A^T x is "
             "torch.mv(A.t(), x) on the row-major A, shape suffix /T")

    def bind_for(transposed: bool):
        def bind(inputs: dict) -> Bound:
            a, x, y = inputs["a"], inputs["x"], inputs["y"]
            matrix = a.t() if transposed else a
            return Bound(lambda: poison(torch, y), lambda: torch.mv(matrix, x, out=y),
                         lambda: y)
        return bind

    for transposed in (False, True):
        small = [matvec_workload(ctx, r, c, transposed) for r, c in ((1, 5), (5, 1), (1000, 777))]
        for rows, cols in ctx.args.dims:
            run_workload(ctx, small, matvec_workload(ctx, rows, cols, transposed),
                         [Peer("torch.mv(cuBLAS)", ctx.torch_clock, bind_for(transposed))])


# --- conv -----------------------------------------------------------------


def conv_workload(ctx: Context, height: int, width: int, k: int) -> Workload:
    torch = ctx.torch
    functional = torch.nn.functional

    def make_inputs() -> dict:
        generator = ctx.generator()
        image = torch.rand(1, 1, height, width, device=ctx.device, generator=generator) * 2 - 1
        weight = torch.rand(1, 1, k, k, device=ctx.device, generator=generator) * 2 - 1
        return {"image": image, "weight": weight}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        image, weight = inputs["image"], inputs["weight"]
        if not full:
            image, weight, out = image.cpu(), weight.cpu(), out.cpu()
        # The float64 reference needs no autotuning: benchmark mode off for it.
        benchmark = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = False
        try:
            ref = functional.conv2d(image.to(torch.float64), weight.to(torch.float64))
        finally:
            torch.backends.cudnn.benchmark = benchmark
        return expect_close(torch, out, ref, tolerance)

    return Workload("conv", "f32", shape_conv(height, width, k), make_inputs,
                    4 * (height * width + conv_outputs(height, width, k)),
                    lambda inputs: conv_bytes(height, width, k), check)


def run_conv(ctx: Context) -> None:
    torch = ctx.torch
    functional = torch.nn.functional
    print("\n== conv: valid 2-D cross-correlation, f32, one channel (cuDNN through F.conv2d)",
          flush=True)
    torch.backends.cudnn.benchmark = True
    ctx.note("conv: cudnn.benchmark = True; F.conv2d(cuDNN) runs with cudnn.allow_tf32 = False "
             "(fair f32), F.conv2d(cuDNN+TF32) with allow_tf32 = True (torch's default)")

    def bind_for(allow_tf32: bool):
        def bind(inputs: dict) -> Bound:
            holder = []

            def prepare():
                torch.backends.cudnn.allow_tf32 = allow_tf32
                holder.clear()

            def run():
                holder[:] = [functional.conv2d(inputs["image"], inputs["weight"])]

            return Bound(prepare, run, lambda: holder[0])
        return bind

    peers = [
        Peer("F.conv2d(cuDNN)", ctx.torch_clock, bind_for(False), tolerance=1e-4),
        # TF32 operands keep 10 mantissa bits: ~3e-4 relative error expected.
        Peer("F.conv2d(cuDNN+TF32)", ctx.torch_clock, bind_for(True), tolerance=1e-2),
    ]
    for k in ctx.args.kernels:
        small = [conv_workload(ctx, h, w, k) for h, w in ((k, k), (k + 30, k + 1), (300, 257))]
        for height, width in ctx.args.conv_dims:
            if height < k or width < k:
                ctx.note(f"conv {height}x{width} with K = {k}: no valid outputs; skipped")
                continue
            run_workload(ctx, small, conv_workload(ctx, height, width, k), peers)
    torch.backends.cudnn.allow_tf32 = True

# --- reduce ---------------------------------------------------------------


def scalar(out) -> float:
    """The value of a 0-d torch tensor or CuPy array (waits for it)."""
    return out.item()


def element_size(out) -> int:
    """Bytes per element of a torch tensor or a CuPy array."""
    return out.element_size() if hasattr(out, "element_size") else int(out.itemsize)


def reduce_workload(ctx: Context, n: int, type_name: str, argmax: bool = False) -> Workload:
    """Sum (or argmax) of n elements to one value on the device."""
    torch = ctx.torch
    dtype = torch_dtype(torch, type_name)
    size = ELEMENT_BYTES[type_name]

    def make_inputs() -> dict:
        generator = ctx.generator()
        if argmax:
            x = torch.rand(n, device=ctx.device, generator=generator) * 2 - 1
        elif type_name == "f32":
            # Whole numbers in [-8, 8]: every partial sum is exact in any order.
            x = torch.randint(-8, 9, (n,), dtype=torch.int32, device=ctx.device,
                              generator=generator).to(torch.float32)
            if n > 0 and not bool(x.any()):
                x[0] = 1.0
        else:
            x = torch.randint(-1000, 1000, (n,), dtype=dtype, device=ctx.device,
                              generator=generator)
            if n > 0 and not bool(x.any()):
                x[0] = 1
        return {"x": x}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x = inputs["x"] if full else inputs["x"].cpu()
        if argmax:
            index = int(scalar(out))
            top = x.max()
            first = int(torch.nonzero(x == top)[0, 0].item())
            if index != first:
                raise CheckFailed(f"index {index} (value {x[index].item() if 0 <= index < n else '?'}),"
                                  f" expected {first}, the first index of the maximum {top.item()}")
            return f"{int((x == top).sum().item())} ties"
        got = scalar(out)
        ref = x.to(torch.float64).sum().item()
        if type_name == "f32":
            bound = sum_tolerance(n, x.abs().to(torch.float64).sum().item())
            if not abs(got - ref) <= bound:  # NaN fails too
                raise CheckFailed(f"sum {got}, expected {ref} (allowed ±{bound:.3g})")
            return ""
        ref = int(ref)
        if element_size(out) == 4:
            ref = ((ref + (1 << 31)) % (1 << 32)) - (1 << 31)  # an int32 result wraps
        if int(got) != ref:
            raise CheckFailed(f"sum {int(got)}, expected {ref}")
        return ""

    return Workload("reduce", type_name, shape_1d(n), make_inputs, n * size,
                    lambda inputs: reduce_bytes(n, size), check)


def reduce_peers(ctx: Context, type_name: str) -> list[Peer]:
    torch = ctx.torch

    def bind_torch(inputs: dict) -> Bound:
        holder = []
        x = inputs["x"]

        def run():
            holder[:] = [torch.sum(x)]

        return Bound(holder.clear, run, lambda: holder[0])

    def bind_torch_same_type(inputs: dict) -> Bound:
        holder = []
        x = inputs["x"]

        def run():
            holder[:] = [torch.sum(x, dtype=x.dtype)]

        return Bound(holder.clear, run, lambda: holder[0])

    peers = [Peer("torch.sum", ctx.torch_clock, bind_torch)]
    if type_name != "f32":
        peers.append(Peer("torch.sum(dtype=x.dtype)", ctx.torch_clock, bind_torch_same_type))
    if ctx.cupy is not None and ctx.cub_reduction is not None:
        cp = ctx.cupy

        def bind_cupy(inputs: dict) -> Bound:
            xc = ctx.to_cupy(inputs["x"])
            ctx.torch_clock.synchronize()
            # The CUB path or nothing: cub_reduction returns None when CUB
            # cannot take the type, and cupy.sum would then time CuPy's own
            # reduction kernel under the CUB name.
            if ctx.cub_reduction(xc, ctx.cub_sum_op, dtype=xc.dtype) is None:
                raise RuntimeError(f"CuPy's CUB reduction does not take {xc.dtype}")
            holder = []

            def run():
                holder[:] = [cp.sum(xc, dtype=xc.dtype)]

            return Bound(holder.clear, run, lambda: holder[0])

        peers.append(Peer("cupy.sum(cub)", ctx.cupy_clock, bind_cupy, optional=True))
    return peers


def run_reduce(ctx: Context) -> None:
    torch = ctx.torch
    print("\n== reduce: sum of the whole input, argmax (first index of the maximum)", flush=True)
    ctx.note("reduce: torch.sum(x) on int32 returns (and accumulates in) int64; cupy.sum is "
             "called with dtype=x.dtype so that CuPy hands it to CUB")
    sizes = ctx.args.sizes or REDUCE_SIZES
    types = REDUCE_DEFAULT_TYPES if ctx.args.types is None else \
        [t for t in ctx.args.types if t in REDUCE_TYPES]
    if ctx.args.types is not None and not types:
        ctx.note("reduce: none of --types is a sum type (i32, f32, i64); sums skipped")
    small_sizes = (1, 4097, 1_000_003)
    for type_name in types:
        peers = reduce_peers(ctx, type_name)
        small = [reduce_workload(ctx, m, type_name) for m in small_sizes]
        for n in sizes:
            run_workload(ctx, small, reduce_workload(ctx, n, type_name), peers)

    def bind_argmax(inputs: dict) -> Bound:
        holder = []
        x = inputs["x"]

        def run():
            holder[:] = [torch.argmax(x)]

        return Bound(holder.clear, run, lambda: holder[0])

    small = [reduce_workload(ctx, m, "f32", argmax=True) for m in small_sizes]
    for n in sizes:
        run_workload(ctx, small, reduce_workload(ctx, n, "f32", argmax=True),
                     [Peer("torch.argmax", ctx.torch_clock, bind_argmax)])


# --- histogram ------------------------------------------------------------


def reference_counts(torch, x, bins: int):
    """Counts of the values 0..bins-1 of x in int64 by scatter_add of ones,
    in chunks (an independent route from bincount and histc)."""
    counts = torch.zeros(bins, dtype=torch.int64, device=x.device)
    chunk = 1 << 26
    for start in range(0, x.numel(), chunk):
        index = x[start:start + chunk].to(torch.int64)
        counts.scatter_add_(0, index, torch.ones_like(index))
    return counts


def histogram_workload(ctx: Context, n: int, type_name: str, bins: int,
                       one_bin: bool) -> Workload:
    """n values of type_name in [0, bins) (or all one value), bins even bins."""
    torch = ctx.torch
    size = ELEMENT_BYTES[type_name]

    def make_inputs() -> dict:
        generator = ctx.generator()
        if one_bin:
            value = int(torch.randint(0, bins, (1,), generator=generator,
                                      device=ctx.device).item())
            x = torch.full((n,), value, dtype=torch.int32, device=ctx.device)
        else:
            x = torch.randint(0, bins, (n,), dtype=torch.int32, device=ctx.device,
                              generator=generator)
        if type_name != "i32":
            x = x.to(torch_dtype(torch, type_name))
        return {"x": x}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x = inputs["x"] if full else inputs["x"].cpu()
        if not full:
            out = out.cpu()
        if tuple(out.shape) != (bins,):
            raise CheckFailed(f"{tuple(out.shape)} counts, expected ({bins},)")
        if out.is_floating_point():
            if not bool((out == out.round()).all()):
                raise CheckFailed("float counts that are not whole numbers")
        counts = out.to(torch.int64)
        if int(counts.sum().item()) != n:
            raise CheckFailed(f"counts add up to {int(counts.sum().item())}, expected {n}")
        return expect_equal(torch, counts, reference_counts(torch, x, bins))

    return Workload("histogram", type_name, shape_histogram(n, bins, one_bin), make_inputs,
                    n * size, lambda inputs: histogram_bytes(n, size), check)


def run_histogram(ctx: Context) -> None:
    torch = ctx.torch
    print("\n== histogram: even bins over [0, bins), counts of every bin", flush=True)
    ctx.note("histogram: torch.histc runs on float32 input (CUDA histc takes no integer "
             "tensors): \"torch.histc\" (type f32) on input converted before timing, "
             "\"torch.histc(x.float())\" (type i32) with the conversion timed; "
             "torch.bincount reads min and max first and synchronises with the host")

    def bind_bincount(bins: int):
        def bind(inputs: dict) -> Bound:
            holder = []
            x = inputs["x"]

            def run():
                holder[:] = [torch.bincount(x, minlength=bins)]

            return Bound(holder.clear, run, lambda: holder[0])
        return bind

    def bind_histc(bins: int, convert: bool):
        def bind(inputs: dict) -> Bound:
            holder = []
            x = inputs["x"]

            def run():
                holder[:] = [torch.histc(x.float() if convert else x, bins, 0, bins)]

            return Bound(holder.clear, run, lambda: holder[0])
        return bind

    sizes = ctx.args.sizes or DEFAULT_SIZES
    for type_name, bins, one_bin in HISTOGRAM_CASES:
        peers = []
        if type_name in ("i32", "u8"):
            peers.append(Peer("torch.bincount", ctx.torch_clock, bind_bincount(bins)))
        if type_name == "i32" and not one_bin:
            peers.append(Peer("torch.histc(x.float())", ctx.torch_clock, bind_histc(bins, True)))
        if type_name == "f32" and not one_bin:
            peers.append(Peer("torch.histc", ctx.torch_clock, bind_histc(bins, False)))
        small = [histogram_workload(ctx, m, type_name, bins, one_bin)
                 for m in (1, 4097, 1_000_003)]
        for n in sizes:
            run_workload(ctx, small, histogram_workload(ctx, n, type_name, bins, one_bin), peers)


# --- sort -----------------------------------------------------------------

# Sort cases: (key type, element count, case). "uniform": keys uniform over
# the type (f32: normal, both signs); "distinct65536": keys drawn from 65 536
# distinct random values; "sorted": already ascending; "argsort": values and
# indices (i32 keys, the permutation as the payload). 64-bit keys at 2^27,
# the others at 2^28, and 2^16 for the latency of one small sort.
SORT_CASES = (("u32", 1 << 28, "uniform"), ("i32", 1 << 28, "uniform"),
              ("f32", 1 << 28, "uniform"), ("u64", 1 << 27, "uniform"),
              ("i64", 1 << 27, "uniform"), ("i32", 1 << 28, "distinct65536"),
              ("i32", 1 << 28, "sorted"), ("i32", 1 << 28, "argsort"),
              ("u32", 1 << 16, "uniform"), ("i32", 1 << 16, "uniform"))
TOPK_N = 1 << 28
TOPK_KS = (16, 1024)


def torch_mix64(z):
    """mix64 on an int64 tensor (the bits of uint64, wrapping): logical
    right shifts by masking the arithmetic ones."""
    def srl(t, s):
        return (t >> s) & ((1 << (64 - s)) - 1)
    z = (z ^ srl(z, 30)) * signed64(SPMV_MIX1)
    z = (z ^ srl(z, 27)) * signed64(SPMV_MIX2)
    return z ^ srl(z, 31)


def signed64(value: int) -> int:
    """The int64 with the same bits as the unsigned 64-bit `value`."""
    value &= MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


def sort_order_key(torch, bits, type_name: str):
    """Keys as values whose ascending order is the type's: int64 for the
    integer types (u32 zero-extended, u64 with the sign bit flipped),
    float32 for f32. `bits` is the int32/int64 bit view."""
    if type_name == "f32":
        return bits.view(torch.float32)
    if type_name == "u32":
        return bits.to(torch.int64) & 0xFFFFFFFF
    if type_name == "u64":
        return bits ^ signed64(1 << 63)
    return bits.to(torch.int64) if type_name == "i32" else bits


def multiset_hash(torch, bits) -> int:
    """An order-independent hash of the keys' bits: the wrapping sum of
    mix64 of each (zero-extended) key, in chunks. Equal for any
    permutation; different for other multisets with overwhelming
    probability."""
    total = 0
    chunk = 1 << 26
    for start in range(0, bits.numel(), chunk):
        part = bits[start:start + chunk].to(torch.int64)
        if bits.element_size() == 4:
            part = part & 0xFFFFFFFF
        total = (total + int(torch_mix64(part).sum().item())) & MASK64
    return total


def check_sorted(torch, key, what: str = "keys") -> None:
    if key.numel() > 1 and not bool((key[1:] >= key[:-1]).all().item()):
        bad = int((key[1:] < key[:-1]).nonzero()[0, 0].item())
        raise CheckFailed(f"{what} not ascending at {bad}: {key[bad].item()} > "
                          f"{key[bad + 1].item()}")


def sort_workload(ctx: Context, n: int, type_name: str, case: str) -> Workload:
    """n keys of type_name; the check takes the sorted keys (a tensor or a
    CuPy array), a (values, indices) pair, or the indices alone (argsort)."""
    torch = ctx.torch
    size = ELEMENT_BYTES[type_name]
    argsort = case == "argsort"

    def draw_bits(generator, count):
        if size == 4:
            return torch.randint(-(1 << 31), (1 << 31) - 1, (count,), dtype=torch.int32,
                                 device=ctx.device, generator=generator)
        high = torch.randint(-(1 << 31), (1 << 31) - 1, (count,), dtype=torch.int64,
                             device=ctx.device, generator=generator)
        low = torch.randint(0, (1 << 31) - 1, (count,), dtype=torch.int64, device=ctx.device,
                            generator=generator)
        low = (low << 1) | torch.randint(0, 2, (count,), dtype=torch.int64, device=ctx.device,
                                         generator=generator)
        return (high << 32) | low

    def make_inputs() -> dict:
        generator = ctx.generator()
        if type_name == "f32":
            x = torch.randn(n, device=ctx.device, generator=generator)
        elif case == "distinct65536":
            pool = draw_bits(generator, 65536)
            x = pool[torch.randint(0, 65536, (n,), device=ctx.device, generator=generator)]
            del pool
        else:
            x = draw_bits(generator, n)
            if case == "sorted":
                x = torch.sort(x).values
        dtype = torch_dtype(torch, type_name)
        if x.dtype != dtype:
            x = x.view(dtype)
        return {"x": x, "hash": multiset_hash(torch, ctx.bits_of(x))}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x = inputs["x"]
        x_bits = ctx.bits_of(x)
        note = ""
        indices = None
        if argsort or isinstance(out, tuple):
            if isinstance(out, tuple):
                values, indices = out
            else:
                values, indices = None, out
            indices = indices if isinstance(indices, torch.Tensor) else \
                torch.as_tensor(indices, device=ctx.device)
            indices = indices.to(torch.int64)
            if tuple(indices.shape) != (n,):
                raise CheckFailed(f"{tuple(indices.shape)} indices, expected ({n},)")
            if n and (int(indices.min().item()) < 0 or int(indices.max().item()) >= n):
                raise CheckFailed("an index out of range")
            seen = torch.zeros(n, dtype=torch.uint8, device=ctx.device)
            seen[indices] = 1
            if not bool(seen.all().item()):
                raise CheckFailed("the indices are not a permutation")
            del seen
            gathered = x_bits[indices]
            if values is not None:
                expect_equal(torch, ctx.bits_of(values), gathered)
            out_bits = gathered
        else:
            out_bits = ctx.bits_of(out)
        if tuple(out_bits.shape) != (n,):
            raise CheckFailed(f"{tuple(out_bits.shape)} keys, expected ({n},)")
        key = sort_order_key(torch, out_bits, type_name)
        check_sorted(torch, key)
        if not full:
            # Small sizes: the whole output against the CPU's sort.
            reference = torch.sort(sort_order_key(torch, x_bits, type_name).cpu()).values
            expect_equal(torch, key.cpu(), reference)
        else:
            got = multiset_hash(torch, out_bits)
            if got != inputs["hash"]:
                raise CheckFailed("the sorted keys are not a permutation of the input "
                                  "(multiset hashes differ)")
        if indices is not None and n > 1:
            equal = key[1:] == key[:-1]
            stable = bool((indices[1:][equal] > indices[:-1][equal]).all().item())
            ties = int(equal.sum().item())
            note = f"{ties} ties, {'stable' if stable else 'not stable'}"
        return note

    value_bytes = 4 if argsort else 0
    declared = radix_sort_bytes(n, size, value_bytes)
    set_bytes = n * size * 2 + (n * 8 if argsort else 0)
    return Workload("sort", type_name, shape_sort(n, case), make_inputs, set_bytes,
                    lambda inputs: declared, check, items=n)


def topk_workload(ctx: Context, n: int, k: int) -> Workload:
    """The k largest of n f32 (normal), with their indices, largest first."""
    torch = ctx.torch

    def make_inputs() -> dict:
        return {"x": torch.randn(n, device=ctx.device, generator=ctx.generator())}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x = inputs["x"]
        values, indices = out
        m = min(k, n)
        if tuple(values.shape) != (m,) or tuple(indices.shape) != (m,):
            raise CheckFailed(f"shapes {tuple(values.shape)}, {tuple(indices.shape)}; "
                              f"expected ({m},)")
        if not torch.equal(x[indices], values):
            raise CheckFailed("x[indices] != values")
        if torch.unique(indices).numel() != m:
            raise CheckFailed("repeated indices")
        if m > 1 and not bool((values[1:] <= values[:-1]).all().item()):
            raise CheckFailed("values not in descending order")
        # Exactly the k largest: every key above the k-th is among them, in order.
        threshold = values[-1]
        above = torch.sort(x[x > threshold], descending=True).values
        if above.numel() >= m or not torch.equal(values[:above.numel()], above):
            raise CheckFailed("not the k largest keys")
        if not bool((values[above.numel():] == threshold).all().item()) or \
                int((x == threshold).sum().item()) < m - above.numel():
            raise CheckFailed("not the k largest keys (at the k-th value)")
        return ""

    return Workload("sort", "f32", shape_sort(n, f"top{k}"), make_inputs, 4 * n,
                    lambda inputs: topk_bytes(n, k), check, items=n)


def run_sort(ctx: Context) -> None:
    torch = ctx.torch
    print("\n== sort: keys ascending (cupy.sort / CUB radix sort, torch.sort), argsort, topk",
          flush=True)
    ctx.note("sort: GB/s and the fraction of the ceiling are on the bytes an 8-bit-digit LSD "
             "radix sort moves, n*key + 2*passes*n*(key + value) (36n for u32 keys, 68n for "
             "i32 keys with i32 values, 136n for u64): a sort at 1.0 runs at memory speed; "
             "the G/s in the check column is keys per second")
    ctx.note("sort: torch.sort always returns int64 indices too (it is timed so, declared "
             "bytes as keys only); cupy.sort(x) copies x and sorts the copy in place "
             "(thrust, CUB's radix sort): cupy.ndarray.sort(in-place) times the sort alone, "
             "the copy untimed")
    cp = ctx.cupy

    def bind_torch_sort(inputs: dict) -> Bound:
        holder = []
        x = inputs["x"]

        def run():
            holder[:] = [tuple(torch.sort(x))]

        return Bound(holder.clear, run, lambda: holder[0])

    def bind_cupy_sort(inputs: dict) -> Bound:
        xc = ctx.to_cupy(inputs["x"])
        ctx.torch_clock.synchronize()
        holder = []

        def run():
            holder[:] = [cp.sort(xc)]

        return Bound(holder.clear, run, lambda: holder[0])

    def bind_cupy_in_place(inputs: dict) -> Bound:
        xc = ctx.to_cupy(inputs["x"])
        yc = cp.empty_like(xc)
        ctx.torch_clock.synchronize()

        def prepare():  # y = x again, a plain memcpy, untimed
            yc.data.copy_from_device_async(xc.data, xc.nbytes)

        return Bound(prepare, lambda: yc.sort(), lambda: yc)

    def bind_cupy_argsort(inputs: dict) -> Bound:
        xc = ctx.to_cupy(inputs["x"])
        ctx.torch_clock.synchronize()
        holder = []

        def run():
            holder[:] = [cp.argsort(xc)]

        return Bound(holder.clear, run, lambda: holder[0])

    cases = list(SORT_CASES)
    if ctx.args.sizes:
        cases = list(dict.fromkeys((t, n, c) for t, _, c in SORT_CASES for n in ctx.args.sizes))
    if ctx.args.types:
        cases = [case for case in cases if case[0] in ctx.args.types]
    for type_name, n, case in cases:
        if torch_dtype(torch, type_name) is None:
            ctx.note(f"sort {type_name}: this torch has no {type_name} dtype; skipped")
            continue
        # torch.sort of the unsigned types is in some torch versions only:
        # a refusal is a printed note, not a failure.
        unsigned = type_name in ("u32", "u64")
        peers = [Peer("torch.sort", ctx.torch_clock, bind_torch_sort, optional=unsigned)]
        if cp is not None:
            if case == "argsort":
                peers.append(Peer("cupy.argsort", ctx.cupy_clock, bind_cupy_argsort,
                                  optional=True))
            else:
                peers.append(Peer("cupy.sort", ctx.cupy_clock, bind_cupy_sort, optional=True))
                peers.append(Peer("cupy.ndarray.sort(in-place)", ctx.cupy_clock,
                                  bind_cupy_in_place, optional=True))
        small = [sort_workload(ctx, m, type_name, case) for m in (1, 4097, 1_000_003)]
        run_workload(ctx, small, sort_workload(ctx, n, type_name, case), peers)

    def bind_topk(k: int):
        def bind(inputs: dict) -> Bound:
            holder = []
            x = inputs["x"]

            def run():
                holder[:] = [tuple(torch.topk(x, min(k, x.numel())))]

            return Bound(holder.clear, run, lambda: holder[0])
        return bind

    if ctx.args.types and "f32" not in ctx.args.types:
        return
    for k in TOPK_KS:
        small = [topk_workload(ctx, m, k) for m in (1, 4097, 1_000_003)]
        for n in ctx.args.sizes or [TOPK_N]:
            run_workload(ctx, small, topk_workload(ctx, n, k),
                         [Peer("torch.topk", ctx.torch_clock, bind_topk(k))])


# --- segmented ------------------------------------------------------------

SEGMENT_MEAN = 1000  # segmented reduce: lengths uniform in [1, 2*SEGMENT_MEAN - 1]
RUN_MAX = 31  # run-length encode: run lengths uniform in [1, 31] (mean 16), as the Rust runs lab
EXPAND_MEAN = 4  # repeat_interleave: counts uniform in [0, 2*EXPAND_MEAN]


def random_lengths(torch, generator, device, n: int, low: int, high: int):
    """Segment lengths uniform in [low, high] adding up to exactly n (the
    last one cut short), int64 on the device."""
    parts, total = [], 0
    while total < n:
        count = max(16, 2 * (n - total) // (low + high) + 16)
        part = torch.randint(low, high + 1, (count,), dtype=torch.int64, device=device,
                             generator=generator)
        parts.append(part)
        total += int(part.sum().item())
    lengths = torch.cat(parts)
    ends = torch.cumsum(lengths, 0)
    last = int(torch.searchsorted(ends, torch.tensor([n], device=device)).item())
    lengths = lengths[:last + 1].clone()
    lengths[last] -= int(ends[last].item()) - n
    return lengths


def segmented_reduce_workload(ctx: Context, n: int) -> Workload:
    """Sums of n f32 (uniform in [-1, 1)) by segments of ~SEGMENT_MEAN."""
    torch = ctx.torch

    def make_inputs() -> dict:
        generator = ctx.generator()
        x = torch.rand(n, device=ctx.device, generator=generator) * 2 - 1
        lengths = random_lengths(torch, generator, ctx.device, n, 1, 2 * SEGMENT_MEAN - 1)
        offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64, device=ctx.device)
        torch.cumsum(lengths, 0, out=offsets[1:])
        return {"x": x, "lengths": lengths, "offsets": offsets,
                "segments": lengths.numel()}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x, offsets = inputs["x"], inputs["offsets"]
        if not isinstance(out, torch.Tensor):
            out = torch.as_tensor(out, device=ctx.device)
        # An independent route: float64 prefix sums, differences at the offsets.
        prefix = torch.zeros(n + 1, dtype=torch.float64, device=ctx.device)
        torch.cumsum(x.to(torch.float64), 0, out=prefix[1:])
        reference = prefix[offsets[1:]] - prefix[offsets[:-1]]
        return expect_close(torch, out, reference, tolerance)

    # Primitive "segreduce" and shape n/seg1000, as the Rust segreduce lab
    # writes its rows, so that `parprims bench segreduce --compare` pairs them.
    return Workload("segreduce", "f32", shape_segmented(n, f"seg{SEGMENT_MEAN}"), make_inputs,
                    4 * n + 8 * (n // SEGMENT_MEAN + 1),
                    lambda inputs: segmented_reduce_bytes(n, inputs["segments"]), check,
                    items=n)


def run_length_workload(ctx: Context, n: int) -> Workload:
    """n sorted i32 in runs of 1 to RUN_MAX items (uniform, mean 16), each
    run's value 1..3 above the previous one's, from a random base: the
    input of the Rust runs lab (parprims_lab::prims::runs)."""
    torch = ctx.torch

    def make_inputs() -> dict:
        generator = ctx.generator()
        lengths = random_lengths(torch, generator, ctx.device, n, 1, RUN_MAX)
        runs = lengths.numel()
        steps = torch.randint(1, 4, (runs,), dtype=torch.int64, device=ctx.device,
                              generator=generator)
        base = int(torch.randint(-(1 << 30), 0, (1,), generator=generator,
                                 device=ctx.device).item())
        values = (torch.cumsum(steps, 0) + base).to(torch.int32)
        x = torch.repeat_interleave(values, lengths)
        starts = torch.zeros(runs, dtype=torch.int64, device=ctx.device)
        torch.cumsum(lengths[:-1], 0, out=starts[1:])
        del steps, values, lengths
        return {"x": x, "starts": starts, "runs": runs}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        x, starts = inputs["x"], inputs["starts"]
        values, counts = out
        ends = torch.cat([starts[1:], torch.tensor([n], device=ctx.device)])
        expect_equal(torch, values, x[starts])
        expect_equal(torch, counts.to(torch.int64), ends - starts)
        return f"{inputs['runs']} runs"

    # Primitive "runs" and shape n, as the Rust runs lab writes its rows.
    return Workload("runs", "i32", shape_1d(n), make_inputs, 4 * n + 8 * (n // 16 + 1),
                    lambda inputs: run_length_bytes(n, inputs["runs"]), check, items=n)


def expand_workload(ctx: Context, n_in: int) -> Workload:
    """n_in i32 values with i32 counts uniform in [0, 2*EXPAND_MEAN]: an
    output of about EXPAND_MEAN*n_in values."""
    torch = ctx.torch

    def make_inputs() -> dict:
        generator = ctx.generator()
        values = torch.randint(-(1 << 31), (1 << 31) - 1, (n_in,), dtype=torch.int32,
                               device=ctx.device, generator=generator)
        counts = torch.randint(0, 2 * EXPAND_MEAN + 1, (n_in,), dtype=torch.int32,
                               device=ctx.device, generator=generator)
        if not bool(counts.any().item()):
            counts[0] = 1
        return {"values": values, "counts": counts,
                "total": int(counts.sum(dtype=torch.int64).item())}

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        values, counts, total = inputs["values"], inputs["counts"], inputs["total"]
        if tuple(out.shape) != (total,):
            raise CheckFailed(f"{tuple(out.shape)} outputs, expected ({total},)")
        # An independent route: output position p comes from the input whose
        # range of the inclusive prefix sum of the counts holds p.
        ends = torch.cumsum(counts.to(torch.int64), 0)
        chunk = 1 << 26
        for start in range(0, total, chunk):
            positions = torch.arange(start, min(total, start + chunk), device=ctx.device)
            source = torch.searchsorted(ends, positions, right=True)
            expect_equal(torch, out[start:start + chunk], values[source])
        return ""

    expected_out = EXPAND_MEAN * n_in
    return Workload("segmented", "i32", shape_segmented(n_in, f"mean{EXPAND_MEAN}"), make_inputs,
                    8 * n_in + 4 * expected_out,
                    lambda inputs: expand_bytes(n_in, inputs["total"]), check,
                    items=expected_out)


def run_segmented(ctx: Context) -> None:
    torch = ctx.torch
    print("\n== segmented: reduce by segments, run-length encode, repeat_interleave", flush=True)
    ctx.note("segmented: torch.segment_reduce validates its lengths unless unsafe=True "
             "(a pass and a host synchronisation): both are timed; "
             "torch.unique_consecutive and torch.repeat_interleave without output_size "
             "learn their output length on the host inside the timed region; bytes as "
             "issue 21 counts them (4n + 8*segments, 4n + 8*runs, "
             "4*n_in + 4*n_counts + 4*n_out)")
    cp = ctx.cupy

    def bind_segment_reduce(by: str, unsafe: bool = False):
        def bind(inputs: dict) -> Bound:
            holder = []
            x = inputs["x"]
            keyword = {by: inputs[by]}

            def run():
                holder[:] = [torch.segment_reduce(x, "sum", unsafe=unsafe, **keyword)]

            return Bound(holder.clear, run, lambda: holder[0])
        return bind

    def bind_reduceat(inputs: dict) -> Bound:
        xc = ctx.to_cupy(inputs["x"])
        starts = ctx.to_cupy(inputs["offsets"][:-1].contiguous())
        ctx.torch_clock.synchronize()
        holder = []

        def run():
            holder[:] = [cp.add.reduceat(xc, starts)]

        return Bound(holder.clear, run, lambda: holder[0])

    def bind_unique(inputs: dict) -> Bound:
        holder = []
        x = inputs["x"]

        def run():
            holder[:] = [tuple(torch.unique_consecutive(x, return_counts=True))]

        return Bound(holder.clear, run, lambda: holder[0])

    def bind_repeat(sized: bool):
        def bind(inputs: dict) -> Bound:
            holder = []
            values, counts, total = inputs["values"], inputs["counts"], inputs["total"]

            def run():
                if sized:
                    holder[:] = [torch.repeat_interleave(values, counts, output_size=total)]
                else:
                    holder[:] = [torch.repeat_interleave(values, counts)]

            return Bound(holder.clear, run, lambda: holder[0])
        return bind

    small = (1, 4097, 1_000_003)
    reduce_peers_list = [
        Peer("torch.segment_reduce(lengths)", ctx.torch_clock, bind_segment_reduce("lengths")),
        Peer("torch.segment_reduce(offsets)", ctx.torch_clock, bind_segment_reduce("offsets"),
             optional=True),
        Peer("torch.segment_reduce(offsets,unsafe)", ctx.torch_clock,
             bind_segment_reduce("offsets", unsafe=True), optional=True),
    ]
    if cp is not None:
        # CuPy has no public segmented reduce by offsets over CUB; reduceat
        # is its NumPy-style equivalent. The CuPy sources we read (v13)
        # compute it as differences of a float32 cumsum at the offsets, whose
        # rounding grows with n: hence the looser tolerance.
        reduce_peers_list.append(Peer("cupy.add.reduceat", ctx.cupy_clock, bind_reduceat,
                                      tolerance=1e-2, optional=True))
    sizes = ctx.args.sizes or DEFAULT_SIZES
    for n in sizes:
        run_workload(ctx, [segmented_reduce_workload(ctx, m) for m in small],
                     segmented_reduce_workload(ctx, n), reduce_peers_list)
    for n in sizes:
        run_workload(ctx, [run_length_workload(ctx, m) for m in small],
                     run_length_workload(ctx, n),
                     [Peer("torch.unique_consecutive", ctx.torch_clock, bind_unique)])
    for n in sizes:
        n_in = max(1, n // EXPAND_MEAN)
        run_workload(ctx, [expand_workload(ctx, m) for m in small], expand_workload(ctx, n_in),
                     [Peer("torch.repeat_interleave", ctx.torch_clock, bind_repeat(False)),
                      Peer("torch.repeat_interleave(output_size)", ctx.torch_clock,
                           bind_repeat(True), optional=True)])


# --- spmv -----------------------------------------------------------------


def torch_spmv_bits(torch, stream: int, index):
    """spmv_bits on an int64 tensor of counters (the bits of uint64)."""
    base = signed64(SPMV_SEED + stream * SPMV_STREAM + SPMV_GOLDEN)
    return torch_mix64(index * signed64(SPMV_GOLDEN) + base)


def torch_spmv_unit(torch, stream: int, index, open_interval: bool = False):
    mantissa = (torch_spmv_bits(torch, stream, index) >> 11) & ((1 << 53) - 1)
    if open_interval:
        mantissa = mantissa + 1
    return mantissa.to(torch.float64) * 2.0 ** -53


def spmv_matrix(torch, device, rows: int, cols: int, kind: str) -> dict:
    """The benchmark matrix of `kind` (SPMV_KINDS) on the GPU, computed as
    the scalar definition above says (spmv_row_length, spmv_row,
    spmv_x): int32 row offsets and column indices, f32 values and x."""
    chunk = 1 << 25
    r = torch.arange(rows, dtype=torch.int64, device=device)
    if kind == "uniform32":
        lengths = torch.full((rows,), 32, dtype=torch.int64, device=device)
    elif kind == "pareto1.5":
        v = torch.maximum(torch.maximum(torch_spmv_unit(torch, 4, r, True),
                                        torch_spmv_unit(torch, 5, r, True)),
                          torch_spmv_unit(torch, 6, r, True))
        t = v * v
        t = t * 3.0
        # A true division of tensors (a Python number over a tensor is a
        # reciprocal and a product in torch, not correctly rounded), clamped
        # in float64 first: 32/t could pass int64 (never in practice).
        quotient = torch.full_like(t, 32.0) / t
        lengths = torch.clamp(torch.floor(quotient), max=float(cols)).to(torch.int64)
        del v, t
    else:
        raise ValueError(f"unknown SpMV matrix kind {kind!r}")
    offsets = torch.zeros(rows + 1, dtype=torch.int64, device=device)
    torch.cumsum(lengths, 0, out=offsets[1:])
    nnz = int(offsets[-1].item())
    if nnz >= 1 << 31:
        raise ValueError(f"{nnz} non-zeros: past the int32 offsets these peers use")
    # Columns drawn by CSR position, then sorted within each row: one sort
    # of (row << 32 | column).
    keys = torch.empty(nnz, dtype=torch.int64, device=device)
    row_of = torch.repeat_interleave(r, lengths)
    for start in range(0, nnz, chunk):
        k = torch.arange(start, min(nnz, start + chunk), dtype=torch.int64, device=device)
        high = (torch_spmv_bits(torch, 1, k) >> 32) & 0xFFFFFFFF
        keys[start:start + k.numel()] = (row_of[start:start + k.numel()] << 32) | \
            ((high * cols) >> 32)
    del row_of
    keys = torch.sort(keys).values
    col_indices = (keys & 0xFFFFFFFF).to(torch.int32)
    del keys
    values = torch.empty(nnz, dtype=torch.float32, device=device)
    for start in range(0, nnz, chunk):
        k = torch.arange(start, min(nnz, start + chunk), dtype=torch.int64, device=device)
        values[start:start + k.numel()] = (2.0 * torch_spmv_unit(torch, 2, k) - 1.0).to(
            torch.float32)
    c = torch.arange(cols, dtype=torch.int64, device=device)
    x = (2.0 * torch_spmv_unit(torch, 3, c) - 1.0).to(torch.float32)
    return {"offsets": offsets.to(torch.int32), "lengths": lengths, "cols": col_indices,
            "values": values, "x": x, "rows": rows, "ncols": cols, "nnz": nnz}


def check_spmv_matrix(torch, matrix: dict, kind: str, samples: int, seed: int) -> None:
    """The GPU-built matrix against the scalar definition on sampled rows
    (the first, the last, the longest and `samples` random ones): lengths,
    offsets, sorted columns, values, and x at their columns."""
    rows, cols = matrix["rows"], matrix["ncols"]
    picker = random.Random(seed)
    chosen = {0, rows - 1, int(torch.argmax(matrix["lengths"]).item())}
    chosen |= {picker.randrange(rows) for _ in range(samples)}
    offsets = matrix["offsets"]
    for row in sorted(chosen):
        start, end = int(offsets[row].item()), int(offsets[row + 1].item())
        length = spmv_row_length(kind, row, cols)
        if end - start != length:
            raise CheckFailed(f"{kind} row {row}: {end - start} non-zeros, the generator's "
                              f"definition says {length}")
        columns, values = spmv_row(start, length, cols)
        got_columns = matrix["cols"][start:end].tolist()
        got_values = matrix["values"][start:end].tolist()
        if got_columns != columns or got_values != values:
            raise CheckFailed(f"{kind} row {row}: columns or values differ from the "
                              "generator's definition")
        got_x = matrix["x"][torch.tensor(columns[:64], dtype=torch.int64,
                                         device=matrix["x"].device)].tolist()
        if got_x != [spmv_x(c) for c in columns[:64]]:
            raise CheckFailed(f"{kind}: x differs from the generator's definition")


def spmv_workload(ctx: Context, rows: int, cols: int, kind: str,
                  cache: Optional[dict] = None) -> Workload:
    """y = A x on the generator's matrix of `kind`; the matrix is built
    once into `cache` (the caller empties it to free the memory)."""
    torch = ctx.torch
    cache = {} if cache is None else cache

    def make_inputs() -> dict:
        # The matrix is fixed by the generator: every input set is the same
        # one (one set is 4x the L2 or more at the benchmark's size).
        if "matrix" not in cache:
            matrix = spmv_matrix(torch, ctx.device, rows, cols, kind)
            check_spmv_matrix(torch, matrix, kind, 32, ctx.seeds.getrandbits(32))
            cache["matrix"] = matrix
        return cache["matrix"]

    def check(inputs: dict, out, tolerance: float, full: bool) -> str:
        if not isinstance(out, torch.Tensor):
            out = torch.as_tensor(out, device=ctx.device)
        # float64 products summed by row with index_add_: no cuSPARSE.
        rows_of = torch.repeat_interleave(torch.arange(rows, device=ctx.device),
                                          inputs["lengths"])
        products = inputs["values"].to(torch.float64) * \
            inputs["x"].to(torch.float64)[inputs["cols"].to(torch.int64)]
        reference = torch.zeros(rows, dtype=torch.float64, device=ctx.device)
        reference.index_add_(0, rows_of, products)
        del rows_of, products
        return expect_close(torch, out.reshape(-1), reference, tolerance)

    def set_bytes() -> int:
        return spmv_bytes(rows, cols, 32 * rows)

    return Workload("spmv", "f32", shape_spmv(rows, cols, kind), make_inputs, set_bytes(),
                    lambda inputs: spmv_bytes(rows, cols, inputs["nnz"]), check)


def run_spmv(ctx: Context) -> None:
    torch = ctx.torch
    print("\n== spmv: y = A x, CSR f32, the Rust lab's generated matrices (cuSPARSE through "
          "CuPy and torch)", flush=True)
    ctx.note("spmv: matrices built by the generator of the Rust lab (seed 0x53504D56), "
             "checked against its scalar definition on sampled rows; int32 offsets and "
             "column indices; bytes 8*nnz + 4*(rows+1) + 4*rows + 4*cols")
    cp = ctx.cupy

    def bind_torch(inputs: dict) -> Bound:
        with warnings.catch_warnings():  # "beta state" and invariant-check notices
            warnings.simplefilter("ignore")
            matrix = torch.sparse_csr_tensor(inputs["offsets"], inputs["cols"],
                                             inputs["values"],
                                             size=(inputs["rows"], inputs["ncols"]))
        x = inputs["x"]
        holder = []

        def run():
            holder[:] = [matrix @ x]

        return Bound(holder.clear, run, lambda: holder[0])

    def bind_cupy(inputs: dict) -> Bound:
        import cupyx.scipy.sparse as cusparse  # noqa: PLC0415 (optional, on the GPU machine)

        matrix = cusparse.csr_matrix(
            (ctx.to_cupy(inputs["values"]), ctx.to_cupy(inputs["cols"]),
             ctx.to_cupy(inputs["offsets"])), shape=(inputs["rows"], inputs["ncols"]))
        xc = ctx.to_cupy(inputs["x"])
        ctx.torch_clock.synchronize()
        holder = []

        def run():
            holder[:] = [matrix @ xc]

        return Bound(holder.clear, run, lambda: holder[0])

    peers = [Peer("torch.sparse_csr@x", ctx.torch_clock, bind_torch, optional=True)]
    if cp is not None:
        peers.append(Peer("cupyx.csr@x(cuSPARSE)", ctx.cupy_clock, bind_cupy, optional=True))
    rows = ctx.args.spmv_rows
    for kind in SPMV_KINDS:
        small = [spmv_workload(ctx, r, c, kind) for r, c in ((1, 1), (1000, 777), (77777, 77777))]
        cache: dict = {}
        full = spmv_workload(ctx, rows, rows, kind, cache)
        try:
            full.make_inputs()  # built and checked against the definition once, here
        except (CheckFailed, ValueError, torch.cuda.OutOfMemoryError) as error:
            for peer in peers:
                ctx.fail(full, peer.algorithm, f"matrix: {error}".splitlines()[0])
            cache.clear()
            ctx.free()
            continue
        print(f"  {kind}: {rows} x {rows}, {cache['matrix']['nnz']} non-zeros "
              f"(longest row {int(cache['matrix']['lengths'].max().item())})", flush=True)
        run_workload(ctx, small, full, peers)
        cache.clear()
        ctx.free()


# --- latency --------------------------------------------------------------


@dataclass
class LatencyCase:
    """One peer at one size: its call bound to inputs made once."""

    primitive: str
    n: int
    clock: object  # TorchClock or CupyClock
    sync: Callable[[], None]  # waits for the stream the call runs on
    bound: Bound
    check: Callable[[], str]  # raises CheckFailed
    optional: bool = False  # cannot run: a note, not a failure


def measure_latency(args: argparse.Namespace, case: LatencyCase, device: str) -> LatencyRow:
    """examples/latency.rs's three numbers for one case; the output is
    poisoned before each phase and checked after it."""
    bound, sync = case.bound, case.sync

    def prepare_idle(_: int) -> None:
        bound.prepare()
        sync()

    def run_and_wait(_: int) -> None:
        bound.run()
        sync()

    one = time_device(case.clock, args.warmup, args.reps, prepare_idle, lambda _: bound.run())
    sync()
    case.check()
    bound.prepare()
    back_to_back = time_device_batched(case.clock, args.warmup, args.reps, args.calls,
                                       lambda _: sync(), lambda _: bound.run())
    sync()
    case.check()
    bound.prepare()
    sync()
    host = time_host(args.warmup, args.reps, run_and_wait)
    case.check()
    return LatencyRow(case.primitive, case.n, median(one) * 1e3, median(back_to_back) * 1e3,
                      median(host) * 1e3, device)


def torch_latency_cases(ctx: Context, n: int) -> list[LatencyCase]:
    """torch.cumsum, torch.masked_select, x[x > 0] and copy_ on n int32,
    on torch's current stream."""
    torch = ctx.torch
    sync = torch.cuda.current_stream().synchronize

    def cumsum() -> LatencyCase:
        workload = scan_workload(ctx, n, "i32")
        inputs = workload.make_inputs()
        x, y = inputs["x"], inputs["y"]
        bound = Bound(lambda: poison(torch, y),
                      lambda: torch.cumsum(x, 0, dtype=torch.int32, out=y), lambda: y)
        return LatencyCase("torch.cumsum", n, ctx.torch_clock, sync, bound,
                           lambda: workload.check(inputs, y, 0.0, True))

    def select(by_flags: bool) -> LatencyCase:
        workload = compact_workload(ctx, n, by_flags)
        inputs = workload.make_inputs()
        x = inputs["x"]
        holder = []

        def run() -> None:
            holder[:] = [torch.masked_select(x, inputs["mask"]) if by_flags else x[x > 0]]

        bound = Bound(holder.clear, run, lambda: holder[0])
        name = "torch.masked_select" if by_flags else "torch.x[x>t]"
        return LatencyCase(name, n, ctx.torch_clock, sync, bound,
                           lambda: workload.check(inputs, holder[0], 0.0, True))

    def copy() -> LatencyCase:
        x = torch.randint(-(1 << 31), (1 << 31) - 1, (n,), dtype=torch.int32, device=ctx.device,
                          generator=ctx.generator())
        y = torch.empty_like(x)
        bound = Bound(lambda: poison(torch, y), lambda: y.copy_(x), lambda: y)
        return LatencyCase("torch.Tensor.copy_", n, ctx.torch_clock, sync, bound,
                           lambda: expect_equal(torch, y, x))

    def total() -> LatencyCase:
        workload = reduce_workload(ctx, n, "i32")
        inputs = workload.make_inputs()
        x = inputs["x"]
        holder = []

        def run() -> None:
            holder[:] = [torch.sum(x)]

        bound = Bound(holder.clear, run, lambda: holder[0])
        return LatencyCase("torch.sum", n, ctx.torch_clock, sync, bound,
                           lambda: workload.check(inputs, holder[0], 0.0, True))

    def sort() -> LatencyCase:
        workload = sort_workload(ctx, n, "i32", "uniform")
        inputs = workload.make_inputs()
        x = inputs["x"]
        holder = []

        def run() -> None:
            holder[:] = [tuple(torch.sort(x))]

        bound = Bound(holder.clear, run, lambda: holder[0])
        return LatencyCase("torch.sort", n, ctx.torch_clock, sync, bound,
                           lambda: workload.check(inputs, holder[0], 0.0, True))

    return [copy(), total(), cumsum(), select(True), select(False), sort()]


def cupy_latency_case(cupy, clock, n: int, seed: int) -> LatencyCase:
    """cupy.cumsum on n int32 with CUB on, on CuPy's current stream."""
    xc = cupy.random.RandomState(seed).randint(-1000, 1000, size=n, dtype=cupy.int32)
    yc = cupy.empty_like(xc)

    def check() -> str:
        # Exact in int32's wrapping arithmetic: y[0] = x[0], y[i] - y[i-1] = x[i].
        if int(yc[0]) != int(xc[0]) or not bool((yc[1:] - yc[:-1] == xc[1:]).all()):
            raise CheckFailed("the output differs from the running sum of the input")
        return ""

    bound = Bound(lambda: yc.fill(POISON_4),
                  lambda: cupy.cumsum(xc, dtype=xc.dtype, out=yc), lambda: yc)
    return LatencyCase("cupy.cumsum(cub)", n, clock, cupy.cuda.get_current_stream().synchronize,
                       bound, check, optional=True)


def cupy_sort_latency_case(cupy, clock, n: int, seed: int) -> LatencyCase:
    """cupy.sort(x) on n int32 (a sorted copy allocated in the call), on
    CuPy's current stream; checked against NumPy's sort."""
    import numpy  # noqa: PLC0415 (CuPy depends on it)

    xc = cupy.random.RandomState(seed).randint(-(1 << 30), 1 << 30, size=n, dtype=cupy.int32)
    expected = numpy.sort(cupy.asnumpy(xc))
    holder = []

    def run() -> None:
        holder[:] = [cupy.sort(xc)]

    def check() -> str:
        if not numpy.array_equal(cupy.asnumpy(holder[0]), expected):
            raise CheckFailed("cupy.sort differs from numpy.sort")
        return ""

    bound = Bound(holder.clear, run, lambda: holder[0])
    return LatencyCase("cupy.sort", n, clock, cupy.cuda.get_current_stream().synchronize,
                       bound, check, optional=True)


def cupy_sum_latency_case(cupy, clock, n: int, seed: int) -> LatencyCase:
    """cupy.sum(x, dtype=x.dtype) on n int32 with CUB on (a 0-d result
    allocated in the call), on CuPy's current stream."""
    xc = cupy.random.RandomState(seed).randint(-1000, 1000, size=n, dtype=cupy.int32)
    expected = int(xc.astype(cupy.int64).sum().item())
    expected = ((expected + (1 << 31)) % (1 << 32)) - (1 << 31)
    holder = []

    def run() -> None:
        holder[:] = [cupy.sum(xc, dtype=xc.dtype)]

    def check() -> str:
        if int(holder[0].item()) != expected:
            raise CheckFailed(f"sum {int(holder[0].item())}, expected {expected}")
        return ""

    bound = Bound(holder.clear, run, lambda: holder[0])
    return LatencyCase("cupy.sum(cub)", n, clock, cupy.cuda.get_current_stream().synchronize,
                       bound, check, optional=True)


def parse_latency_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="peers.py latency",
        description="Latency of single PyTorch/CuPy calls at small sizes, "
                    "the peers of examples/latency.rs (same columns).",
        epilog="See 'Latency mode' in the header of this file for what each column times.",
    )
    parser.add_argument("--sizes", type=typed(parse_counts), default=list(LATENCY_SIZES),
                        help="element counts (default 1024,65536,1048576)")
    parser.add_argument("--reps", type=int, default=200, help="timed runs per phase (default 200)")
    parser.add_argument("--warmup", type=int, default=20,
                        help="untimed runs before each phase (default 20)")
    parser.add_argument("--calls", type=int, default=100,
                        help="calls between one pair of events, back to back (default 100)")
    parser.add_argument("--csv", default=os.path.join(os.environ.get("OUT", "."),
                                                      "latency-peers.csv"),
                        help="CSV file to write (default $OUT/latency-peers.csv, "
                             "or ./latency-peers.csv)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed the input generator (default: fresh from the OS)")
    parser.add_argument("--no-cupy", action="store_true", help="skip the CuPy peer")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.warmup < 0 or args.calls < 1:
        parser.error("--reps and --calls must be >= 1, --warmup >= 0")
    return args


def latency_main(argv: list[str]) -> int:
    args = parse_latency_args(argv)
    notes, failures, rows = [], [], []

    def note(text: str) -> None:
        notes.append(text)
        print(f"note: {text}", flush=True)

    torch = None
    try:
        import torch  # noqa: PLC0415 (optional here)
        if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
            note("PyTorch sees no CUDA device; torch peers skipped")
            torch = None
    except ImportError as error:
        note(f"PyTorch not available ({error}); torch peers skipped")
    cupy = None
    if args.no_cupy:
        note("CuPy not used (--no-cupy)")
    else:
        cupy, _cub, _accelerator, why_not = import_cupy_with_cub()
        if cupy is None:
            note(why_not)
    if torch is None and cupy is None:
        print("error: neither PyTorch nor CuPy can use a CUDA device; nothing was measured",
              file=sys.stderr)
        return 2

    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(63)
    ctx = Context(torch, argparse.Namespace(seed=seed)) if torch is not None else None
    cupy_seeds = random.Random(seed ^ 0x6375_7079)
    if ctx is not None:
        device = ctx.label
        print(f"device: {device}; torch {torch.__version__}, CUDA {torch.version.cuda}", flush=True)
    else:
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        device = f"{name}, sm_{props['major']}{props['minor']}"
        print(f"device: {device}", flush=True)
    if cupy is not None:
        print(f"cupy {cupy.__version__} (CUB accelerator on)", flush=True)
    print(f"latency, µs, median of {args.reps} after {args.warmup} warm-ups; one call: events "
          f"from an idle stream; back to back: {args.calls} calls between events; host: call "
          f"→ stream synchronize; seed {seed} (replay with --seed {seed})\n", flush=True)

    cupy_clock = CupyClock(cupy) if cupy is not None else None
    for n in args.sizes:
        builders = []
        if ctx is not None:
            builders.append(("torch", lambda n=n: torch_latency_cases(ctx, n)))
        if cupy is not None:
            builders.append(("cupy.cumsum(cub)", lambda n=n: [
                cupy_latency_case(cupy, cupy_clock, n, cupy_seeds.getrandbits(32))]))
            builders.append(("cupy.sum(cub)", lambda n=n: [
                cupy_sum_latency_case(cupy, cupy_clock, n, cupy_seeds.getrandbits(32))]))
            builders.append(("cupy.sort", lambda n=n: [
                cupy_sort_latency_case(cupy, cupy_clock, n, cupy_seeds.getrandbits(32))]))
        for label, build in builders:
            try:
                cases = build()
            except Exception as error:
                reason = f"{label} n = {n}: inputs could not be made " \
                         f"({type(error).__name__}: {error})".splitlines()[0]
                if label.startswith("cupy"):
                    note(reason)
                else:
                    failures.append(reason)
                continue
            for case in cases:
                try:
                    row = measure_latency(args, case, device)
                except CheckFailed as error:
                    failures.append(f"{case.primitive} n = {n}: {error}")
                    print(f"  {case.primitive} n = {n}: FAILED: {error}", flush=True)
                    continue
                except Exception as error:
                    reason = f"{type(error).__name__}: {error}".splitlines()[0]
                    if case.optional:
                        note(f"{case.primitive} n = {n} skipped: {reason}")
                    else:
                        failures.append(f"{case.primitive} n = {n}: {reason}")
                        print(f"  {case.primitive} n = {n}: FAILED: {reason}", flush=True)
                    continue
                rows.append(row)
                print(f"  {row.primitive:22} n = {n:<8} one {row.device_us_one:8.2f} µs  "
                      f"back to back {row.device_us_back_to_back:8.2f} µs  "
                      f"host {row.host_us:8.2f} µs", flush=True)
            del cases
        if ctx is not None:
            ctx.free()

    print()
    print(latency_markdown(rows))
    write_latency_csv(args.csv, rows)
    print(f"\nwrote {len(rows)} rows to {args.csv}")
    for text in notes:
        print(f"note: {text}")
    if failures:
        print(f"\n{len(failures)} FAILED:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        return 1
    return 0


# --- main -----------------------------------------------------------------


def import_cupy_with_cub():
    """Imports CuPy with its CUB accelerator on (CUPY_ACCELERATORS=cub set
    before the import, then the routine and reduction accelerators).
    Returns (cupy, cub, accelerator module, None), or (None, None, None,
    a note) when CuPy is missing or cannot switch CUB on."""
    os.environ.setdefault("CUPY_ACCELERATORS", "cub")
    try:
        import cupy  # noqa: PLC0415 (optional, imported only on the GPU machine)
        from cupy.cuda import cub  # noqa: PLC0415
    except Exception as error:  # ImportError, or a CUDA mismatch inside cupy
        return None, None, None, (f"CuPy not available ({type(error).__name__}: {error}); "
                                  "CuPy peers skipped")
    try:
        from cupy._core import _accelerator  # noqa: PLC0415

        _accelerator.set_routine_accelerators(["cub"])
        _accelerator.set_reduction_accelerators(["cub"])
    except Exception as error:
        return None, None, None, (f"could not switch CuPy's CUB accelerator on ({error}); "
                                  "cupy.cumsum skipped")
    return cupy, cub, _accelerator, None


def load_cupy(ctx: Context) -> None:
    if ctx.args.no_cupy:
        ctx.note("CuPy not used (--no-cupy)")
        return
    cupy, cub, _accelerator, why_not = import_cupy_with_cub()
    if cupy is None:
        ctx.note(why_not)
        return
    ctx.cupy = cupy
    ctx.cupy_clock = CupyClock(cupy)
    ctx.cub_scan = getattr(cub, "cub_scan", None)
    ctx.cub_cumsum_op = getattr(cub, "CUPY_CUB_CUMSUM", 5)
    ctx.cub_reduction = getattr(cub, "cub_reduction", None)
    ctx.cub_sum_op = getattr(cub, "CUPY_CUB_SUM", 0)
    if ctx.cub_scan is None:
        ctx.note("cupy.cuda.cub.cub_scan not found in this CuPy; CuPy scan peers skipped")
    print(f"cupy {cupy.__version__} (CUDA_ACCELERATORS={os.environ.get('CUPY_ACCELERATORS')}, "
          f"routine accelerators {_accelerator.get_routine_accelerators()})", flush=True)


def typed(parser_fn):
    """An argparse type from a parser that raises ValueError."""
    def convert(text):
        try:
            return parser_fn(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from error
    return convert


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time the PyTorch/CuPy peers of parprims' primitives and write the parprims results CSV.",
        epilog="Sizes accept small expressions: 2^28, 5*2^25, 123123123. "
               "See the header of this file for the names, shapes and bytes.",
    )
    parser.add_argument("--only", type=typed(parse_only), default=list(PRIMITIVES),
                        help="comma list of " + ",".join(PRIMITIVES) + " (default all)")
    parser.add_argument("--sizes", type=typed(parse_counts), default=None,
                        help="element counts for scan, compact, reduce, histogram, sort "
                             "(every sort case at each size) and segmented (values; "
                             "repeat_interleave's output) (default 2^28; reduce "
                             "2^16,2^20,2^24,2^28; sort the cases of SORT_CASES)")
    parser.add_argument("--types", type=typed(parse_types), default=None,
                        help="scan element types (default i32,f32,i64,u64); for reduce "
                             "the sums of those among i32,f32,i64 (default i32,f32); for "
                             "sort the key types among u32,i32,f32,u64,i64 (default all)")
    parser.add_argument("--spmv-rows", type=typed(parse_count), default=SPMV_ROWS,
                        help="rows (= columns) of the SpMV matrices (default 2^22)")
    parser.add_argument("--dims", type=typed(parse_dims), default=[(16384, 16384)],
                        help="ROWSxCOLS for transpose and matvec (default 16384x16384)")
    parser.add_argument("--conv-dims", type=typed(parse_dims), default=[(8192, 8192)],
                        help="HxW images for conv (default 8192x8192)")
    parser.add_argument("--kernels", type=typed(parse_counts), default=[3, 5, 7],
                        help="conv filter sides K (default 3,5,7)")
    parser.add_argument("--reps", type=int, default=20, help="timed runs (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    parser.add_argument("--ceiling-mib", type=int, default=1024,
                        help="size of the copy-ceiling copy in MiB (default 1024)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed the input generator (default: fresh from the OS)")
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "peers.csv"),
                        help="CSV file to write (default $OUT/peers.csv, or ./peers.csv)")
    parser.add_argument("--no-cupy", action="store_true", help="skip the CuPy peers")
    parser.add_argument("--self-test", action="store_true",
                        help="check the CSV formatting, byte formulas and parsing; no GPU, no torch")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.warmup < 0 or args.ceiling_mib < 1:
        parser.error("--reps must be >= 1, --warmup >= 0, --ceiling-mib >= 1")
    if not all(1 <= k <= 1024 for k in args.kernels):
        parser.error("--kernels: K must be between 1 and 1024")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "latency":
        return latency_main(argv[1:])
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    try:
        import torch  # noqa: PLC0415 (lazy: --help and --self-test work without it)
    except ImportError as error:
        print(f"error: PyTorch is needed for the peer benchmarks ({error})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        print("error: no CUDA device visible to PyTorch; nothing was measured", file=sys.stderr)
        return 2
    started = time.monotonic()
    ctx = Context(torch, args)
    print(f"device: {ctx.label} ({torch.cuda.get_device_properties(0).multi_processor_count} SMs, "
          f"L2 {ctx.l2_bytes >> 20} MiB); torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}", flush=True)
    print(f"method: {args.warmup} warm-up + {args.reps} timed runs, CUDA events, median; "
          f"inputs: seed {ctx.seed} (replay with --seed {ctx.seed})", flush=True)
    if any(name in args.only for name in ("scan", "reduce", "sort", "segmented", "spmv")):
        load_cupy(ctx)
    measure_ceiling(ctx)
    sections = {"scan": run_scan, "compact": run_compact, "transpose": run_transpose,
                "matvec": run_matvec, "conv": run_conv, "reduce": run_reduce,
                "histogram": run_histogram, "sort": run_sort, "segmented": run_segmented,
                "spmv": run_spmv}
    for name in args.only:
        sections[name](ctx)

    print("\n== results (ceiling %.1f GB/s, %s)" % (ctx.ceiling_gbps, ctx.label))
    if ctx.rows:
        header = ["primitive", "algorithm", "type", "shape", "ms (median)", "min..max ms", "GB/s",
                  "of ceiling", "check"]
        print(format_table([header] + ctx.rows, {4, 5, 6, 7}))
    write_csv(args.out, ctx.records)
    print(f"\nwrote {len(ctx.records)} rows to {args.out} in {time.monotonic() - started:.0f} s")
    for text in ctx.notes:
        print(f"note: {text}")
    if ctx.failures:
        print(f"\n{len(ctx.failures)} FAILED:", file=sys.stderr)
        for failure in ctx.failures:
            print(f"  {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
