//! Lets programs load MLIR as a shared library. With `MLIR_SYS_LINK_SHARED=1` (this
//! workspace's default, set in `.cargo/config.toml`) `mlir-sys` links LLVM's `libMLIR.so`
//! and asks for a library `MLIR-C` besides, for MLIR's C API, which LLVM builds as
//! static archives only (`libMLIRCAPI*.a`). This script gathers those archives into one,
//! `libMLIR-C.a`, so a program links the C API itself (about 2 MB) and loads the rest of
//! MLIR and LLVM at run time, instead of carrying 180 MB of them. Without the variable
//! `mlir-sys` links everything statically and this script does nothing.

use std::{env, path::PathBuf, process::Command};

fn main() {
    println!("cargo:rerun-if-env-changed=MLIR_SYS_LINK_SHARED");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    let shared = env::var("MLIR_SYS_LINK_SHARED").as_deref() == Ok("1");
    warn_on_a_changed_mode(shared);
    if !shared {
        return;
    }
    if let Err(message) = gather_c_api() {
        eprintln!("offload-dialect: {message}");
        std::process::exit(1);
    }
}

/// `mlir-sys` does not rebuild when `MLIR_SYS_LINK_SHARED` changes, so a target directory
/// built in one mode keeps linking MLIR that way: say so when this script sees the mode
/// change (it reruns then, and remembers the mode it last saw in its `OUT_DIR`).
fn warn_on_a_changed_mode(shared: bool) {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let seen = out_dir.join("link-mode");
    let mode = if shared { "shared" } else { "static" };
    if let Ok(before) = std::fs::read_to_string(&seen)
        && before != mode
    {
        println!(
            "cargo:warning=MLIR_SYS_LINK_SHARED changed ({before} -> {mode}) in a target directory built before: mlir-sys does not rebuild for it and keeps the link it was first built with; run `cargo clean -p mlir-sys`, or use a target directory of its own for each mode"
        );
    }
    let _ = std::fs::write(&seen, mode);
}

fn gather_c_api() -> Result<(), String> {
    let prefix = match env::var("MLIR_SYS_220_PREFIX") {
        Ok(prefix) => PathBuf::from(prefix),
        Err(_) => {
            let out = Command::new("llvm-config")
                .arg("--prefix")
                .output()
                .map_err(|e| format!("no MLIR_SYS_220_PREFIX and no llvm-config: {e}"))?;
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    let lib = prefix.join("lib");
    let mut archives: Vec<PathBuf> = std::fs::read_dir(&lib)
        .map_err(|e| format!("cannot list {}: {e}", lib.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libMLIRCAPI") && n.ends_with(".a"))
        })
        .collect();
    if archives.is_empty() {
        return Err(format!(
            "no libMLIRCAPI*.a in {}: install libmlir-22-dev (tools/ensure-deps)",
            lib.display()
        ));
    }
    archives.sort();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let merged = out_dir.join("libMLIR-C.a");
    // `q` appends, so start from nothing; `L` takes the members of each archive given.
    let _ = std::fs::remove_file(&merged);
    let ar = prefix.join("bin").join("llvm-ar");
    let status = Command::new(&ar)
        .arg("qcLs")
        .arg(&merged)
        .args(&archives)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", ar.display()))?;
    if !status.success() {
        return Err(format!("{} failed ({status})", ar.display()));
    }
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    Ok(())
}
