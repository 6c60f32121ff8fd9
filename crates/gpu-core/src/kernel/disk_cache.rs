//! The on-disk cubin cache, finding a module's cubin (cache first, NVRTC
//! second), and warming a cache ahead of time for every kernel the
//! workspace can request, for one or several architectures.
//!
//! The cache never fails an operation that NVRTC could still serve: an
//! unreadable, corrupt or unwritable cache falls back to compiling. Without
//! NVRTC the cache is the only source of kernels, and a module it does not
//! hold is [`Error::KernelNotCached`], whose message says how to fill one
//! (`parprims warm-cache --arch sm_XY --out DIR`, then
//! `PARPRIMS_CACHE_DIR=DIR`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{
    compile_cubin, nvrtc_available, nvrtc_version, stable_hash128, CubinKey, ModuleSource,
};
use crate::error::{Error, Result};

/// The on-disk cubin cache.
///
/// Directory: `PARPRIMS_CACHE_DIR` if set (empty disables the cache), else
/// `$XDG_CACHE_HOME/parprims`, else `$HOME/.cache/parprims` (on Windows
/// `%LOCALAPPDATA%\parprims`).
///
/// One file per cubin, named by its [`CubinKey`] (a 128-bit hash of the
/// module's source, NVRTC options and architecture, not of the NVRTC
/// version), so a directory filled on one machine serves any other with the
/// same architecture, with or without NVRTC. Each file is a 56-byte header
/// (magic `PPCUBIN2`, the key, the NVRTC version that compiled it, the
/// body's length, and an XXH3-128 checksum of header and body) and the
/// cubin. A file that does not verify (truncated, corrupt, another key) is
/// ignored and rebuilt when NVRTC is present. Files are written to a
/// temporary name and renamed into place, so two processes filling the
/// cache at once never read half a file.
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: Option<PathBuf>,
}

const CACHE_MAGIC: &[u8; 8] = b"PPCUBIN2";
/// magic 8, key 16, NVRTC major 4 + minor 4, body length 8, checksum 16.
const HEADER_BYTES: usize = 56;
const CHECKSUM_AT: usize = 40;

/// A cubin read back from the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedCubin {
    /// The cubin (ELF, real `sm_XY` machine code).
    pub cubin: Vec<u8>,
    /// The NVRTC (major, minor) that compiled it, as recorded in the header;
    /// (0, 0) when the writer did not know it.
    pub nvrtc_version: (i32, i32),
}

/// What the cache holds under a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheLookup {
    /// An intact entry.
    Hit(CachedCubin),
    /// No entry (or no cache directory).
    Missing,
    /// An entry that does not verify; why.
    Corrupt(String),
}

impl DiskCache {
    /// The cache the environment selects.
    ///
    /// ```
    /// use gpu_core::kernel::DiskCache;
    /// // PARPRIMS_CACHE_DIR, else $XDG_CACHE_HOME/parprims, else ~/.cache/parprims;
    /// // PARPRIMS_CACHE_DIR="" turns the cache off.
    /// let cache = DiskCache::from_env();
    /// println!("kernel cache: {:?}", cache.dir());
    /// ```
    pub fn from_env() -> Self {
        let dir = match std::env::var_os("PARPRIMS_CACHE_DIR") {
            Some(d) if d.is_empty() => None,
            Some(d) => Some(PathBuf::from(d)),
            None => std::env::var_os("XDG_CACHE_HOME")
                .filter(|d| !d.is_empty())
                .map(|d| PathBuf::from(d).join("parprims"))
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|d| !d.is_empty())
                        .map(|h| PathBuf::from(h).join(".cache").join("parprims"))
                })
                .or_else(|| {
                    std::env::var_os("LOCALAPPDATA").map(|d| PathBuf::from(d).join("parprims"))
                }),
        };
        DiskCache { dir }
    }

    /// A cache in `dir`.
    ///
    /// ```
    /// use gpu_core::kernel::DiskCache;
    /// let cache = DiskCache::at("/opt/my-app/kernels"); // e.g. shipped with the application
    /// assert_eq!(cache.dir(), Some(std::path::Path::new("/opt/my-app/kernels")));
    /// ```
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        DiskCache {
            dir: Some(dir.into()),
        }
    }

    /// No disk cache: always compile.
    ///
    /// ```
    /// use gpu_core::kernel::{CubinKey, DiskCache};
    /// let cache = DiskCache::disabled();
    /// assert_eq!(cache.dir(), None);
    /// assert!(!cache.store(CubinKey(1), b"cubin")); // nothing is written
    /// ```
    pub fn disabled() -> Self {
        DiskCache { dir: None }
    }

    /// The directory, if the cache is enabled.
    ///
    /// ```
    /// use gpu_core::kernel::DiskCache;
    /// assert!(DiskCache::at("/tmp/kernels").dir().is_some());
    /// assert!(DiskCache::disabled().dir().is_none());
    /// ```
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Where the cubin of `key` lives (`None` for a disabled cache).
    ///
    /// ```
    /// use gpu_core::kernel::{DiskCache, ModuleSource};
    /// let key = ModuleSource::new("example").cubin_key("sm_90");
    /// let path = DiskCache::at("/tmp/kernels").path(key).unwrap();
    /// assert_eq!(path, std::path::Path::new("/tmp/kernels").join(format!("{key}.cubin")));
    /// assert_eq!(DiskCache::disabled().path(key), None);
    /// ```
    pub fn path(&self, key: CubinKey) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{key}.cubin")))
    }

    /// What the cache holds under `key`, verified against its checksum.
    ///
    /// ```
    /// use gpu_core::kernel::{CacheLookup, CubinKey, DiskCache};
    /// let dir = std::env::temp_dir().join(format!("parprims-doc-lookup-{}", std::process::id()));
    /// let cache = DiskCache::at(&dir);
    /// assert_eq!(cache.lookup(CubinKey(7)), CacheLookup::Missing);
    /// cache.try_store(CubinKey(7), b"not really a cubin", (13, 0))?;
    /// assert!(matches!(cache.lookup(CubinKey(7)), CacheLookup::Hit(entry) if entry.nvrtc_version == (13, 0)));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lookup(&self, key: CubinKey) -> CacheLookup {
        let Some(path) = self.path(key) else {
            return CacheLookup::Missing;
        };
        match std::fs::read(&path) {
            Ok(bytes) => match decode_entry(key, &bytes) {
                Ok(entry) => CacheLookup::Hit(entry),
                Err(reason) => CacheLookup::Corrupt(reason),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CacheLookup::Missing,
            Err(e) => CacheLookup::Corrupt(format!("unreadable: {e}")),
        }
    }

    /// The cubin stored under `key`, if present and intact.
    ///
    /// ```
    /// use gpu_core::kernel::{CubinKey, DiskCache};
    /// let dir = std::env::temp_dir().join(format!("parprims-doc-load-{}", std::process::id()));
    /// let cache = DiskCache::at(&dir);
    /// assert!(cache.store(CubinKey(42), b"\x7fELF..."));
    /// assert_eq!(cache.load(CubinKey(42)).as_deref(), Some(&b"\x7fELF..."[..]));
    /// assert_eq!(cache.load(CubinKey(43)), None);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn load(&self, key: CubinKey) -> Option<Vec<u8>> {
        match self.lookup(key) {
            CacheLookup::Hit(entry) => Some(entry.cubin),
            CacheLookup::Missing | CacheLookup::Corrupt(_) => None,
        }
    }

    /// Stores `cubin` under `key`, recording this process's NVRTC version
    /// ((0, 0) without NVRTC); returns whether it was written.
    ///
    /// ```
    /// use gpu_core::kernel::{CubinKey, DiskCache};
    /// let dir = std::env::temp_dir().join(format!("parprims-doc-store-{}", std::process::id()));
    /// let cache = DiskCache::at(&dir);
    /// assert!(cache.store(CubinKey(1), b"cubin bytes")); // false if the directory is not writable
    /// assert!(cache.load(CubinKey(1)).is_some());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn store(&self, key: CubinKey, cubin: &[u8]) -> bool {
        let version = nvrtc_version().unwrap_or((0, 0));
        self.try_store(key, cubin, version).is_ok()
    }

    /// Stores `cubin` under `key` with the NVRTC version that compiled it.
    /// Writes a temporary file beside the entry and renames it into place
    /// (atomic on POSIX file systems), so a concurrent reader sees the old
    /// entry, no entry or the whole new one, never part of one.
    ///
    /// Errors: a disabled cache ([`std::io::ErrorKind::Unsupported`]) or the
    /// file system's error.
    ///
    /// ```
    /// use gpu_core::kernel::{CubinKey, DiskCache};
    /// let dir = std::env::temp_dir().join(format!("parprims-doc-try-store-{}", std::process::id()));
    /// DiskCache::at(&dir).try_store(CubinKey(1), b"cubin bytes", (13, 0))?;
    /// let refused = DiskCache::disabled().try_store(CubinKey(1), b"cubin bytes", (13, 0));
    /// assert_eq!(refused.unwrap_err().kind(), std::io::ErrorKind::Unsupported);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_store(
        &self,
        key: CubinKey,
        cubin: &[u8],
        nvrtc_version: (i32, i32),
    ) -> std::io::Result<()> {
        let Some(path) = self.path(key) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the disk cache is disabled",
            ));
        };
        let dir = path
            .parent()
            .expect("cache files live in the cache directory");
        std::fs::create_dir_all(dir)?;
        let bytes = encode_entry(key, cubin, nvrtc_version);
        // Unique per process and thread, so concurrent writers never share
        // a temporary file.
        let tmp = dir.join(format!(
            ".{key}.{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        let written = std::fs::File::create(&tmp).and_then(|mut file| {
            file.write_all(&bytes)?;
            file.sync_all()
        });
        written
            .and_then(|()| std::fs::rename(&tmp, &path))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
    }
}

fn encode_entry(key: CubinKey, cubin: &[u8], nvrtc_version: (i32, i32)) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER_BYTES + cubin.len());
    bytes.extend_from_slice(CACHE_MAGIC);
    bytes.extend_from_slice(&key.0.to_le_bytes());
    bytes.extend_from_slice(&nvrtc_version.0.to_le_bytes());
    bytes.extend_from_slice(&nvrtc_version.1.to_le_bytes());
    bytes.extend_from_slice(&(cubin.len() as u64).to_le_bytes());
    let checksum = stable_hash128(&[&bytes[..CHECKSUM_AT], cubin]);
    bytes.extend_from_slice(&checksum.to_le_bytes());
    bytes.extend_from_slice(cubin);
    bytes
}

fn decode_entry(key: CubinKey, bytes: &[u8]) -> std::result::Result<CachedCubin, String> {
    if bytes.len() < HEADER_BYTES {
        return Err(format!("truncated: {} bytes, no whole header", bytes.len()));
    }
    if &bytes[..8] != CACHE_MAGIC {
        return Err("not a parprims cubin cache file (bad magic)".to_owned());
    }
    let le_u128 = |at: usize| u128::from_le_bytes(bytes[at..at + 16].try_into().expect("16 bytes"));
    let le_i32 = |at: usize| i32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let stored_key = le_u128(8);
    let nvrtc_version = (le_i32(24), le_i32(28));
    let len = u64::from_le_bytes(bytes[32..40].try_into().expect("8 bytes"));
    let checksum = le_u128(CHECKSUM_AT);
    let body = &bytes[HEADER_BYTES..];
    if stored_key != key.0 {
        return Err(format!("holds key {:032x}", stored_key));
    }
    if body.len() as u64 != len {
        return Err(format!("truncated: {} of {len} cubin bytes", body.len()));
    }
    if stable_hash128(&[&bytes[..CHECKSUM_AT], body]) != checksum {
        return Err("checksum mismatch".to_owned());
    }
    Ok(CachedCubin {
        cubin: body.to_vec(),
        nvrtc_version,
    })
}

/// A compiler of cubins: [`compile_cubin`] when NVRTC is present.
pub type CubinCompiler<'a> = &'a (dyn Fn(&ModuleSource, &str) -> Result<Vec<u8>> + Sync);

/// [`compile_cubin`] if NVRTC can be loaded in this process, else `None`.
///
/// ```
/// use gpu_core::kernel::{find_cubin, nvrtc_compiler, DiskCache};
/// let compiler = nvrtc_compiler(); // None without NVRTC: only cached kernels load
/// let found = find_cubin(&DiskCache::disabled(), &gpu_core::fill_module::<u8>(), "sm_90", compiler);
/// assert_eq!(found.is_ok(), compiler.is_some());
/// ```
pub fn nvrtc_compiler() -> Option<CubinCompiler<'static>> {
    nvrtc_available()
        .ok()
        .map(|()| &compile_cubin as CubinCompiler<'static>)
}

/// A module's cubin and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundCubin {
    /// The cubin.
    pub cubin: Vec<u8>,
    /// Its key.
    pub key: CubinKey,
    /// Read from the disk cache (else compiled now).
    pub from_disk: bool,
}

/// The cubin of `source` for `arch`: from `cache` when it holds an intact
/// entry, else compiled by `compiler` and stored (a corrupt entry is
/// replaced). `compiler` is `None` when NVRTC is not available
/// ([`nvrtc_compiler`]); then a module the cache does not hold is
/// [`Error::KernelNotCached`]. The lookup itself needs no NVRTC: the key is
/// computed from the source, options and architecture alone.
///
/// A cache that cannot be written degrades to compiling in memory, with
/// one warning on stderr per process.
///
/// ```
/// use gpu_core::kernel::{find_cubin, nvrtc_compiler, DiskCache};
/// let dir = std::env::temp_dir().join(format!("parprims-doc-find-{}", std::process::id()));
/// let (cache, source) = (DiskCache::at(&dir), gpu_core::fill_module::<f32>());
/// // Without a compiler, a module the cache does not hold is Error::KernelNotCached.
/// assert!(find_cubin(&cache, &source, "sm_90", None).is_err());
/// if let Some(nvrtc) = nvrtc_compiler() {
///     assert!(!find_cubin(&cache, &source, "sm_90", Some(nvrtc))?.from_disk); // compiled, stored
///     assert!(find_cubin(&cache, &source, "sm_90", None)?.from_disk); // now from the cache
/// }
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn find_cubin(
    cache: &DiskCache,
    source: &ModuleSource,
    arch: &str,
    compiler: Option<CubinCompiler<'_>>,
) -> Result<FoundCubin> {
    let key = source.cubin_key(arch);
    let reason = match cache.lookup(key) {
        CacheLookup::Hit(entry) => {
            return Ok(FoundCubin {
                cubin: entry.cubin,
                key,
                from_disk: true,
            })
        }
        CacheLookup::Missing => "no entry".to_owned(),
        CacheLookup::Corrupt(why) => format!("its entry does not verify ({why})"),
    };
    let Some(compile) = compiler else {
        return Err(not_cached(cache, source, arch, reason));
    };
    let cubin = compile_and_store(cache, source, arch, key, compile)?;
    Ok(FoundCubin {
        cubin,
        key,
        from_disk: false,
    })
}

/// Compiles `source` for `arch` and stores it under `key` (best effort,
/// warning once per process when the cache cannot be written).
pub(crate) fn compile_and_store(
    cache: &DiskCache,
    source: &ModuleSource,
    arch: &str,
    key: CubinKey,
    compile: CubinCompiler<'_>,
) -> Result<Vec<u8>> {
    let cubin = compile(source, arch)?;
    if cache.dir().is_some() {
        let version = nvrtc_version().unwrap_or((0, 0));
        if let Err(e) = cache.try_store(key, &cubin, version) {
            static WARNED: AtomicBool = AtomicBool::new(false);
            warn_once(&WARNED, &unwritable_warning(cache, &e));
        }
    }
    Ok(cubin)
}

/// [`Error::KernelNotCached`] for `source` on `arch`.
pub(crate) fn not_cached(
    cache: &DiskCache,
    source: &ModuleSource,
    arch: &str,
    reason: String,
) -> Error {
    Error::KernelNotCached {
        module: source.name().to_owned(),
        arch: arch.to_owned(),
        cache: cache.dir().map_or_else(
            || "disabled (PARPRIMS_CACHE_DIR is empty)".to_owned(),
            |d| d.display().to_string(),
        ),
        reason,
    }
}

fn unwritable_warning(cache: &DiskCache, error: &std::io::Error) -> String {
    format!(
        "parprims: warning: cannot write the kernel cache in {} ({error}); kernels are compiled \
         in memory only, so every new process compiles them again. Set PARPRIMS_CACHE_DIR to a \
         writable directory, or to the empty string to turn the cache off",
        cache
            .dir()
            .map_or_else(String::new, |d| d.display().to_string())
    )
}

/// Prints `message` on stderr the first time `flag` is seen unset; returns
/// whether it printed.
fn warn_once(flag: &AtomicBool, message: &str) -> bool {
    let first = !flag.swap(true, Ordering::Relaxed);
    if first {
        eprintln!("{message}");
    }
    first
}

/// What [`warm_disk_cache`] did, counted over every (module, architecture).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheWarmReport {
    /// Cubins compiled by NVRTC and written to the cache.
    pub compiled: usize,
    /// Cubins the cache already held (read back and verified, not rebuilt).
    pub already_cached: usize,
    /// Cubins that compiled but could not be written (unwritable directory).
    pub not_stored: usize,
    /// Cubins that did not compile, each as `sm_XY module: NVRTC's error`.
    pub failures: Vec<String>,
}

/// Checks that `arch` is `sm_` and digits (`sm_90`).
///
/// ```
/// use gpu_core::kernel::validate_arch;
/// assert!(validate_arch("sm_90").is_ok());
/// assert!(validate_arch("compute_90").is_err());
/// assert!(validate_arch("sm_9a").is_err());
/// ```
pub fn validate_arch(arch: &str) -> Result<()> {
    let digits = arch.strip_prefix("sm_").unwrap_or("");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid(
            "arch",
            format!("{arch:?}: expected sm_ and digits, like sm_90"),
        ));
    }
    Ok(())
}

/// Compiles every module of `modules` for every architecture of `archs`
/// (`sm_80`, `sm_90`) into `cache`, on `threads` threads, skipping cubins
/// already there, so that later processes load every kernel from disk
/// instead of waiting for NVRTC at its first use, or run without NVRTC at
/// all (a container image, an application that ships its kernels). Needs
/// NVRTC, not a GPU. The keys are the ones [`crate::Gpu::module`] computes
/// ([`ModuleSource::cubin_key`]), which do not depend on the NVRTC
/// version, so any process on a device of one of `archs` finds them.
///
/// Errors: [`Error::NoNvrtc`] without NVRTC; [`Error::InvalidArgument`] for a
/// disabled cache (`PARPRIMS_CACHE_DIR` empty), zero threads, no
/// architecture, or one that is not `sm_` and digits (checked before
/// anything is compiled). A module that does not compile is listed in the
/// report's `failures` and the others are still compiled.
///
/// ```
/// use gpu_core::kernel::{nvrtc_available, warm_disk_cache, DiskCache};
/// let dir = std::env::temp_dir().join(format!("parprims-doc-warm-{}", std::process::id()));
/// let cache = DiskCache::at(&dir);
/// if nvrtc_available().is_ok() {
///     let modules = [gpu_core::fill_module::<i32>()];
///     let report = warm_disk_cache(&cache, &modules, &["sm_80", "sm_90"], 2)?;
///     assert_eq!((report.compiled, report.failures.len()), (2, 0));
///     assert_eq!(warm_disk_cache(&cache, &modules, &["sm_90"], 1)?.already_cached, 1);
/// }
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn warm_disk_cache(
    cache: &DiskCache,
    modules: &[ModuleSource],
    archs: &[&str],
    threads: usize,
) -> Result<CacheWarmReport> {
    if cache.dir().is_none() {
        return Err(Error::invalid(
            "cache",
            "the disk cache is disabled (PARPRIMS_CACHE_DIR is empty)",
        ));
    }
    if threads == 0 {
        return Err(Error::invalid("threads", "0: at least one thread"));
    }
    if archs.is_empty() {
        return Err(Error::invalid("arch", "no architecture given"));
    }
    for arch in archs {
        validate_arch(arch)?;
    }
    let version = nvrtc_version()?;
    let jobs: Vec<(&ModuleSource, &str)> = archs
        .iter()
        .flat_map(|&arch| modules.iter().map(move |module| (module, arch)))
        .collect();
    let report = std::sync::Mutex::new(CacheWarmReport::default());
    for_each_in_parallel(&jobs, threads, |&(module, arch)| {
        let key = module.cubin_key(arch);
        let outcome = if cache.load(key).is_some() {
            Ok(None)
        } else {
            compile_cubin(module, arch)
                .map(|cubin| Some(cache.try_store(key, &cubin, version).is_ok()))
        };
        let mut report = report.lock().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Ok(None) => report.already_cached += 1,
            Ok(Some(true)) => report.compiled += 1,
            Ok(Some(false)) => report.not_stored += 1,
            Err(e) => report
                .failures
                .push(format!("{arch} {}: {e}", module.name())),
        }
    });
    Ok(report.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// Calls `work` once for every item, on up to `threads` worker threads
/// (at least one), each taking the next item not yet taken; returns when
/// all are done. For many independent NVRTC compilations (each one
/// single-threaded and tens of milliseconds to seconds long), where the
/// items' costs are too uneven for a fixed split.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use gpu_core::kernel::for_each_in_parallel;
/// let total = AtomicU64::new(0);
/// for_each_in_parallel(&[1u64, 2, 3, 4], 3, |&x| {
///     total.fetch_add(x, Ordering::Relaxed);
/// });
/// assert_eq!(total.into_inner(), 10);
/// ```
pub fn for_each_in_parallel<T: Sync>(items: &[T], threads: usize, work: impl Fn(&T) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = threads.clamp(1, items.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(item) =
                    items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    work(item);
                }
            });
        }
    });
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::cubin_defines;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn for_each_in_parallel_visits_every_item_once() {
        let items: Vec<usize> = (0..1000).collect();
        for threads in [0, 1, 3, 64, 5000] {
            let seen: Vec<AtomicUsize> = (0..items.len()).map(|_| Default::default()).collect();
            for_each_in_parallel(&items, threads, |&i| {
                seen[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                seen.iter().all(|c| c.load(Ordering::Relaxed) == 1),
                "threads = {threads}"
            );
        }
        // No items: returns at once.
        for_each_in_parallel(&[] as &[u8], 4, |_| unreachable!());
    }

    fn scratch_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("parprims-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    const KEY: CubinKey = CubinKey(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);

    #[test]
    fn entries_round_trip_with_the_nvrtc_version_recorded() {
        let dir = scratch_dir("cache");
        let cache = DiskCache::at(&dir);
        assert_eq!(cache.lookup(KEY), CacheLookup::Missing);
        cache.try_store(KEY, b"cubin bytes", (12, 9)).unwrap();
        assert_eq!(
            cache.lookup(KEY),
            CacheLookup::Hit(CachedCubin {
                cubin: b"cubin bytes".to_vec(),
                nvrtc_version: (12, 9),
            })
        );
        assert_eq!(cache.load(KEY).as_deref(), Some(&b"cubin bytes"[..]));
        let name = cache.path(KEY).unwrap();
        assert_eq!(
            name.file_name().unwrap().to_str().unwrap(),
            "0123456789abcdeffedcba9876543210.cubin"
        );
        // No temporary files are left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // An empty cubin is a valid entry too.
        cache.try_store(CubinKey(1), b"", (13, 0)).unwrap();
        assert_eq!(cache.load(CubinKey(1)).as_deref(), Some(&b""[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn truncated_corrupt_and_misplaced_entries_do_not_verify() {
        let dir = scratch_dir("corrupt");
        let cache = DiskCache::at(&dir);
        cache.try_store(KEY, b"cubin bytes", (13, 0)).unwrap();
        let path = cache.path(KEY).unwrap();
        let good = std::fs::read(&path).unwrap();
        let corrupt = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            matches!(cache.lookup(KEY), CacheLookup::Corrupt(_))
        };
        // Every single flipped byte, header or body, is caught (the checksum
        // covers the recorded NVRTC version too).
        for at in 0..good.len() {
            let mut bytes = good.clone();
            bytes[at] ^= 0x40;
            assert!(corrupt(&bytes), "flipped byte {at} not detected");
        }
        // Every truncation, and an appended byte.
        for len in 0..good.len() {
            assert!(corrupt(&good[..len]), "truncation to {len} not detected");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(corrupt(&longer));
        // The previous format, and another key's entry under this name.
        assert!(corrupt(b"PPCUBIN1 an old entry of 32 bytes or more"));
        assert!(corrupt(&encode_entry(
            CubinKey(KEY.0 ^ 1),
            b"cubin bytes",
            (13, 0)
        )));
        std::fs::write(&path, &good).unwrap();
        assert!(matches!(cache.lookup(KEY), CacheLookup::Hit(_)));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_writers_never_expose_half_a_file() {
        let dir = scratch_dir("concurrent");
        let cache = DiskCache::at(&dir);
        let cubin: Vec<u8> = (0..256 * 1024u32).map(|i| (i % 253) as u8).collect();
        let corrupt_reads = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for writer in 0..3 {
                let (cache, cubin) = (&cache, &cubin);
                scope.spawn(move || {
                    for _ in 0..20 {
                        cache.try_store(KEY, cubin, (13, writer)).unwrap();
                    }
                });
            }
            for _ in 0..2 {
                let (cache, cubin, corrupt_reads) = (&cache, &cubin, &corrupt_reads);
                scope.spawn(move || {
                    for _ in 0..200 {
                        match cache.lookup(KEY) {
                            CacheLookup::Hit(entry) => assert_eq!(&entry.cubin, cubin),
                            CacheLookup::Missing => {}
                            CacheLookup::Corrupt(_) => {
                                corrupt_reads.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(corrupt_reads.load(Ordering::Relaxed), 0);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "temporary files left"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tiny(name: &str) -> ModuleSource {
        ModuleSource::new(name).entry(
            format!("{name}_k"),
            "unsigned* out",
            "out[threadIdx.x] = threadIdx.x;",
            Some(32),
        )
    }

    /// A stand-in for NVRTC that counts its calls.
    fn fake_compiler(
        calls: &AtomicUsize,
    ) -> impl Fn(&ModuleSource, &str) -> Result<Vec<u8>> + Sync + '_ {
        move |module, arch| {
            calls.fetch_add(1, Ordering::Relaxed);
            Ok(format!("cubin of {} for {arch}", module.name()).into_bytes())
        }
    }

    #[test]
    fn without_a_compiler_only_cached_modules_are_found() {
        let dir = scratch_dir("no-nvrtc");
        let cache = DiskCache::at(&dir);
        let module = tiny("present");
        cache
            .try_store(module.cubin_key("sm_90"), b"machine code", (13, 0))
            .unwrap();
        let found = find_cubin(&cache, &module, "sm_90", None).unwrap();
        assert_eq!(
            (found.cubin.as_slice(), found.from_disk),
            (&b"machine code"[..], true)
        );
        // Another architecture, another module: not cached, and the error
        // says which module and how to get it.
        for (module, arch) in [(tiny("present"), "sm_80"), (tiny("absent"), "sm_90")] {
            let error = find_cubin(&cache, &module, arch, None).unwrap_err();
            let Error::KernelNotCached {
                module: name,
                arch: a,
                reason,
                ..
            } = &error
            else {
                panic!("{error:?}");
            };
            assert_eq!(
                (name.as_str(), a.as_str(), reason.as_str()),
                (module.name(), arch, "no entry")
            );
            let message = error.to_string();
            for needle in [
                module.name(),
                &format!("parprims warm-cache --arch {arch} --out DIR"),
                "PARPRIMS_CACHE_DIR=DIR",
                &dir.display().to_string(),
            ] {
                assert!(message.contains(needle), "{needle:?} not in: {message}");
            }
        }
        // A corrupt entry without NVRTC: the same error, saying so.
        let path = cache.path(module.cubin_key("sm_90")).unwrap();
        std::fs::write(&path, b"PPCUBIN2 truncated").unwrap();
        let error = find_cubin(&cache, &module, "sm_90", None).unwrap_err();
        assert!(error.to_string().contains("does not verify"), "{error}");
        // A disabled cache says that it is disabled.
        let error = find_cubin(&DiskCache::disabled(), &module, "sm_90", None).unwrap_err();
        assert!(error.to_string().contains("disabled"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_compiler_fills_missing_and_rebuilds_corrupt_entries() {
        let dir = scratch_dir("rebuild");
        let cache = DiskCache::at(&dir);
        let calls = AtomicUsize::new(0);
        let compile = fake_compiler(&calls);
        let module = tiny("rebuilt");
        let first = find_cubin(&cache, &module, "sm_90", Some(&compile)).unwrap();
        assert!(!first.from_disk);
        assert_eq!(first.key, module.cubin_key("sm_90"));
        let second = find_cubin(&cache, &module, "sm_90", Some(&compile)).unwrap();
        assert!(second.from_disk);
        assert_eq!(second.cubin, first.cubin);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        // Truncate the entry: detected, compiled again, and rewritten.
        let path = cache.path(first.key).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let third = find_cubin(&cache, &module, "sm_90", Some(&compile)).unwrap();
        assert!(!third.from_disk);
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unwritable_cache_compiles_in_memory_and_warns_once() {
        // A cache "directory" under a file cannot be created.
        let file = scratch_dir("file");
        std::fs::write(&file, b"x").unwrap();
        let cache = DiskCache::at(file.join("sub"));
        assert!(!cache.store(CubinKey(1), b"data"));
        assert!(cache.try_store(CubinKey(1), b"data", (13, 0)).is_err());
        assert!(cache.load(CubinKey(1)).is_none());
        let calls = AtomicUsize::new(0);
        let compile = fake_compiler(&calls);
        for _ in 0..2 {
            let found = find_cubin(&cache, &tiny("unwritable"), "sm_90", Some(&compile)).unwrap();
            assert!(!found.from_disk);
        }
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        let _ = std::fs::remove_file(&file);
        assert!(!DiskCache::disabled().store(CubinKey(1), b"data"));
        // The warning is printed once per flag (one static flag per process).
        let flag = AtomicBool::new(false);
        assert!(warn_once(
            &flag,
            "parprims: test warning (expected in test output)"
        ));
        assert!(!warn_once(&flag, "parprims: test warning, must not print"));
        let message = unwritable_warning(&cache, &std::io::Error::other("denied"));
        assert!(message.contains("PARPRIMS_CACHE_DIR") && message.contains("denied"));
    }

    #[test]
    fn warming_refuses_bad_arguments_before_compiling() {
        let modules = [ModuleSource::new("warm_args").entry("k", "u32 n", "(void)n;", None)];
        let dir = scratch_dir("warm-args");
        let cache = DiskCache::at(&dir);
        for arch in ["", "sm_", "90", "sm_9x", "compute_90"] {
            assert!(
                matches!(
                    warm_disk_cache(&cache, &modules, &["sm_80", arch], 1),
                    Err(Error::InvalidArgument { .. })
                ),
                "{arch:?}"
            );
        }
        assert!(matches!(
            warm_disk_cache(&cache, &modules, &[], 1),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            warm_disk_cache(&cache, &modules, &["sm_90"], 0),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            warm_disk_cache(&DiskCache::disabled(), &modules, &["sm_90"], 1),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(!dir.exists(), "nothing written for refused arguments");
    }

    #[test]
    fn a_warmed_cache_serves_every_module_without_nvrtc() {
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        let bad = ModuleSource::new("warm_bad").entry("warm_bad_k", "u32 n", "not C++;", None);
        let modules = [tiny("warm_a"), bad, tiny("warm_b")];
        let dir = scratch_dir("warm");
        let cache = DiskCache::at(&dir);
        let archs = ["sm_80", "sm_90"];
        let first = warm_disk_cache(&cache, &modules, &archs, 2).unwrap();
        assert_eq!(
            (first.compiled, first.already_cached, first.not_stored),
            (4, 0, 0)
        );
        assert_eq!(first.failures.len(), 2, "{:?}", first.failures);
        assert!(
            first.failures.iter().all(|f| f.contains(" warm_bad: ")),
            "{:?}",
            first.failures
        );
        // The lookup without NVRTC (no compiler) finds every module that
        // compiled, for every architecture, with the version recorded.
        let version = nvrtc_version().unwrap();
        for arch in archs {
            for module in [&modules[0], &modules[2]] {
                let found = find_cubin(&cache, module, arch, None).expect("cached");
                assert!(found.from_disk);
                assert!(cubin_defines(&found.cubin, module.entries()[0].as_str()));
                let CacheLookup::Hit(entry) = cache.lookup(found.key) else {
                    panic!("entry verifies");
                };
                assert_eq!(entry.nvrtc_version, version);
            }
            assert!(matches!(
                find_cubin(&cache, &modules[1], arch, None),
                Err(Error::KernelNotCached { .. })
            ));
        }
        let second = warm_disk_cache(&cache, &modules, &archs, 2).unwrap();
        assert_eq!((second.compiled, second.already_cached), (0, 4));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
