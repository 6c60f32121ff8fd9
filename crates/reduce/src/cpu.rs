//! CPU references: what every GPU method is checked against, and the
//! lesson's serial baseline. Each folds left to right in index order.

use gpu_core::{Element, Operator};

use crate::{ArgExtreme, Transform};

/// `op` folded over `input` from the identity, left to right.
///
/// ```
/// use gpu_core::{Max, Sum};
/// assert_eq!(reduce::cpu::reduce(&[3i32, -1, 7], &Sum), 9);
/// assert_eq!(reduce::cpu::reduce(&[3i32, -1, 7], &Max), 7);
/// assert_eq!(reduce::cpu::reduce::<i32, _>(&[], &Max), i32::MIN); // the identity
/// ```
pub fn reduce<T: Element, O: Operator<T>>(input: &[T], op: &O) -> T {
    input
        .iter()
        .fold(op.identity(), |acc, &x| op.combine(acc, x))
}

/// `op` folded over `map(input[i], i)`, left to right.
///
/// ```
/// use gpu_core::Sum;
/// use reduce::Transform;
/// assert_eq!(reduce::cpu::transform_reduce(&[1i32, 2, 3], &Transform::square(), &Sum), 14);
/// ```
pub fn transform_reduce<T: Element, U: Element, O: Operator<U>>(
    input: &[T],
    map: &Transform<T, U>,
    op: &O,
) -> U {
    input
        .iter()
        .enumerate()
        .fold(op.identity(), |acc, (i, &x)| {
            op.combine(acc, map.apply(x, i as u64))
        })
}

/// Whether `candidate` beats `best` for an arg-reduction: any NaN beats
/// every number, otherwise the larger (`max`) or smaller value; ties keep
/// `best` (the lower index, as the scan is left to right).
fn beats<T: Element>(candidate: T, best: T, max: bool) -> bool {
    match (candidate.is_nan(), best.is_nan()) {
        (_, true) => false,
        (true, false) => true,
        _ if max => candidate > best,
        _ => candidate < best,
    }
}

fn arg<T: Element>(input: &[T], max: bool) -> Option<ArgExtreme<T>> {
    let (first, rest) = input.split_first()?;
    let mut best = ArgExtreme {
        value: *first,
        index: 0,
    };
    for (i, &x) in rest.iter().enumerate() {
        if beats(x, best.value, max) {
            best = ArgExtreme {
                value: x,
                index: i as u64 + 1,
            };
        }
    }
    Some(best)
}

/// The largest item and its index: the first index on ties; the first NaN
/// if there is one (as `torch.argmax` and `numpy.argmax`); `None` when empty.
///
/// ```
/// let found = reduce::cpu::argmax(&[1.0f32, 5.0, 5.0, -2.0]).unwrap();
/// assert_eq!((found.value, found.index), (5.0, 1));
/// assert_eq!(reduce::cpu::argmax(&[1.0f32, f32::NAN, 9.0]).unwrap().index, 1);
/// assert!(reduce::cpu::argmax::<f32>(&[]).is_none());
/// ```
pub fn argmax<T: Element>(input: &[T]) -> Option<ArgExtreme<T>> {
    arg(input, true)
}

/// The smallest item and its index: the first index on ties; the first NaN
/// if there is one; `None` when empty.
///
/// ```
/// let found = reduce::cpu::argmin(&[4i32, -3, 8, -3]).unwrap();
/// assert_eq!((found.value, found.index), (-3, 1));
/// ```
pub fn argmin<T: Element>(input: &[T]) -> Option<ArgExtreme<T>> {
    arg(input, false)
}

/// The smallest and the largest item (`max_of`/`min_of` folds from the
/// identities: `(highest, lowest)` when empty).
///
/// ```
/// assert_eq!(reduce::cpu::minmax(&[4i32, -3, 8]), (-3, 8));
/// assert_eq!(reduce::cpu::minmax::<u8>(&[]), (255, 0));
/// ```
pub fn minmax<T: Element>(input: &[T]) -> (T, T) {
    input
        .iter()
        .fold((T::highest(), T::lowest()), |(lo, hi), &x| {
            (lo.min_of(x), hi.max_of(x))
        })
}
