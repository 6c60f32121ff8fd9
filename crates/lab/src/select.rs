//! What a benchmark or lab run was asked to cover: sizes, methods, types,
//! as typed on the command line, validated per primitive before the GPU is
//! touched.

use gpu_core::{ElementType, Error, Result};

use super::sizes::{default_sweep, parse_counts, parse_dims_list};

/// The most elements one lab case may have: 2^32 (16 GiB of `f32` on the
/// host, several times over for the reference and the download). Larger
/// runs belong in the crates' own tests, not in a table.
pub const MAX_ELEMENTS: u64 = 1 << 32;

fn check_elements(what: &str, elements: u64) -> Result<()> {
    if elements > MAX_ELEMENTS {
        Err(Error::invalid(
            "sizes",
            format!("{what} is {elements} elements; the lab runs at most 2^32"),
        ))
    } else {
        Ok(())
    }
}

/// The user's choices; `None` means the primitive's defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// `--sizes`: counts (`2^24,123123123`) or dimensions (`4096x4096`).
    pub sizes: Option<String>,
    /// `--algos`: method names, comma-separated (case-insensitive).
    pub algos: Option<String>,
    /// `--types`: element types, comma-separated.
    pub types: Option<String>,
    /// `--sweep`: the labs' 2^12 … 2^29 and 5/8 of each (scan, compact).
    pub sweep: bool,
    /// `--block-size`: the teaching kernels' threads per block.
    pub block_threads: Option<u32>,
}

impl Selection {
    /// Element counts: `--sweep`, else `--sizes`, else `default`.
    pub fn counts(&self, default: &[usize]) -> Result<Vec<usize>> {
        if self.sweep {
            return Ok(default_sweep());
        }
        match &self.sizes {
            Some(text) => {
                let sizes = parse_counts(text)?;
                if sizes.is_empty() {
                    return Err(Error::invalid("sizes", "no size given"));
                }
                for &n in &sizes {
                    check_elements(&n.to_string(), n as u64)?;
                }
                Ok(sizes)
            }
            None => Ok(default.to_vec()),
        }
    }

    /// Matrix or image dimensions: `--sizes`, else `default`. `--sweep`
    /// is refused (the labs swept 1-D sizes only).
    pub fn dims(&self, default: &[(usize, usize)]) -> Result<Vec<(usize, usize)>> {
        if self.sweep {
            return Err(Error::invalid(
                "sweep",
                "--sweep is for scan and compact; give --sizes for 2-D primitives",
            ));
        }
        match &self.sizes {
            Some(text) => {
                let dims = parse_dims_list(text)?;
                if dims.is_empty() {
                    return Err(Error::invalid("sizes", "no size given"));
                }
                for &(rows, cols) in &dims {
                    let elements = (rows as u64).saturating_mul(cols as u64);
                    check_elements(&format!("{rows}x{cols}"), elements)?;
                }
                Ok(dims)
            }
            None => Ok(default.to_vec()),
        }
    }

    /// Element types: `--types`, else `default`; each must be in `allowed`.
    pub fn types(
        &self,
        default: &[ElementType],
        allowed: &[ElementType],
    ) -> Result<Vec<ElementType>> {
        let Some(text) = &self.types else {
            return Ok(default.to_vec());
        };
        let mut out = Vec::new();
        for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let t = ElementType::parse(&name.to_ascii_lowercase()).ok_or_else(|| {
                Error::invalid(
                    "types",
                    format!("{name:?} is not one of i32 u32 i64 u64 f32 f64"),
                )
            })?;
            if !allowed.contains(&t) {
                let names: Vec<&str> = allowed.iter().map(|t| t.name()).collect();
                return Err(Error::invalid(
                    "types",
                    format!(
                        "{name} is not offered here; choose from {}",
                        names.join(", ")
                    ),
                ));
            }
            if !out.contains(&t) {
                out.push(t);
            }
        }
        if out.is_empty() {
            return Err(Error::invalid("types", "no type given"));
        }
        Ok(out)
    }

    /// Methods: `--algos` matched against `names` ignoring case, `-`, `_`
    /// and `/` (so `decoupled-lookback` finds `DecoupledLookback`), else
    /// all of `default`. Returns indices into `names`.
    pub fn algos(&self, names: &[String], default: &[usize]) -> Result<Vec<usize>> {
        let Some(text) = &self.algos else {
            return Ok(default.to_vec());
        };
        let mut out = Vec::new();
        for wanted in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let index = names
                .iter()
                .position(|n| normalise(n) == normalise(wanted))
                .ok_or_else(|| {
                    Error::invalid(
                        "algos",
                        format!("{wanted:?} is not one of: {}", names.join(", ")),
                    )
                })?;
            if !out.contains(&index) {
                out.push(index);
            }
        }
        if out.is_empty() {
            return Err(Error::invalid("algos", "no method given"));
        }
        Ok(out)
    }

    /// The methods of `all` that `--algos` names (see [`Selection::algos`];
    /// `name` gives each one's name), all of them by default.
    pub fn methods<M: Copy>(&self, all: &[M], name: impl Fn(&M) -> String) -> Result<Vec<M>> {
        let names: Vec<String> = all.iter().map(name).collect();
        let every: Vec<usize> = (0..all.len()).collect();
        Ok(self
            .algos(&names, &every)?
            .into_iter()
            .map(|i| all[i])
            .collect())
    }

    /// Refuses `--block-size` for a primitive whose methods size their
    /// own blocks; `reason` says so.
    pub fn refuse_block_threads(&self, reason: &str) -> Result<()> {
        match self.block_threads {
            Some(_) => Err(Error::invalid("block_threads", reason)),
            None => Ok(()),
        }
    }
}

/// A method name without case and separators.
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_' | '/' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_by_name_and_block_threads_refused() {
        let all = [10u32, 20, 30];
        let name = |m: &u32| format!("m{m}");
        let none = Selection::default();
        assert_eq!(none.methods(&all, name).unwrap(), all);
        assert!(none.refuse_block_threads("sized by the methods").is_ok());
        let sel = Selection {
            algos: Some("M30,m10,m30".into()),
            block_threads: Some(128),
            ..Selection::default()
        };
        assert_eq!(sel.methods(&all, name).unwrap(), [30, 10]);
        match sel.refuse_block_threads("sized by the methods") {
            Err(Error::InvalidArgument { name, reason }) => {
                assert_eq!(
                    (name, reason.as_str()),
                    ("block_threads", "sized by the methods")
                )
            }
            other => panic!("{other:?}"),
        }
        let unknown = Selection {
            algos: Some("m40".into()),
            ..Selection::default()
        };
        assert!(unknown.methods(&all, name).is_err());
    }

    #[test]
    fn defaults_and_choices() {
        let none = Selection::default();
        assert_eq!(none.counts(&[5]).unwrap(), vec![5]);
        assert_eq!(none.dims(&[(2, 3)]).unwrap(), vec![(2, 3)]);
        let sel = Selection {
            sizes: Some("2^10,100".into()),
            types: Some("f32, i32,f32".into()),
            algos: Some("blelloch,TUNED".into()),
            ..Selection::default()
        };
        assert_eq!(sel.counts(&[]).unwrap(), vec![1024, 100]);
        assert_eq!(sel.dims(&[]).unwrap(), vec![(1024, 1024), (100, 100)]);
        assert_eq!(
            sel.types(&[], &ElementType::ALL).unwrap(),
            vec![ElementType::F32, ElementType::I32]
        );
        let names: Vec<String> = ["Blelloch", "Global", "Tuned"].map(String::from).to_vec();
        assert_eq!(sel.algos(&names, &[0]).unwrap(), vec![0, 2]);
        let kebab = Selection {
            algos: Some("decoupled-lookback".into()),
            ..Selection::default()
        };
        assert_eq!(
            kebab
                .algos(&["Blelloch".into(), "DecoupledLookback".into()], &[0])
                .unwrap(),
            vec![1]
        );
    }

    #[test]
    fn bad_choices_are_refused() {
        let sel = Selection {
            types: Some("f16".into()),
            algos: Some("quick".into()),
            sizes: Some("x".into()),
            ..Selection::default()
        };
        assert!(sel.types(&[], &ElementType::ALL).is_err());
        assert!(sel.algos(&["A".to_owned()], &[0]).is_err());
        assert!(sel.counts(&[]).is_err());
        let only_float = Selection {
            types: Some("i64".into()),
            ..Selection::default()
        };
        assert!(only_float
            .types(&[], &[ElementType::F32, ElementType::F64])
            .unwrap_err()
            .to_string()
            .contains("f32, f64"));
        let sweep = Selection {
            sweep: true,
            ..Selection::default()
        };
        assert_eq!(sweep.counts(&[]).unwrap().len(), 36);
        assert!(sweep.dims(&[]).is_err());
        // 2^20 is a fine count but a 2^20 × 2^20 matrix is refused.
        let big = Selection {
            sizes: Some("2^20".into()),
            ..Selection::default()
        };
        assert!(big.counts(&[]).is_ok());
        assert!(big
            .dims(&[])
            .unwrap_err()
            .to_string()
            .contains("at most 2^32"));
        let huge = Selection {
            sizes: Some("2^33".into()),
            ..Selection::default()
        };
        assert!(huge.counts(&[]).is_err());
    }
}
