//! NVRTC: compiling a [`ModuleSource`] to a cubin for one architecture
//! (`sm_XY`: real machine code, no JIT at load time). NVRTC is loaded at run
//! time; without it every call returns [`Error::NoNvrtc`].

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};

use super::ModuleSource;
use crate::error::{Error, Result};

/// Checks that NVRTC can be loaded, once per process. Never panics.
///
/// `PARPRIMS_DISABLE_NVRTC=1` (any value but empty or `0`) makes it answer
/// [`Error::NoNvrtc`] even where NVRTC is installed: every kernel must then
/// come from the disk cache, which is how an application checks that the
/// cache it ships is complete.
///
/// ```
/// match gpu_core::kernel::nvrtc_available() {
///     Ok(()) => println!("kernels can be compiled here"),
///     Err(e) => println!("{e}: kernels must come from the disk cache or the program"),
/// }
/// ```
pub fn nvrtc_available() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    let present = *PRESENT.get_or_init(|| {
        let disabled =
            std::env::var_os("PARPRIMS_DISABLE_NVRTC").is_some_and(|v| !v.is_empty() && v != "0");
        // SAFETY: is_culib_present only tries to dlopen candidate names.
        !disabled && unsafe { nvrtc_sys::is_culib_present() }
    });
    if present {
        Ok(())
    } else {
        Err(Error::NoNvrtc)
    }
}

/// NVRTC's (major, minor) version.
///
/// ```
/// if let Ok((major, minor)) = gpu_core::kernel::nvrtc_version() {
///     println!("NVRTC {major}.{minor}");
/// }
/// ```
pub fn nvrtc_version() -> Result<(i32, i32)> {
    nvrtc_available()?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: the library is present (checked above); both pointers are valid.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }.result()?;
    Ok((major, minor))
}

/// Compiles `module` for `arch` (`sm_80`, `sm_90`) and returns the cubin.
///
/// A compile error names the module and carries the options and NVRTC's log.
///
/// ```
/// use gpu_core::kernel::{compile_cubin, cubin_defines, nvrtc_available};
/// use gpu_core::{fill_entry, fill_module};
/// if nvrtc_available().is_ok() {
///     let cubin = compile_cubin(&fill_module::<f64>(), "sm_90")?; // no GPU needed
///     assert!(cubin_defines(&cubin, &fill_entry::<f64>()));
/// }
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn compile_cubin(module: &ModuleSource, arch: &str) -> Result<Vec<u8>> {
    let program = compile_program(module, arch)?;
    let mut size: usize = 0;
    // SAFETY: `program` is a compiled, live program; `size` is a valid out-pointer.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(program.0, &mut size) }.result()?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has the size NVRTC reported.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr() as *mut c_char) }.result()?;
    Ok(cubin)
}

/// Compiles `module` for the virtual architecture `arch` (`compute_80`) and
/// returns its PTX, which the driver can compile for that architecture and
/// every newer one. Errors as [`compile_cubin`].
///
/// ```
/// use gpu_core::kernel::{compile_ptx, nvrtc_available};
/// use gpu_core::{fill_entry, fill_module};
/// if nvrtc_available().is_ok() {
///     let ptx = compile_ptx(&fill_module::<f64>(), "compute_80")?; // runs on sm_80 and newer
///     assert!(ptx.contains(&fill_entry::<f64>()));
///     assert!(compile_ptx(&fill_module::<f64>(), "sm_80").is_err()); // a real arch: use compile_cubin
/// }
/// # Ok::<(), gpu_core::Error>(())
/// ```
pub fn compile_ptx(module: &ModuleSource, arch: &str) -> Result<String> {
    if !arch.starts_with("compute_") {
        return Err(Error::invalid(
            "arch",
            format!("{arch}: PTX is compiled for a compute_XY architecture"),
        ));
    }
    let program = compile_program(module, arch)?;
    // SAFETY: `program` is a compiled, live program.
    let ptx = unsafe { nvrtc_result::get_ptx(program.0) }?;
    Ok(c_chars_to_string(&ptx))
}

/// An NVRTC program, destroyed when dropped.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by compile_program and destroyed once, here.
        let _ = unsafe { nvrtc_result::destroy_program(self.0) };
    }
}

/// `module` compiled with NVRTC for `arch`, its output not yet read.
fn compile_program(module: &ModuleSource, arch: &str) -> Result<Program> {
    nvrtc_available()?;
    if module.code().contains('\0') {
        return Err(Error::invalid(
            "source",
            "kernel source contains a NUL byte",
        ));
    }
    let source = CString::new(module.code().as_bytes()).expect("NUL bytes were rejected above");
    let file_name = CString::new(format!("{}.cu", module.name().replace('\0', "")))
        .expect("NUL bytes were removed");
    let options = module.full_options(arch);
    let program = Program(nvrtc_result::create_program(&source, Some(&file_name))?);
    // SAFETY: `program` is live until it drops.
    let compiled = unsafe { nvrtc_result::compile_program(program.0, &options) };
    if compiled.is_err() {
        // SAFETY: as above.
        let log = unsafe { nvrtc_result::get_program_log(program.0) }
            .map(|raw| c_chars_to_string(&raw))
            .unwrap_or_else(|e| format!("(no log: {e})"));
        return Err(Error::Compile {
            module: module.name().to_owned(),
            arch: arch.to_owned(),
            options,
            log,
        });
    }
    Ok(program)
}

fn c_chars_to_string(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Whether a cubin defines `entry` (its name is in the ELF string table).
///
/// ```
/// use gpu_core::kernel::cubin_defines;
/// // An ELF string table holds whole, NUL-terminated names.
/// let strings = b"\0.text.fill_f32\0fill_f32\0fill_f64\0";
/// assert!(cubin_defines(strings, "fill_f32"));
/// assert!(!cubin_defines(strings, "fill"));
/// ```
pub fn cubin_defines(cubin: &[u8], entry: &str) -> bool {
    let needle: Vec<u8> = entry.bytes().chain(std::iter::once(0)).collect();
    cubin.windows(needle.len()).enumerate().any(|(i, w)| {
        w == needle.as_slice() && (i == 0 || cubin[i - 1] == 0 || cubin[i - 1] == b'.')
    })
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubin_entry_search_matches_whole_names() {
        let fake = b"\0.text.scan_i32\0scan_i32\0scan_i32_sum\0";
        assert!(cubin_defines(fake, "scan_i32"));
        assert!(cubin_defines(fake, "scan_i32_sum"));
        assert!(!cubin_defines(fake, "i32"));
        assert!(!cubin_defines(fake, "scan_i64"));
    }
}
