//! What MLIR's ROCDL serializer needs to turn a kernel into a code object (HSACO): the
//! ROCm device libraries' bitcode (`ocml`, `ockl` and the `oclc_*` control libraries,
//! linked into every kernel) and an `ld.lld` that links the object into a shared code
//! object. MLIR looks for both inside one folder laid out as ROCm installs itself
//! (`DIR/amdgcn/bitcode/*.bc`, `DIR/llvm/bin/ld.lld`); Debian puts the bitcode elsewhere
//! (`rocm-device-libs`: `/usr/lib/x86_64-linux-gnu/amdgcn/bitcode`) and LLVM's linker in
//! its own prefix, so without a ROCm install a folder of links in that layout is made.

use std::path::{Path, PathBuf};

/// Where the device libraries' bitcode may be, in order: `OFFLOAD_ROCM_DEVICE_LIBS`
/// (a folder of `.bc` files), a ROCm install, Debian's package.
pub fn bitcode_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = std::env::var_os("OFFLOAD_ROCM_DEVICE_LIBS") {
        out.push(PathBuf::from(dir));
    }
    for var in ["ROCM_PATH", "HIP_PATH"] {
        if let Some(dir) = std::env::var_os(var) {
            out.push(Path::new(&dir).join("amdgcn/bitcode"));
        }
    }
    out.push("/opt/rocm/amdgcn/bitcode".into());
    out.push("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode".into());
    out.push("/usr/lib/aarch64-linux-gnu/amdgcn/bitcode".into());
    out
}

/// LLVM's linker for AMDGPU code objects: the one beside the LLVM this crate was built
/// against, else a versioned one on `PATH`.
fn linker() -> Option<PathBuf> {
    let prefix = option_env!("MLIR_SYS_220_PREFIX").unwrap_or("/usr/lib/llvm-22");
    let beside = Path::new(prefix).join("bin/ld.lld");
    if beside.is_file() {
        return Some(beside);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| [dir.join("ld.lld-22"), dir.join("ld.lld")])
        .find(|p| p.is_file())
}

/// Why there is no folder of ROCm's tools to build AMD GPU code with.
#[derive(Debug, thiserror::Error)]
pub enum ToolkitError {
    /// No device libraries in any of the folders searched.
    #[error(
        "AMD GPU code needs the ROCm device libraries (`ocml.bc`, `ockl.bc`, ...); none were found in {} (on Debian: `apt install rocm-device-libs`; or set OFFLOAD_ROCM_DEVICE_LIBS to their folder)",
        shown(searched)
    )]
    NoDeviceLibraries { searched: Vec<PathBuf> },
    #[error(
        "AMD GPU code objects are linked with LLVM's `ld.lld`, which was not found beside LLVM 22 or on PATH"
    )]
    NoLinker,
    /// The folder of links in ROCm's layout could not be made.
    #[error("cannot lay out ROCm's folders in {}: {source}", root.display())]
    Layout {
        root: PathBuf,
        source: std::io::Error,
    },
}

fn shown(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(", ")
}

/// A folder in ROCm's layout holding the device libraries and the linker, made (as
/// links, under the temporary folder) when none exists; or why there is none.
pub fn toolkit() -> Result<PathBuf, ToolkitError> {
    let candidates = bitcode_candidates();
    let searched = if std::env::var_os("OFFLOAD_ROCM_DEVICE_LIBS").is_some() {
        &candidates[..1]
    } else {
        &candidates[..]
    };
    let Some(bitcode) = searched.iter().find(|d| d.join("ocml.bc").is_file()) else {
        return Err(ToolkitError::NoDeviceLibraries {
            searched: searched.to_vec(),
        });
    };
    let lld = linker().ok_or(ToolkitError::NoLinker)?;
    // A ROCm install already in the layout MLIR expects.
    if let Some(root) = bitcode.parent().and_then(Path::parent)
        && root.join("llvm/bin/ld.lld").is_file()
    {
        return Ok(root.to_path_buf());
    }
    let root = std::env::temp_dir().join(format!("offload-rocm-{}", user_id()));
    let link = |target: &Path, at: &Path| -> Result<(), ToolkitError> {
        if std::fs::read_link(at).is_ok_and(|t| t == target) {
            return Ok(());
        }
        let _ = std::fs::remove_file(at);
        std::fs::create_dir_all(at.parent().expect("a link inside the folder"))
            .and_then(|()| std::os::unix::fs::symlink(target, at))
            .map_err(|source| ToolkitError::Layout {
                root: root.clone(),
                source,
            })
    };
    link(bitcode, &root.join("amdgcn/bitcode"))?;
    link(&lld, &root.join("llvm/bin/ld.lld"))?;
    Ok(root)
}

/// This process's user (the owner of `/proc/self`), to keep users' folders apart.
fn user_id() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}
