//! The Tuned matvec's policy: block shapes (compiled in), the run-time
//! sizing constants, and the compiled load variants.
//!
//! Measured in docs/tuning.md#matvec. The evict-first hint on A is what pays
//! for A·x (x, not A, stays in L1/L2), and 8 loads in flight lose there;
//! row groups of 256 threads (16 vectors per thread) beat 128 and 64; Aᵀ·x
//! is within noise over waves, loads and hint. 256-thread blocks keep 6
//! resident per SM at the kernels' 34–40 registers; the reduce-launch cost
//! of 32 block-rows is a guess the sweep does not contradict.

use gpu_core::{DeviceInfo, Error, Result};

/// The loads-in-flight variants compiled into the module (values of
/// [`MatvecPolicy::n_loads`] and [`MatvecPolicy::t_loads`]).
pub const TUNABLE_LOADS: [u32; 2] = [4, 8];

/// The Tuned kernels' constants: `n_block_threads` and `t_block_rows` are
/// compiled in (`#define`s), `n_loads`, `t_loads` and `streaming` pick a
/// compiled variant, the rest size the grid at run time.
///
/// The fields are public so sweeps can write `MatvecPolicy { n_waves: 4,
/// ..MatvecPolicy::DEFAULT }`; every policy given to a matvec is checked
/// ([`MatvecPolicy::validate`]) and refused with a typed error when the
/// compiled kernels cannot run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatvecPolicy {
    /// Threads per block of the A·x kernel (a power of two, ≥ 32).
    pub n_block_threads: u32,
    /// A·x: target 16-byte vectors per thread when sizing a row's group
    /// (and the least work per thread of a column chunk).
    pub n_vectors_per_thread: u64,
    /// A·x: when the rows alone give fewer blocks than this many waves of
    /// resident blocks, rows are split into column chunks.
    pub n_waves: u64,
    /// Aᵀ·x: warps per block (block = 32 × this).
    pub t_block_rows: u32,
    /// Aᵀ·x: the slab search considers grids of up to this many waves of
    /// resident blocks.
    pub t_waves: u64,
    /// Aᵀ·x: the cost of the second (reduce) launch, in units of one block
    /// row-strip read (32·L elements of one row), for the slab search.
    pub t_reduce_cost: u64,
    /// Aᵀ·x: at least this many rows per thread in a slab (bounds the
    /// partial traffic for short matrices).
    pub t_min_rows_per_thread: u64,
    /// A·x: 16-byte matrix loads each thread issues before using them, one
    /// of the compiled variants, 4 or 8 (chosen at run time).
    pub n_loads: u32,
    /// Aᵀ·x: rows each thread loads before using them, 4 or 8.
    pub t_loads: u32,
    /// Both directions: read the matrix with the evict-first streaming hint
    /// (`ld.global.cs`), so A (read once) does not push x out of L1/L2.
    pub streaming: bool,
}

impl MatvecPolicy {
    /// The default on every measured device (an H100, sm_90).
    pub const DEFAULT: MatvecPolicy = MatvecPolicy {
        n_block_threads: 256,
        n_vectors_per_thread: 16,
        n_waves: 2,
        t_block_rows: 8,
        t_waves: 8,
        t_reduce_cost: 32,
        t_min_rows_per_thread: 16,
        n_loads: 4,
        t_loads: 4,
        streaming: true,
    };

    /// The default with another compiled variant: `n_loads` and `t_loads`
    /// loads in flight (each one of [`TUNABLE_LOADS`]), with or without the
    /// streaming hint. Checked.
    ///
    /// ```
    /// use linalg::policy::MatvecPolicy;
    /// let policy = MatvecPolicy::new(8, 4, false)?;
    /// assert_eq!((policy.n_loads, policy.t_loads, policy.streaming), (8, 4, false));
    /// assert!(MatvecPolicy::new(6, 4, true).is_err()); // 6 loads in flight: not compiled
    /// # Ok::<(), gpu_core::Error>(())
    /// ```
    pub fn new(n_loads: u32, t_loads: u32, streaming: bool) -> Result<MatvecPolicy> {
        let policy = MatvecPolicy {
            n_loads,
            t_loads,
            streaming,
            ..Self::DEFAULT
        };
        policy.validate()?;
        Ok(policy)
    }

    /// The default for a device: [`MatvecPolicy::DEFAULT`] on every
    /// architecture (measured on sm_90).
    ///
    /// ```no_run
    /// use gpu_core::Gpu;
    /// use linalg::policy::MatvecPolicy;
    /// # fn main() -> gpu_core::Result<()> {
    /// let gpu = Gpu::new(0)?;
    /// let policy = MatvecPolicy::for_device(gpu.info());
    /// assert_eq!(policy, MatvecPolicy::default_for(gpu.info().compute_capability));
    /// # Ok(()) }
    /// ```
    pub fn for_device(info: &DeviceInfo) -> MatvecPolicy {
        Self::default_for(info.compute_capability)
    }

    /// The default for compute capability `arch` (see [`Self::for_device`]).
    ///
    /// ```
    /// use linalg::policy::MatvecPolicy;
    /// assert_eq!(MatvecPolicy::default_for((9, 0)), MatvecPolicy::DEFAULT);
    /// ```
    pub fn default_for(_arch: (u32, u32)) -> MatvecPolicy {
        Self::DEFAULT
    }

    /// Checks the policy, as every matvec does before using it: the
    /// compiled-in block shapes must be [`MatvecPolicy::DEFAULT`]'s, the
    /// run-time constants at least 1, the loads in flight one of
    /// [`TUNABLE_LOADS`]. Each refusal is [`Error::InvalidArgument`].
    ///
    /// ```
    /// use linalg::policy::MatvecPolicy;
    /// assert!(MatvecPolicy { n_waves: 4, ..MatvecPolicy::DEFAULT }.validate().is_ok());
    /// assert!(MatvecPolicy { n_block_threads: 128, ..MatvecPolicy::DEFAULT }.validate().is_err()); // compiled in
    /// assert!(MatvecPolicy { t_waves: 0, ..MatvecPolicy::DEFAULT }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        let compiled = Self::DEFAULT;
        if self.n_block_threads != compiled.n_block_threads
            || self.t_block_rows != compiled.t_block_rows
        {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "block shapes are compiled in: n_block_threads must be {} and t_block_rows {}",
                    compiled.n_block_threads, compiled.t_block_rows
                ),
            ));
        }
        if self.n_vectors_per_thread == 0
            || self.n_waves == 0
            || self.t_waves == 0
            || self.t_min_rows_per_thread == 0
        {
            return Err(Error::invalid(
                "tuning",
                "n_vectors_per_thread, n_waves, t_waves and t_min_rows_per_thread must be at least 1",
            ));
        }
        if !TUNABLE_LOADS.contains(&self.n_loads) || !TUNABLE_LOADS.contains(&self.t_loads) {
            return Err(Error::invalid(
                "tuning",
                format!(
                    "n_loads {} / t_loads {}: the compiled variants are {TUNABLE_LOADS:?}",
                    self.n_loads, self.t_loads
                ),
            ));
        }
        Ok(())
    }
}

impl Default for MatvecPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(policy: MatvecPolicy) -> bool {
        matches!(
            policy.validate(),
            Err(Error::InvalidArgument { name: "tuning", .. })
        )
    }

    #[test]
    fn only_run_time_constants_may_change() {
        let base = MatvecPolicy::DEFAULT;
        assert!(base.validate().is_ok());
        assert_eq!(MatvecPolicy::default_for((8, 0)), base);
        assert!(MatvecPolicy {
            n_vectors_per_thread: 64,
            t_waves: 8,
            ..base
        }
        .validate()
        .is_ok());
        assert!(refused(MatvecPolicy {
            n_block_threads: 512,
            ..base
        }));
        assert!(refused(MatvecPolicy {
            t_block_rows: 4,
            ..base
        }));
        for zero in [
            MatvecPolicy {
                n_vectors_per_thread: 0,
                ..base
            },
            MatvecPolicy { n_waves: 0, ..base },
            MatvecPolicy { t_waves: 0, ..base },
            MatvecPolicy {
                t_min_rows_per_thread: 0,
                ..base
            },
        ] {
            assert!(refused(zero));
        }
        for loads in TUNABLE_LOADS {
            for streaming in [false, true] {
                let policy = MatvecPolicy::new(loads, loads, streaming).unwrap();
                assert_eq!((policy.n_loads, policy.streaming), (loads, streaming));
            }
        }
        for loads in [0, 1, 5, 16] {
            assert!(MatvecPolicy::new(loads, 4, true).is_err());
            assert!(MatvecPolicy::new(4, loads, true).is_err());
            assert!(refused(MatvecPolicy {
                n_loads: loads,
                ..base
            }));
            assert!(refused(MatvecPolicy {
                t_loads: loads,
                ..base
            }));
        }
    }
}
