//! The integration tests: one binary, since every binary that links MLIR is ~230 MB.
//!
//! - `mir`: the MIR text format round-trips; parse and validation errors;
//! - `stages`: snapshots of every lowering stage for the kernels in `tests/kernels/`;
//! - `cpu_backend`: kernels run on the CPU backend against host references, panics,
//!   launch checks.
//!
//! Snapshots live in `integration/snapshots/`; after an intended change, review them with
//! `cargo insta review` (or rerun with `INSTA_UPDATE=always` and read the diff).

mod conformance;
mod cpu_backend;
mod mir;
mod stages;

use offload_mir::Body;

/// Translates the `#[offload_kernel]` functions of a file under `tests/kernels/`.
pub fn kernels(file: &str) -> Vec<Body> {
    let path = format!("{}/kernels/{file}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let parsed = syn::parse_file(&source).expect("test kernels parse");
    parsed
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) if f.attrs.iter().any(|a| a.path().is_ident("offload_kernel")) => {
                Some(f)
            }
            _ => None,
        })
        .map(|f| {
            offload_mir::translate::translate_kernel(f, &format!("tests/kernels/{file}"))
                .expect("test kernels translate")
        })
        .collect()
}

/// Every unsupported construct and malformed launch is a compile error at its span. The
/// expected diagnostics sit beside each case in `tests/ui/`; after an intended change,
/// rerun with `TRYBUILD=overwrite` and review the diff.
#[test]
fn compile_fail() {
    trybuild::TestCases::new().compile_fail("ui/*.rs");
}
