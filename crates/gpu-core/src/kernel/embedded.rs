//! Kernels compiled ahead of time and embedded in the program (the
//! `parprims` crate's `aot` feature), consulted before the disk cache and
//! NVRTC: a machine with only the CUDA driver loads them directly.
//!
//! A table lists, per module and architecture, its cubin (keyed like the
//! disk cache, [`ModuleSource::cubin_key`] for `sm_XY`) and, per module, PTX
//! for one virtual architecture (keyed by `cubin_key("compute_XY")`), which
//! the driver compiles for GPUs newer than every embedded cubin. Tables are
//! installed once per process with [`install_embedded`].
//!
//! `PARPRIMS_EMBEDDED_PREFER_PTX=1` (any value but empty or `0`, read once
//! per process) hides the embedded cubins, so that a module found neither in
//! the disk cache nor by NVRTC loads its embedded PTX through the driver's
//! JIT, as on a GPU newer than every embedded cubin. Tests use it to run
//! that path on the GPU they have.

use std::ffi::OsStr;
use std::sync::{OnceLock, RwLock};

use super::source::{CubinKey, ModuleSource};

/// What an embedded image is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbeddedImage {
    /// Machine code for one `sm_XY`, loaded as it is.
    Cubin(&'static [u8]),
    /// PTX text for a `compute_XY`, compiled by the driver when loaded.
    Ptx(&'static str),
}

/// One embedded module image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedModule {
    /// `cubin_key(arch)` of the module's source, as a number.
    pub key: u128,
    /// The image.
    pub image: EmbeddedImage,
}

static TABLES: RwLock<Vec<&'static [EmbeddedModule]>> = RwLock::new(Vec::new());

/// Makes `table` available to every [`Gpu`](crate::Gpu) of this process;
/// installing the same table again changes nothing. Returns the number of
/// images installed in all.
///
/// ```
/// use gpu_core::kernel::{install_embedded, EmbeddedImage, EmbeddedModule};
/// let key = gpu_core::fill_module::<f32>().cubin_key("compute_80").0;
/// let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n"; // NVRTC's output, at build time
/// let table: &'static [EmbeddedModule] =
///     Box::leak(Box::new([EmbeddedModule { key, image: EmbeddedImage::Ptx(ptx) }]));
/// assert_eq!(install_embedded(table), 1);
/// assert_eq!(install_embedded(table), 1); // the same table again: nothing changes
/// ```
pub fn install_embedded(table: &'static [EmbeddedModule]) -> usize {
    let mut tables = TABLES.write().unwrap_or_else(|p| p.into_inner());
    if !tables.iter().any(|known| std::ptr::eq(*known, table)) {
        tables.push(table);
    }
    tables.iter().map(|t| t.len()).sum()
}

fn find(key: CubinKey) -> Option<EmbeddedImage> {
    let tables = TABLES.read().unwrap_or_else(|p| p.into_inner());
    tables
        .iter()
        .flat_map(|table| table.iter())
        .find(|module| module.key == key.0)
        .map(|module| module.image)
}

/// Whether an environment value turns a flag on: set, not empty, not `0`.
fn flag_is_on(value: Option<&OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether `PARPRIMS_EMBEDDED_PREFER_PTX` hides the embedded cubins (read
/// once per process).
fn prefer_ptx() -> bool {
    static PREFER_PTX: OnceLock<bool> = OnceLock::new();
    *PREFER_PTX
        .get_or_init(|| flag_is_on(std::env::var_os("PARPRIMS_EMBEDDED_PREFER_PTX").as_deref()))
}

/// The embedded cubin of `source` for `arch` (`sm_XY`), if any (none while
/// `PARPRIMS_EMBEDDED_PREFER_PTX` is on).
pub(crate) fn embedded_cubin(source: &ModuleSource, arch: &str) -> Option<&'static [u8]> {
    if prefer_ptx() {
        return None;
    }
    match find(source.cubin_key(arch))? {
        EmbeddedImage::Cubin(cubin) => Some(cubin),
        EmbeddedImage::Ptx(_) => None,
    }
}

/// The embedded PTX of `source` for the newest virtual architecture not
/// newer than `arch` (`sm_XY`), if any.
pub(crate) fn embedded_ptx(source: &ModuleSource, arch: &str) -> Option<&'static str> {
    let device: u32 = arch.strip_prefix("sm_")?.parse().ok()?;
    (50..=device).rev().find_map(|virtual_arch| {
        match find(source.cubin_key(&format!("compute_{virtual_arch}")))? {
            EmbeddedImage::Ptx(ptx) => Some(ptx),
            EmbeddedImage::Cubin(_) => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_images_are_found_by_key() {
        let source =
            ModuleSource::new("embedded_test").source("extern \"C\" __global__ void k() {}");
        let table: &'static [EmbeddedModule] = Box::leak(Box::new([
            EmbeddedModule {
                key: source.cubin_key("sm_90").0,
                image: EmbeddedImage::Cubin(b"cubin"),
            },
            EmbeddedModule {
                key: source.cubin_key("compute_80").0,
                image: EmbeddedImage::Ptx("ptx"),
            },
        ]));
        let count = install_embedded(table);
        assert_eq!(
            install_embedded(table),
            count,
            "installing twice adds nothing"
        );
        let cubin = (!prefer_ptx()).then_some(&b"cubin"[..]);
        assert_eq!(embedded_cubin(&source, "sm_90"), cubin);
        assert_eq!(embedded_cubin(&source, "sm_80"), None);
        assert_eq!(embedded_ptx(&source, "sm_100"), Some("ptx"));
        assert_eq!(embedded_ptx(&source, "sm_90"), Some("ptx"));
        assert_eq!(embedded_ptx(&source, "sm_75"), None);
    }

    #[test]
    fn the_prefer_ptx_flag_reads_like_the_other_switches() {
        assert!(!flag_is_on(None));
        assert!(!flag_is_on(Some(OsStr::new(""))));
        assert!(!flag_is_on(Some(OsStr::new("0"))));
        assert!(flag_is_on(Some(OsStr::new("1"))));
        assert!(flag_is_on(Some(OsStr::new("yes"))));
    }
}
