//! Argument checks as pure functions of lengths and addresses, so CI can
//! test them without a GPU. Every public operation runs them before it
//! allocates, compiles or launches anything: an operation that returns one
//! of these errors has written nothing.

use gpu_core::{Error, Result};

/// `flags` must have one byte per input item.
///
/// ```
/// use compact::validate::validate_flags;
/// assert!(validate_flags(10, 10).is_ok());
/// assert!(validate_flags(10, 9).is_err());
/// ```
pub fn validate_flags(input_len: usize, flags_len: usize) -> Result<()> {
    Error::check_len("flags", input_len, flags_len)
}

/// `count_out` must hold exactly one `u64`.
///
/// ```
/// use compact::validate::validate_count_out;
/// assert!(validate_count_out(1).is_ok());
/// assert!(validate_count_out(2).is_err());
/// ```
pub fn validate_count_out(count_out_len: usize) -> Result<()> {
    Error::check_len("count_out", 1, count_out_len)
}

/// A select's output: the count is only known on the device, so the output
/// must be able to hold every item (`output_len >= input_len`).
///
/// ```
/// use compact::validate::validate_select_output;
/// assert!(validate_select_output(10, 16).is_ok());
/// assert!(validate_select_output(10, 9).is_err());
/// ```
pub fn validate_select_output(input_len: usize, output_len: usize) -> Result<()> {
    if output_len < input_len {
        return Err(Error::invalid(
            "output",
            format!(
                "{output_len} elements cannot hold a selection from {input_len} items \
                 (the count is only known on the device): give at least {input_len}"
            ),
        ));
    }
    Ok(())
}

/// A partition's output holds every item: `output_len == input_len`.
///
/// ```
/// use compact::validate::validate_partition_output;
/// assert!(validate_partition_output(10, 10).is_ok());
/// assert!(validate_partition_output(10, 16).is_err());
/// ```
pub fn validate_partition_output(input_len: usize, output_len: usize) -> Result<()> {
    Error::check_len("output", input_len, output_len)
}

/// No two of the named device ranges `(name, address, bytes)` may share a
/// byte (compaction is not in place). Empty ranges never overlap.
///
/// ```
/// use compact::validate::validate_disjoint;
/// assert!(validate_disjoint(&[("input", 0x1000, 400), ("output", 0x2000, 400)]).is_ok());
/// assert!(validate_disjoint(&[("input", 0x1000, 400), ("output", 0x1100, 400)]).is_err());
/// assert!(validate_disjoint(&[("input", 0x1000, 0), ("output", 0x1000, 400)]).is_ok()); // empty
/// ```
pub fn validate_disjoint(ranges: &[(&'static str, u64, usize)]) -> Result<()> {
    for (i, &(name_a, start_a, bytes_a)) in ranges.iter().enumerate() {
        for &(name_b, start_b, bytes_b) in &ranges[i + 1..] {
            if bytes_a == 0 || bytes_b == 0 {
                continue;
            }
            let end_a = start_a.saturating_add(bytes_a as u64);
            let end_b = start_b.saturating_add(bytes_b as u64);
            if start_a < end_b && start_b < end_a {
                return Err(Error::invalid(
                    name_a,
                    format!("overlaps `{name_b}`: compaction does not work in place"),
                ));
            }
        }
    }
    Ok(())
}

/// Everything a `select_*_into` checks: flags length (when selecting by
/// flags), output capacity, `count_out` length, and that nothing written
/// overlaps anything else.
///
/// ```
/// use compact::validate::validate_select_into;
/// // 100 i32 items at 0x10000 with flags at 0x20000; output and count elsewhere.
/// let (input, flags, count) = ((0x10000, 100, 4), Some((0x20000, 100)), (0x40000, 1));
/// assert!(validate_select_into(input, flags, (0x30000, 100, 4), count).is_ok());
/// assert!(validate_select_into(input, flags, (0x30000, 50, 4), count).is_err()); // too small
/// assert!(validate_select_into(input, flags, (0x10100, 100, 4), count).is_err()); // overlaps input
/// ```
pub fn validate_select_into(
    input: (u64, usize, usize),
    flags: Option<(u64, usize)>,
    output: (u64, usize, usize),
    count_out: (u64, usize),
) -> Result<()> {
    let (input_ptr, input_len, element_bytes) = input;
    let (output_ptr, output_len, _) = output;
    if let Some((_, flags_len)) = flags {
        validate_flags(input_len, flags_len)?;
    }
    validate_select_output(input_len, output_len)?;
    validate_count_out(count_out.1)?;
    let mut ranges = vec![
        ("output", output_ptr, output_len * element_bytes),
        ("count_out", count_out.0, count_out.1 * 8),
        ("input", input_ptr, input_len * element_bytes),
    ];
    if let Some((flags_ptr, flags_len)) = flags {
        ranges.push(("flags", flags_ptr, flags_len));
    }
    validate_disjoint(&ranges)
}

/// Everything `partition_into` checks.
///
/// ```
/// use compact::validate::validate_partition_into;
/// let (input, count) = ((0x10000, 100, 8), (0x40000, 1));
/// assert!(validate_partition_into(input, (0x30000, 100, 8), count).is_ok());
/// assert!(validate_partition_into(input, (0x30000, 101, 8), count).is_err()); // exactly n
/// ```
pub fn validate_partition_into(
    input: (u64, usize, usize),
    output: (u64, usize, usize),
    count_out: (u64, usize),
) -> Result<()> {
    let (input_ptr, input_len, element_bytes) = input;
    let (output_ptr, output_len, _) = output;
    validate_partition_output(input_len, output_len)?;
    validate_count_out(count_out.1)?;
    validate_disjoint(&[
        ("output", output_ptr, output_len * element_bytes),
        ("count_out", count_out.0, count_out.1 * 8),
        ("input", input_ptr, input_len * element_bytes),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked() {
        assert!(validate_flags(10, 10).is_ok());
        assert!(matches!(
            validate_flags(10, 9),
            Err(Error::LengthMismatch {
                expected: 10,
                actual: 9,
                ..
            })
        ));
        assert!(validate_select_output(10, 10).is_ok());
        assert!(validate_select_output(10, 11).is_ok());
        assert!(validate_select_output(0, 0).is_ok());
        assert!(validate_select_output(10, 9).is_err());
        assert!(validate_partition_output(10, 10).is_ok());
        assert!(validate_partition_output(10, 11).is_err());
        assert!(validate_count_out(1).is_ok());
        assert!(validate_count_out(0).is_err());
        assert!(validate_count_out(2).is_err());
    }

    #[test]
    fn overlaps_are_refused_and_neighbours_allowed() {
        assert!(validate_disjoint(&[("a", 0, 16), ("b", 16, 16)]).is_ok());
        assert!(validate_disjoint(&[("a", 0, 17), ("b", 16, 16)]).is_err());
        assert!(validate_disjoint(&[("a", 100, 0), ("b", 90, 20)]).is_ok());
        assert!(validate_disjoint(&[("a", 0, 8), ("b", 64, 8), ("c", 4, 1)]).is_err());
    }

    #[test]
    fn into_checks_cover_every_argument() {
        let input = (0x1000, 100, 4);
        let flags = Some((0x2000, 100));
        let output = (0x3000, 100, 4);
        let count = (0x4000, 1);
        assert!(validate_select_into(input, flags, output, count).is_ok());
        assert!(validate_select_into(input, Some((0x2000, 99)), output, count).is_err());
        assert!(validate_select_into(input, flags, (0x3000, 99, 4), count).is_err());
        assert!(validate_select_into(input, flags, output, (0x4000, 2)).is_err());
        // Output on top of the input, count inside the output.
        assert!(validate_select_into(input, flags, (0x1000, 100, 4), count).is_err());
        assert!(validate_select_into(input, flags, output, (0x3008, 1)).is_err());
        assert!(validate_select_into(input, None, output, count).is_ok());
        assert!(validate_partition_into(input, output, count).is_ok());
        assert!(validate_partition_into(input, (0x3000, 101, 4), count).is_err());
        assert!(validate_partition_into(input, output, (0x1010, 1)).is_err());
    }
}
