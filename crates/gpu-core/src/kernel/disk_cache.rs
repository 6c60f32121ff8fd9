//! The on-disk cubin cache, and warming it ahead of time for every kernel
//! the workspace can request. The cache never fails an operation: an
//! unreadable, corrupt or unwritable cache falls back to compiling.

use std::path::{Path, PathBuf};

use super::{compile_cubin, nvrtc_version, stable_hash64, ModuleSource};
use crate::error::{Error, Result};

/// The on-disk cubin cache.
///
/// Directory: `PARPRIMS_CACHE_DIR` if set (empty disables the cache), else
/// `$XDG_CACHE_HOME/parprims`, else `$HOME/.cache/parprims` (on Windows
/// `%LOCALAPPDATA%\parprims`). Files are named by the key and carry a header
/// with the key, the length and a checksum; anything that does not verify is
/// ignored and overwritten.
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: Option<PathBuf>,
}

const CACHE_MAGIC: &[u8; 8] = b"PPCUBIN1";

impl DiskCache {
    /// The cache the environment selects.
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
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        DiskCache {
            dir: Some(dir.into()),
        }
    }

    /// No disk cache: always compile.
    pub fn disabled() -> Self {
        DiskCache { dir: None }
    }

    /// The directory, if the cache is enabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn path(&self, key: u64) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{key:016x}.cubin")))
    }

    /// The cubin stored under `key`, if present and intact.
    pub fn load(&self, key: u64) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.path(key)?).ok()?;
        if bytes.len() < 32 || &bytes[..8] != CACHE_MAGIC {
            return None;
        }
        let field = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        let (stored_key, len, checksum) = (field(8), field(16) as usize, field(24));
        let body = &bytes[32..];
        if stored_key != key || body.len() != len {
            return None;
        }
        (stable_hash64(&[body]) == checksum).then(|| body.to_vec())
    }

    /// Stores `cubin` under `key`; returns whether it was written. Writes to a
    /// temporary file and renames, so a reader never sees half a file.
    pub fn store(&self, key: u64, cubin: &[u8]) -> bool {
        let Some(path) = self.path(key) else {
            return false;
        };
        let write = || -> std::io::Result<()> {
            let dir = path
                .parent()
                .expect("cache files live in the cache directory");
            std::fs::create_dir_all(dir)?;
            let mut bytes = Vec::with_capacity(cubin.len() + 32);
            bytes.extend_from_slice(CACHE_MAGIC);
            bytes.extend_from_slice(&key.to_le_bytes());
            bytes.extend_from_slice(&(cubin.len() as u64).to_le_bytes());
            bytes.extend_from_slice(&stable_hash64(&[cubin]).to_le_bytes());
            bytes.extend_from_slice(cubin);
            let tmp = dir.join(format!(
                ".{key:016x}.{}.{:?}.tmp",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::write(&tmp, &bytes)?;
            std::fs::rename(&tmp, &path).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
        };
        write().is_ok()
    }
}

/// What [`warm_disk_cache`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheWarmReport {
    /// Modules compiled by NVRTC and written to the cache.
    pub compiled: usize,
    /// Modules the cache already held (read back and verified, not rebuilt).
    pub already_cached: usize,
    /// Modules that compiled but could not be written (unwritable directory).
    pub not_stored: usize,
    /// Modules that did not compile, each with NVRTC's error.
    pub failures: Vec<String>,
}

/// Compiles every module of `modules` for `arch` (`sm_90`) into `cache`, on
/// `threads` threads, skipping those already there, so that later processes
/// load every kernel from disk instead of waiting for NVRTC at its first
/// use (a fresh machine, a container image, a CI cache). Needs NVRTC, not a
/// GPU. The keys are the ones [`crate::Gpu::module`] computes, so a process
/// on a device of architecture `arch` with the same NVRTC finds them.
///
/// Errors: [`Error::NoNvrtc`] without NVRTC; [`Error::InvalidArgument`] for a
/// disabled cache (`PARPRIMS_CACHE_DIR` empty), zero threads or an `arch`
/// that is not `sm_` and digits. A module that does not compile is listed in
/// the report's `failures` and the others are still compiled.
pub fn warm_disk_cache(
    cache: &DiskCache,
    modules: &[ModuleSource],
    arch: &str,
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
    let digits = arch.strip_prefix("sm_").unwrap_or("");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid(
            "arch",
            format!("{arch:?}: expected sm_ and digits, like sm_90"),
        ));
    }
    let version = nvrtc_version()?;
    let report = std::sync::Mutex::new(CacheWarmReport::default());
    for_each_in_parallel(modules, threads, |module| {
        let key = module.cache_key(arch, version);
        let outcome = if cache.load(key).is_some() {
            Ok(None)
        } else {
            compile_cubin(module, arch).map(|cubin| Some(cache.store(key, &cubin)))
        };
        let mut report = report.lock().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Ok(None) => report.already_cached += 1,
            Ok(Some(true)) => report.compiled += 1,
            Ok(Some(false)) => report.not_stored += 1,
            Err(e) => report.failures.push(format!("{}: {e}", module.name())),
        }
    });
    Ok(report.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// Calls `work` once for every item, on up to `threads` worker threads
/// (at least one), each taking the next item not yet taken; returns when
/// all are done. For many independent NVRTC compilations (each one
/// single-threaded and tens of milliseconds to seconds long), where the
/// items' costs are too uneven for a fixed split.
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

    #[test]
    fn for_each_in_parallel_visits_every_item_once() {
        let items: Vec<usize> = (0..1000).collect();
        for threads in [0, 1, 3, 64, 5000] {
            let seen: Vec<std::sync::atomic::AtomicUsize> =
                (0..items.len()).map(|_| Default::default()).collect();
            for_each_in_parallel(&items, threads, |&i| {
                seen[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
            assert!(
                seen.iter()
                    .all(|c| c.load(std::sync::atomic::Ordering::Relaxed) == 1),
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

    #[test]
    fn cache_round_trip_and_corruption() {
        let dir = scratch_dir("cache");
        let cache = DiskCache::at(&dir);
        assert!(cache.load(7).is_none());
        assert!(cache.store(7, b"cubin bytes"));
        assert_eq!(cache.load(7).as_deref(), Some(&b"cubin bytes"[..]));
        // Flip a byte of the body: the checksum catches it.
        let path = dir.join(format!("{:016x}.cubin", 7u64));
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(cache.load(7).is_none());
        // Truncated and garbage files are ignored too.
        std::fs::write(&path, b"PPCUBIN1").unwrap();
        assert!(cache.load(7).is_none());
        std::fs::write(&path, b"nonsense").unwrap();
        assert!(cache.load(7).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn warming_refuses_bad_arguments_before_compiling() {
        let modules = [ModuleSource::new("warm_args").entry("k", "u32 n", "(void)n;", None)];
        let dir = scratch_dir("warm-args");
        let cache = DiskCache::at(&dir);
        for arch in ["", "sm_", "90", "sm_9x", "compute_90"] {
            assert!(
                matches!(
                    warm_disk_cache(&cache, &modules, arch, 1),
                    Err(Error::InvalidArgument { .. })
                ),
                "{arch:?}"
            );
        }
        assert!(matches!(
            warm_disk_cache(&cache, &modules, "sm_90", 0),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            warm_disk_cache(&DiskCache::disabled(), &modules, "sm_90", 1),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(!dir.exists(), "nothing written for refused arguments");
    }

    #[test]
    fn warming_fills_the_cache_once_and_lists_what_does_not_compile() {
        if !parprims_testkit::testing::nvrtc_or_skip() {
            return;
        }
        let good = |name: &str| {
            ModuleSource::new(name).entry(
                format!("{name}_k"),
                "unsigned* out",
                "out[threadIdx.x] = threadIdx.x;",
                Some(32),
            )
        };
        let bad = ModuleSource::new("warm_bad").entry("warm_bad_k", "u32 n", "not C++;", None);
        let modules = [good("warm_a"), bad, good("warm_b")];
        let dir = scratch_dir("warm");
        let cache = DiskCache::at(&dir);
        let first = warm_disk_cache(&cache, &modules, "sm_80", 2).unwrap();
        assert_eq!(
            (first.compiled, first.already_cached, first.not_stored),
            (2, 0, 0)
        );
        assert_eq!(first.failures.len(), 1);
        assert!(
            first.failures[0].starts_with("warm_bad: "),
            "{:?}",
            first.failures
        );
        let version = nvrtc_version().unwrap();
        for module in [&modules[0], &modules[2]] {
            let cubin = cache
                .load(module.cache_key("sm_80", version))
                .expect("cached");
            assert!(cubin_defines(&cubin, module.entries()[0].as_str()));
        }
        let second = warm_disk_cache(&cache, &modules, "sm_80", 2).unwrap();
        assert_eq!((second.compiled, second.already_cached), (0, 2));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unwritable_cache_reports_failure_without_panicking() {
        // A cache "directory" that is a file cannot be created.
        let file = scratch_dir("file");
        std::fs::write(&file, b"x").unwrap();
        let cache = DiskCache::at(file.join("sub"));
        assert!(!cache.store(1, b"data"));
        assert!(cache.load(1).is_none());
        let _ = std::fs::remove_file(&file);
        assert!(!DiskCache::disabled().store(1, b"data"));
    }
}
