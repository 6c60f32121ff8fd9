//! One module per primitive: its lab methods, inputs, CPU reference and
//! GPU cases, driven by the shared runner ([`crate::run`]).
//!
//! Every primitive registers the same four entry points in [`registry`],
//! so the `parprims` command, `parprims bench` and the examples walk one
//! list.

use gpu_core::Result;

use super::progress::Progress;
use super::select::Selection;
use super::{Lab, Row};

pub mod compact;
pub mod conv;
pub mod copy;
pub mod matvec;
pub mod scan;
pub mod transpose;

/// A primitive's entry points.
#[derive(Clone, Copy)]
pub struct Primitive {
    /// `scan`, `compact`, `transpose`, `matvec`, `conv`, `copy`.
    pub name: &'static str,
    /// Checks a selection without a GPU; returns how many cases it makes
    /// (for the progress bar).
    pub validate: fn(&Selection) -> Result<u64>,
    /// The benchmark: every selected size × type × method, no CPU rows.
    pub bench: fn(&Lab, &Selection, &Progress) -> Result<Vec<Row>>,
    /// The short tour of `parprims` with no arguments: the default method
    /// and every lab method at a modest size.
    pub tour: fn(&Lab, &Progress) -> Vec<Row>,
    /// The CPU references at a modest size, timed and self-checked (the
    /// no-GPU path).
    pub cpu: fn(u64, parprims_testkit::bench::Repetitions) -> Vec<Row>,
}

/// Every primitive the runner drives, in table order.
pub fn registry() -> Vec<Primitive> {
    vec![
        scan::PRIMITIVE,
        compact::PRIMITIVE,
        transpose::PRIMITIVE,
        matvec::PRIMITIVE,
        conv::PRIMITIVE,
        copy::PRIMITIVE,
    ]
}

/// The primitive called `name`.
pub fn find(name: &str) -> Option<Primitive> {
    registry().into_iter().find(|p| p.name == name)
}

/// Calls `$f::<T>(args…)` with `T` the Rust type of the run-time
/// [`gpu_core::ElementType`] `$t`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_element_type {
    ($t:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $t {
            $crate::gpu_core::ElementType::I32 => $f::<i32>($($arg),*),
            $crate::gpu_core::ElementType::U32 => $f::<u32>($($arg),*),
            $crate::gpu_core::ElementType::I64 => $f::<i64>($($arg),*),
            $crate::gpu_core::ElementType::U64 => $f::<u64>($($arg),*),
            $crate::gpu_core::ElementType::F32 => $f::<f32>($($arg),*),
            $crate::gpu_core::ElementType::F64 => $f::<f64>($($arg),*),
        }
    };
}
