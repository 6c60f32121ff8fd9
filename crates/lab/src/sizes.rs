//! Problem sizes: parsing what people type (`2^28`, `123123123`,
//! `4096x4096`), the sweep of the labs, and reading sizes back from shapes.

use gpu_core::{Error, Result};

/// Parses an element count: decimal (`123123123`, `1_000_000`), a power of
/// two (`2^28`), or a product of those (`5*2^25`).
pub fn parse_count(text: &str) -> Result<usize> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::invalid("size", "empty size"));
    }
    let mut product: usize = 1;
    for factor in text.split('*') {
        let factor = factor.trim().replace('_', "");
        let value = if let Some((base, exponent)) = factor.split_once('^') {
            let base: usize = base
                .parse()
                .map_err(|_| Error::invalid("size", format!("{text:?}: bad base {base:?}")))?;
            let exponent: u32 = exponent.parse().map_err(|_| {
                Error::invalid("size", format!("{text:?}: bad exponent {exponent:?}"))
            })?;
            base.checked_pow(exponent)
                .ok_or_else(|| Error::invalid("size", format!("{text:?} overflows")))?
        } else {
            factor.parse::<usize>().map_err(|_| {
                Error::invalid(
                    "size",
                    format!("{text:?}: use a number, 2^k or a product like 5*2^20"),
                )
            })?
        };
        product = product
            .checked_mul(value)
            .ok_or_else(|| Error::invalid("size", format!("{text:?} overflows")))?;
    }
    Ok(product)
}

/// Parses a comma-separated list of counts.
pub fn parse_counts(text: &str) -> Result<Vec<usize>> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(parse_count)
        .collect()
}

/// Parses `ROWSxCOLS` (`4096x2048`) or a single count for a square
/// (`4096`, `2^12`). Both dimensions must be at least 1.
pub fn parse_dims(text: &str) -> Result<(usize, usize)> {
    let lower = text.trim().to_ascii_lowercase();
    let (rows, cols) = match lower.split_once('x') {
        Some((r, c)) => (parse_count(r)?, parse_count(c)?),
        None => {
            let side = parse_count(&lower)?;
            (side, side)
        }
    };
    if rows == 0 || cols == 0 {
        return Err(Error::invalid("size", format!("{text:?}: zero dimension")));
    }
    Ok((rows, cols))
}

/// Parses a comma-separated list of dimensions.
pub fn parse_dims_list(text: &str) -> Result<Vec<(usize, usize)>> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(parse_dims)
        .collect()
}

/// The labs' sweep: 2^k for k in `low..=high`, each followed by the
/// non-power-of-two 5/8 of it.
pub fn sweep(low: u32, high: u32) -> Vec<usize> {
    (low..=high)
        .flat_map(|k| {
            let n = 1usize << k;
            [n, n / 8 * 5]
        })
        .collect()
}

/// The sweep the issues ask for: 2^12 … 2^29 and 5/8 of each.
pub fn default_sweep() -> Vec<usize> {
    sweep(12, 29)
}

/// Elements in a shape as records write it: `268435456` → 268435456,
/// `4096x2048` → 8388608, `8192x8192/k3` → 67108864 (the part before `/`).
pub fn shape_elements(shape: &str) -> Option<u64> {
    let dims = shape.split('/').next()?;
    dims.split('x')
        .map(|d| d.trim().parse::<u64>().ok())
        .try_fold(1u64, |acc, d| acc.checked_mul(d?))
}

/// Whether every dimension of a shape is a power of two.
pub fn shape_is_power_of_two(shape: &str) -> bool {
    shape
        .split('/')
        .next()
        .map(|dims| {
            dims.split('x')
                .all(|d| d.trim().parse::<u64>().is_ok_and(|v| v.is_power_of_two()))
        })
        .unwrap_or(false)
}

/// `rows x cols` as records write it.
pub fn dims_shape(rows: usize, cols: usize) -> String {
    format!("{rows}x{cols}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("123123123").unwrap(), 123_123_123);
        assert_eq!(parse_count("1_000").unwrap(), 1000);
        assert_eq!(parse_count("2^28").unwrap(), 1 << 28);
        assert_eq!(parse_count(" 5*2^25 ").unwrap(), 5 << 25);
        assert_eq!(parse_count("0").unwrap(), 0);
        assert!(parse_count("").is_err());
        assert!(parse_count("2^x").is_err());
        assert!(parse_count("abc").is_err());
        assert!(parse_count("2^64").is_err());
        assert_eq!(parse_counts("2^10, 1000,").unwrap(), vec![1024, 1000]);
    }

    #[test]
    fn dims_parse() {
        assert_eq!(parse_dims("4096x2048").unwrap(), (4096, 2048));
        assert_eq!(parse_dims("2^12").unwrap(), (4096, 4096));
        assert_eq!(parse_dims("1X7").unwrap(), (1, 7));
        assert!(parse_dims("0x5").is_err());
        assert!(parse_dims("4096x").is_err());
        assert_eq!(
            parse_dims_list("1024,10000x10000").unwrap(),
            vec![(1024, 1024), (10_000, 10_000)]
        );
    }

    #[test]
    fn the_sweep_of_the_labs() {
        let s = default_sweep();
        assert_eq!(s.len(), 2 * 18);
        assert_eq!(s[0], 4096);
        assert_eq!(s[1], 2560);
        assert_eq!(*s.last().unwrap(), (1 << 29) / 8 * 5);
        assert!(s.iter().step_by(2).all(|n| n.is_power_of_two()));
        assert!(s.iter().skip(1).step_by(2).all(|n| !n.is_power_of_two()));
    }

    #[test]
    fn shapes_back_to_sizes() {
        assert_eq!(shape_elements("268435456"), Some(1 << 28));
        assert_eq!(shape_elements("4096x2048"), Some(8_388_608));
        assert_eq!(shape_elements("8192x8192/k3"), Some(67_108_864));
        assert_eq!(shape_elements("abc"), None);
        assert!(shape_is_power_of_two("8192x8192/k3"));
        assert!(!shape_is_power_of_two("10000x10000"));
        assert!(!shape_is_power_of_two("167772160"));
        assert_eq!(dims_shape(3, 4), "3x4");
    }
}
