//! The integration tests: one binary, since every binary that links MLIR is ~230 MB.
//!
//! - `mir`: the MIR text format round-trips; parse and validation errors;
//! - `stages`: snapshots of every lowering stage for the kernels in `tests/kernels/`;
//! - `cpu_backend`: kernels run on the CPU backend against host references, panics,
//!   launch checks.
//!
//! Snapshots live in `integration/snapshots/`; after an intended change, review them with
//! `cargo insta review` (or rerun with `INSTA_UPDATE=always` and read the diff).

mod aot;
mod conformance;
mod cpu_backend;
mod disk_cache;
mod filetests;
mod fuzz;
mod mir;
mod safety;
mod stages;

use offload_mir::{Body, Linked};

/// The kernels of a file under `tests/kernels/`, every instance of generic ones, with the
/// file's `#[offload_device]` functions inlined.
pub fn kernels(file: &str) -> Vec<Linked> {
    use offload_frontend::{instances, translate_device, translate_instance};
    let path = format!("{}/kernels/{file}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let parsed = syn::parse_file(&source).expect("test kernels parse");
    let shown = format!("tests/kernels/{file}");
    let (mut kernels, mut device) = (Vec::new(), Vec::new());
    for item in &parsed.items {
        let syn::Item::Fn(f) = item else { continue };
        for subst in instances(&f.sig).expect("test kernels have valid generics") {
            if f.attrs.iter().any(|a| a.path().is_ident("offload_kernel")) {
                kernels
                    .push(translate_instance(f, &shown, &subst).expect("test kernels translate"));
            } else if f.attrs.iter().any(|a| a.path().is_ident("offload_device")) {
                device.push(
                    translate_device(f, &shown, &subst).expect("test device functions translate"),
                );
            }
        }
    }
    let device: Vec<&Body> = device.iter().collect();
    kernels
        .iter()
        .map(|k| offload_mir::link(k, &device).unwrap_or_else(|e| panic!("test kernels link: {e}")))
        .collect()
}

/// Every unsupported construct and malformed launch is a compile error at its span. The
/// expected diagnostics sit beside each case in `tests/ui/`; after an intended change,
/// rerun with `TRYBUILD=overwrite` and review the diff.
#[test]
fn compile_fail() {
    trybuild::TestCases::new().compile_fail("ui/*.rs");
}
