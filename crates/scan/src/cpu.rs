//! The serial CPU reference every GPU scan is checked against.
//!
//! A left-to-right loop: `acc = acc ⊕ x[i]`. O(n) work, n steps. The
//! combination order is the textbook one, so integer results (which wrap,
//! exactly like the kernels) are the ground truth; float results differ from
//! a parallel scan's by rounding only.
//!
//! The running value is carried in [`Element::Acc`], as the kernels carry
//! it: for `f16` and `bf16` the built-in sum, max and min combine in `f32`
//! and each output is rounded once to the 16-bit type (a custom operator
//! combines in the type itself). For every other type `Acc` is the type and
//! this is the plain loop.

use std::any::TypeId;

use gpu_core::{Element, Max, Min, Operator, Sum};

use crate::kind::ScanKind;

/// Scans `input` with `op` into a new vector.
///
/// ```
/// use gpu_core::Sum;
/// use scan::{cpu, ScanKind};
/// assert_eq!(cpu::scan(&[1, 2, 3], &Sum, ScanKind::Inclusive), vec![1, 3, 6]);
/// assert_eq!(cpu::scan(&[1, 2, 3], &Sum, ScanKind::Exclusive { initial: 10 }), vec![10, 11, 13]);
/// assert_eq!(cpu::scan(&[1, 2, 3], &Sum, ScanKind::InclusiveFrom { initial: 10 }), vec![11, 13, 16]);
/// ```
pub fn scan<T: Element, O: Operator<T>>(input: &[T], op: &O, kind: ScanKind<T>) -> Vec<T> {
    let mut out = input.to_vec();
    scan_in_place(&mut out, op, kind);
    out
}

/// `op` on accumulators: the built-in sum, max and min in [`Element::Acc`]
/// (f32 for the 16-bit floats, the type itself otherwise); any other
/// operator in `T`, which is `Acc` for every type but the 16-bit floats.
fn combine_acc<T: Element, O: Operator<T>>(op: &O, a: T::Acc, b: T::Acc) -> T::Acc {
    let operator = TypeId::of::<O>();
    if operator == TypeId::of::<Sum>() {
        a.add(b)
    } else if operator == TypeId::of::<Max>() {
        a.max_of(b)
    } else if operator == TypeId::of::<Min>() {
        a.min_of(b)
    } else {
        op.combine(T::from_acc(a), T::from_acc(b)).to_acc()
    }
}

/// Inclusive scan: `out[i] = x[0] ⊕ … ⊕ x[i]`.
///
/// ```
/// use gpu_core::{Max, Sum};
/// assert_eq!(scan::cpu::inclusive(&[3, 1, 7, 0, 4], &Sum), vec![3, 4, 11, 11, 15]);
/// assert_eq!(scan::cpu::inclusive(&[3, 1, 7, 0, 4], &Max), vec![3, 3, 7, 7, 7]);
/// ```
pub fn inclusive<T: Element, O: Operator<T>>(input: &[T], op: &O) -> Vec<T> {
    scan(input, op, ScanKind::Inclusive)
}

/// Exclusive scan seeded with the operator's identity:
/// `out[0] = identity`, `out[i] = x[0] ⊕ … ⊕ x[i−1]`.
///
/// ```
/// use gpu_core::Sum;
/// assert_eq!(scan::cpu::exclusive(&[3, 1, 7, 0, 4], &Sum), vec![0, 3, 4, 11, 11]);
/// ```
pub fn exclusive<T: Element, O: Operator<T>>(input: &[T], op: &O) -> Vec<T> {
    scan(
        input,
        op,
        ScanKind::Exclusive {
            initial: op.identity(),
        },
    )
}

/// Scans `data` in place (the reference for in-place GPU scans).
///
/// ```
/// use gpu_core::Sum;
/// use scan::ScanKind;
/// let mut data = [3, 1, 7, 0, 4];
/// scan::cpu::scan_in_place(&mut data, &Sum, ScanKind::Exclusive { initial: 10 });
/// assert_eq!(data, [10, 13, 14, 21, 21]);
/// ```
pub fn scan_in_place<T: Element, O: Operator<T>>(data: &mut [T], op: &O, kind: ScanKind<T>) {
    match kind {
        ScanKind::Inclusive => {
            let mut iter = data.iter_mut();
            if let Some(first) = iter.next() {
                let mut acc = first.to_acc();
                for x in iter {
                    acc = combine_acc(op, acc, x.to_acc());
                    *x = T::from_acc(acc);
                }
            }
        }
        ScanKind::InclusiveFrom { initial } => {
            let mut acc = initial.to_acc();
            for x in data.iter_mut() {
                acc = combine_acc(op, acc, x.to_acc());
                *x = T::from_acc(acc);
            }
        }
        ScanKind::Exclusive { initial } => {
            let mut acc = initial.to_acc();
            for x in data.iter_mut() {
                let next = combine_acc(op, acc, x.to_acc());
                *x = T::from_acc(acc);
                acc = next;
            }
        }
    }
}

/// Segmented scan by head flags: the scan restarts at every item whose
/// flag byte is non-zero (and at item 0). Inclusive: `out[i]` folds the
/// segment's items up to `i`; exclusive: the identity at a head, else the
/// segment's items before `i`. Folds left to right in `T`.
///
/// ```
/// use gpu_core::Sum;
/// use scan::SegmentedKind;
/// let x = [1i32, 2, 3, 4, 5];
/// let heads = [0u8, 0, 7, 0, 1];
/// assert_eq!(scan::cpu::segmented_scan(&x, &heads, &Sum, SegmentedKind::Inclusive), [1, 3, 3, 7, 5]);
/// assert_eq!(scan::cpu::segmented_scan(&x, &heads, &Sum, SegmentedKind::Exclusive), [0, 1, 0, 3, 0]);
/// ```
pub fn segmented_scan<T: Element, O: Operator<T>>(
    input: &[T],
    head_flags: &[u8],
    op: &O,
    kind: crate::SegmentedKind,
) -> Vec<T> {
    let mut out = Vec::with_capacity(input.len());
    let mut acc = op.identity();
    for (i, (&x, &flag)) in input.iter().zip(head_flags).enumerate() {
        if i == 0 || flag != 0 {
            acc = op.identity();
        }
        let next = op.combine(acc, x);
        out.push(match kind {
            crate::SegmentedKind::Inclusive => next,
            crate::SegmentedKind::Exclusive => acc,
        });
        acc = next;
    }
    out
}

/// Segmented scan with segments given by offsets (segment `s` is
/// `input[offsets[s]..offsets[s + 1]]`; empty segments allowed): the
/// reference of [`crate::segmented_scan_by_offsets`]. Offsets that do not
/// start at 0, end at `input.len()` and never decrease are an
/// [`gpu_core::Error::InvalidArgument`], as on the GPU.
///
/// ```
/// use gpu_core::Sum;
/// use scan::SegmentedKind;
/// let x = [1i32, 2, 3, 4, 5];
/// let out = scan::cpu::segmented_scan_by_offsets(&x, &[0, 2, 2, 5], &Sum, SegmentedKind::Inclusive).unwrap();
/// assert_eq!(out, [1, 3, 3, 7, 12]);
/// assert!(scan::cpu::segmented_scan_by_offsets(&x, &[0, 3, 2, 5], &Sum, SegmentedKind::Inclusive).is_err());
/// ```
pub fn segmented_scan_by_offsets<T: Element, O: Operator<T>>(
    input: &[T],
    offsets: &[u64],
    op: &O,
    kind: crate::SegmentedKind,
) -> gpu_core::Result<Vec<T>> {
    let n = input.len() as u64;
    let valid = offsets.first() == Some(&0)
        && offsets.last() == Some(&n)
        && offsets.windows(2).all(|pair| pair[0] <= pair[1]);
    if !valid {
        return Err(gpu_core::Error::invalid(
            "offsets",
            "not segment offsets of the input: they must start at 0, end at n and never decrease",
        ));
    }
    let mut heads = vec![0u8; input.len()];
    for &start in &offsets[..offsets.len() - 1] {
        if start < n {
            heads[start as usize] = 1;
        }
    }
    Ok(segmented_scan(input, &heads, op, kind))
}

/// Scan by key: a segmented scan whose segments are the runs of equal
/// consecutive keys; the reference of [`crate::scan_by_key`]. `keys` is as
/// long as `input` (it is zipped with it).
///
/// ```
/// use gpu_core::Sum;
/// use scan::SegmentedKind;
/// let out = scan::cpu::scan_by_key(&[4u8, 4, 9, 4], &[1i32, 2, 3, 4], &Sum, SegmentedKind::Inclusive);
/// assert_eq!(out, [1, 3, 3, 4]);
/// ```
pub fn scan_by_key<K: PartialEq + Copy, T: Element, O: Operator<T>>(
    keys: &[K],
    input: &[T],
    op: &O,
    kind: crate::SegmentedKind,
) -> Vec<T> {
    let heads: Vec<u8> = (0..input.len())
        .map(|i| u8::from(i == 0 || keys[i] != keys[i - 1]))
        .collect();
    segmented_scan(input, &heads, op, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_core::{BitAnd, BitOr, BitXor, CustomOp, Max, Min, Sum};

    #[test]
    fn known_vectors() {
        let x = [3i32, 1, 7, 0, 4, 1, 6, 3];
        assert_eq!(inclusive(&x, &Sum), vec![3, 4, 11, 11, 15, 16, 22, 25]);
        assert_eq!(exclusive(&x, &Sum), vec![0, 3, 4, 11, 11, 15, 16, 22]);
        assert_eq!(inclusive(&x, &Max), vec![3, 3, 7, 7, 7, 7, 7, 7]);
        assert_eq!(inclusive(&x, &Min), vec![3, 1, 1, 0, 0, 0, 0, 0]);
        assert_eq!(exclusive(&x, &Min), vec![i32::MAX, 3, 1, 1, 0, 0, 0, 0]);
        let bits = [0b1111u32, 0b0110, 0b0100];
        assert_eq!(inclusive(&bits, &BitAnd), vec![0b1111, 0b0110, 0b0100]);
        assert_eq!(inclusive(&bits, &BitOr), vec![0b1111, 0b1111, 0b1111]);
        assert_eq!(inclusive(&bits, &BitXor), vec![0b1111, 0b1001, 0b1101]);
    }

    #[test]
    fn empty_and_single() {
        assert!(inclusive::<i64, _>(&[], &Sum).is_empty());
        assert!(exclusive::<i64, _>(&[], &Sum).is_empty());
        assert_eq!(inclusive(&[5u64], &Sum), vec![5]);
        assert_eq!(
            scan(&[5u64], &Sum, ScanKind::Exclusive { initial: 9 }),
            vec![9]
        );
    }

    #[test]
    fn integers_wrap() {
        assert_eq!(
            inclusive(&[i32::MAX, 1, 1], &Sum),
            vec![i32::MAX, i32::MIN, i32::MIN + 1]
        );
        assert_eq!(inclusive(&[u64::MAX, 2], &Sum), vec![u64::MAX, 1]);
    }

    #[test]
    fn order_is_kept_for_non_commutative_operators() {
        // (a, b) ↦ b: associative, not commutative; the inclusive scan is the input.
        let last = CustomOp::<u32>::new("last", "b", 0, |_, b| b).unwrap();
        assert_eq!(inclusive(&[4u32, 8, 15], &last), vec![4, 8, 15]);
        assert_eq!(
            scan(&[4u32, 8, 15], &last, ScanKind::Exclusive { initial: 99 }),
            vec![99, 4, 8]
        );
        // (a, b) ↦ a keeps the leftmost operand: the seed is on the left.
        let first = CustomOp::<u32>::new("first", "a", 0, |a, _| a).unwrap();
        assert_eq!(inclusive(&[4u32, 8, 15], &first), vec![4, 4, 4]);
        assert_eq!(
            scan(
                &[4u32, 8, 15],
                &first,
                ScanKind::InclusiveFrom { initial: 99 }
            ),
            vec![99, 99, 99]
        );
        assert_eq!(
            scan(
                &[4u32, 8, 15],
                &last,
                ScanKind::InclusiveFrom { initial: 99 }
            ),
            vec![4, 8, 15]
        );
    }

    #[test]
    fn inclusive_from_seeds_every_output() {
        assert!(scan::<i64, _>(&[], &Sum, ScanKind::InclusiveFrom { initial: 3 }).is_empty());
        assert_eq!(
            scan(&[5u64], &Sum, ScanKind::InclusiveFrom { initial: 9 }),
            vec![14]
        );
        assert_eq!(
            scan(&[3, 1, 7], &Max, ScanKind::InclusiveFrom { initial: 5 }),
            vec![5, 5, 7]
        );
        // Narrow types: 16-bit floats combine in f32 from the seed on.
        use gpu_core::f16;
        let x = [f16::ONE, f16::ONE];
        let seeded = scan(
            &x,
            &Sum,
            ScanKind::InclusiveFrom {
                initial: f16::from_f32(2048.0),
            },
        );
        assert_eq!(seeded, vec![f16::from_f32(2048.0), f16::from_f32(2050.0)]);
        assert_eq!(
            scan(
                &[100i8, 100],
                &Sum,
                ScanKind::InclusiveFrom { initial: 100 }
            ),
            vec![-56, 44]
        );
    }

    #[test]
    fn in_place_matches_out_of_place() {
        let x: Vec<i32> = (0..100).map(|i| (i * 7919) % 113 - 50).collect();
        for kind in [
            ScanKind::Inclusive,
            ScanKind::Exclusive { initial: -3 },
            ScanKind::InclusiveFrom { initial: -3 },
        ] {
            let mut data = x.clone();
            scan_in_place(&mut data, &Sum, kind);
            assert_eq!(data, scan(&x, &Sum, kind));
        }
    }

    #[test]
    fn half_floats_accumulate_in_f32_and_round_each_output_once() {
        use gpu_core::{bf16, f16};
        // 2048 + 1 is not an f16 (spacing 2 there): rounding after every
        // step would lose each 1; carried in f32 the ones add up.
        let x = [f16::from_f32(2048.0), f16::ONE, f16::ONE];
        let sums = inclusive(&x, &Sum);
        assert_eq!(sums[1], f16::from_f32(2048.0)); // 2049 rounds to even
        assert_eq!(sums[2], f16::from_f32(2050.0)); // 2050 exactly
        let x = [bf16::from_f32(256.0), bf16::ONE, bf16::ONE];
        assert_eq!(inclusive(&x, &Sum)[2], bf16::from_f32(258.0));
        assert_eq!(
            exclusive(&x, &Max),
            vec![
                bf16::NEG_INFINITY,
                bf16::from_f32(256.0),
                bf16::from_f32(256.0)
            ]
        );
    }

    #[test]
    fn narrow_integers_wrap() {
        assert_eq!(inclusive(&[100i8, 100, 100], &Sum), vec![100, -56, 44]);
        assert_eq!(inclusive(&[255u8, 2], &Sum), vec![255, 1]);
        assert_eq!(exclusive(&[-3i16, 7], &Min), vec![i16::MAX, -3]);
        assert_eq!(inclusive(&[0xf0u16, 0x0f], &BitOr), vec![0xf0, 0xff]);
    }

    #[test]
    fn floats_follow_the_serial_order() {
        let x = [0.5f32, 0.25, 0.125];
        assert_eq!(inclusive(&x, &Sum), vec![0.5, 0.75, 0.875]);
        assert_eq!(inclusive(&[1.0f64, -2.0, 3.0], &Max), vec![1.0, 1.0, 3.0]);
    }
}
