//! The integration tests: one binary, since every binary that links MLIR is ~230 MB.
//!
//! - `mir`: the MIR text format round-trips; parse and validation errors;
//! - `stages`: snapshots of every lowering stage for the kernels in `tests/kernels/`;
//! - `cpu_backend`: kernels run on the CPU backend against host references, panics,
//!   launch checks.
//!
//! Snapshots live in `integration/snapshots/`; after an intended change, review them with
//! `cargo insta review` (or rerun with `INSTA_UPDATE=always` and read the diff).

mod allocations;
mod aot;
mod conformance;
mod cpu_backend;
mod disk_cache;
mod filetests;
mod fuzz;
mod mir;
mod mpi;
mod nccl;
mod safety;
mod stages;

use offload_mir::{Body, Linked};

/// The kernels of a file under `tests/kernels/`, every instance of generic ones, each
/// linked with the file's `#[offload_device]` functions it calls.
pub fn kernels(file: &str) -> Vec<Linked> {
    use offload_translate::gather::{Source, gather};
    let path = format!("{}/kernels/{file}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let parsed = syn::parse_file(&source).expect("test kernels parse");
    let shown = format!("tests/kernels/{file}");
    let sources = [Source {
        name: &shown,
        syntax: &parsed,
    }];
    let gathered = gather(&sources).unwrap_or_else(|e| panic!("test kernels translate: {e}"));
    assert!(
        gathered.skipped.is_empty(),
        "test kernels resolve their calls"
    );
    gathered
        .kernels
        .iter()
        .map(|k| {
            let devices: Vec<&Body> = k.devices.iter().collect();
            offload_mir::link(&k.body, &devices)
                .unwrap_or_else(|e| panic!("test kernels link: {e}"))
        })
        .collect()
}

/// Every unsupported construct and malformed launch is a compile error at its span. The
/// expected diagnostics sit beside each case in `tests/ui/`; after an intended change,
/// rerun with `TRYBUILD=overwrite` and review the diff.
#[test]
fn compile_fail() {
    trybuild::TestCases::new().compile_fail("ui/*.rs");
    // No Rust input, mistyped or unsupported, meets an internal error: each case's
    // expected diagnostics say what to write instead.
    let ui = format!("{}/ui", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(&ui).expect("the ui folder") {
        let path = entry.expect("a ui file").path();
        if path.extension().is_some_and(|e| e == "stderr") {
            let text = std::fs::read_to_string(&path).expect("a readable .stderr");
            assert!(!text.contains("internal error"), "{}", path.display());
        }
    }
}
