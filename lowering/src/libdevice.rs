//! CUDA's `libdevice.10.bc`: the math library NVVM lowers transcendental functions to
//! (`exp` becomes a call of `__nv_expf`). It is found where `OFFLOAD_LIBDEVICE` names it,
//! or in a CUDA toolkit (`CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`); PTX that still
//! calls a `__nv_*` function after linking is an error naming where it was looked for,
//! not PTX the driver refuses later.

use std::path::{Path, PathBuf};

/// Where a toolkit keeps libdevice.
const IN_TOOLKIT: &str = "nvvm/libdevice/libdevice.10.bc";

/// The places looked in, in order: `OFFLOAD_LIBDEVICE`'s file, then each toolkit's copy.
pub fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(file) = std::env::var_os("OFFLOAD_LIBDEVICE") {
        out.push(PathBuf::from(file));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(dir) = std::env::var_os(var) {
            out.push(Path::new(&dir).join(IN_TOOLKIT));
        }
    }
    out.push(Path::new("/usr/local/cuda").join(IN_TOOLKIT));
    out
}

/// The first candidate that exists. A set `OFFLOAD_LIBDEVICE` is the only place looked
/// in: naming a file that is not there finds none.
pub fn find() -> Option<String> {
    let candidates = candidates();
    let searched = if std::env::var_os("OFFLOAD_LIBDEVICE").is_some() {
        &candidates[..1]
    } else {
        &candidates[..]
    };
    searched
        .iter()
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// The `__nv_*` functions `ptx` declares but does not define: what libdevice was needed
/// for and not linked.
pub fn unresolved(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter(|l| l.trim_start().starts_with(".extern .func"))
        .filter_map(|l| {
            let start = l.find("__nv_")?;
            let name: String = l[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            Some(name)
        })
        .collect()
}

/// A kernel calls functions of CUDA's libdevice, and no `libdevice.10.bc` was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibdeviceMissing {
    /// The libdevice functions the kernel calls (`__nv_expf`, ...).
    pub functions: Vec<String>,
    /// Where the file was looked for, in order.
    pub looked: Vec<std::path::PathBuf>,
}

impl LibdeviceMissing {
    /// The functions `functions` need, looked for where this process looks now.
    pub fn now(functions: Vec<String>) -> LibdeviceMissing {
        let mut looked = candidates();
        if std::env::var_os("OFFLOAD_LIBDEVICE").is_some() {
            looked.truncate(1);
        }
        LibdeviceMissing { functions, looked }
    }
}

impl std::fmt::Display for LibdeviceMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let functions: Vec<String> = self.functions.iter().map(|n| format!("`{n}`")).collect();
        let looked: Vec<String> = self
            .looked
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        write!(
            f,
            "the kernel calls {}, which needs CUDA's libdevice.10.bc; it is not in {} (set OFFLOAD_LIBDEVICE to the file, or CUDA_HOME to a CUDA toolkit)",
            functions.join(", "),
            looked.join(", ")
        )
    }
}

impl std::error::Error for LibdeviceMissing {}
