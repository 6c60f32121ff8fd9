//! The serial CPU reference every GPU scan is checked against.
//!
//! A left-to-right loop: `acc = acc ⊕ x[i]`. O(n) work, n steps. The
//! combination order is the textbook one, so integer results (which wrap,
//! exactly like the kernels) are the ground truth; float results differ from
//! a parallel scan's by rounding only.

use gpu_core::{Element, Operator};

use crate::kind::ScanKind;

/// Scans `input` with `op` into a new vector.
///
/// ```
/// use gpu_core::Sum;
/// use scan::{cpu, ScanKind};
/// assert_eq!(cpu::scan(&[1, 2, 3], &Sum, ScanKind::Inclusive), vec![1, 3, 6]);
/// assert_eq!(cpu::scan(&[1, 2, 3], &Sum, ScanKind::Exclusive { initial: 10 }), vec![10, 11, 13]);
/// ```
pub fn scan<T: Element, O: Operator<T>>(input: &[T], op: &O, kind: ScanKind<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(input.len());
    match kind {
        ScanKind::Inclusive => {
            let mut iter = input.iter();
            if let Some(&first) = iter.next() {
                let mut acc = first;
                out.push(acc);
                for &x in iter {
                    acc = op.combine(acc, x);
                    out.push(acc);
                }
            }
        }
        ScanKind::Exclusive { initial } => {
            let mut acc = initial;
            for &x in input {
                out.push(acc);
                acc = op.combine(acc, x);
            }
        }
    }
    out
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
            for i in 1..data.len() {
                data[i] = op.combine(data[i - 1], data[i]);
            }
        }
        ScanKind::Exclusive { initial } => {
            let mut acc = initial;
            for x in data.iter_mut() {
                let next = op.combine(acc, *x);
                *x = acc;
                acc = next;
            }
        }
    }
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
    }

    #[test]
    fn in_place_matches_out_of_place() {
        let x: Vec<i32> = (0..100).map(|i| (i * 7919) % 113 - 50).collect();
        for kind in [ScanKind::Inclusive, ScanKind::Exclusive { initial: -3 }] {
            let mut data = x.clone();
            scan_in_place(&mut data, &Sum, kind);
            assert_eq!(data, scan(&x, &Sum, kind));
        }
    }

    #[test]
    fn floats_follow_the_serial_order() {
        let x = [0.5f32, 0.25, 0.125];
        assert_eq!(inclusive(&x, &Sum), vec![0.5, 0.75, 0.875]);
        assert_eq!(inclusive(&[1.0f64, -2.0, 3.0], &Max), vec![1.0, 1.0, 3.0]);
    }
}
