//! Ahead-of-time builds (`offload-build`): kernels found in a crate's sources, compiled
//! for every target, and errors at the kernel's line. That a program without the JIT
//! registers and runs the code is `examples/aot`, run by `tools/check-aot`.

use offload_build::Builder;
use std::path::PathBuf;

/// A crate's `src/` holding `lib.rs`, and an empty output directory, in a folder removed
/// when the first value is dropped.
fn crate_with(lib: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::Builder::new()
        .prefix("offload-aot-")
        .tempdir()
        .unwrap();
    let src = root.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    let out = root.path().join("out");
    (root, src, out)
}

const KERNELS: &str = "use offload::prelude::*;

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

mod inner {
    #[offload_device]
    fn twice<T: Float>(x: T) -> T {
        x + x
    }

    #[offload_kernel]
    fn scale<T: Float>(mut y: Region<T, Linear1D>) {
        if let Some(v) = y.get_mut() {
            *v = twice(*v);
        }
    }
}
";

#[test]
fn every_kernel_instance_gets_code_for_every_target() {
    let (_root, src, out) = crate_with(KERNELS);
    let report = Builder::new()
        .targets(["sm_80", "cpu"])
        .sources(&src)
        .out_dir(&out)
        .compile()
        .unwrap();
    assert_eq!(
        report.kernels,
        [
            "saxpy",
            "scale::<f32>",
            "scale::<f64>",
            "scale::<f16>",
            "scale::<bf16>"
        ]
    );

    // One static library: a CPU object per kernel instance, and the registry, which
    // names each entry point and holds each PTX.
    assert_eq!(
        report.library,
        out.join("liboffload_kernels_offload_tests.a")
    );
    let library = std::fs::read(&report.library).unwrap();
    assert!(library.starts_with(b"!<arch>\n"));
    let count = |needle: &str| {
        library
            .windows(needle.len())
            .filter(|w| *w == needle.as_bytes())
            .count()
    };
    assert_eq!(count("offload_registry.o"), 1);
    assert_eq!(count(".target sm_80"), 5, "one PTX per instance");
    // Each entry point's name is in the archive's symbol table, its object's name and
    // symbol table, and the registry's.
    let symbols: Vec<String> = library
        .split(|b| !b.is_ascii_alphanumeric() && *b != b'_')
        .filter(|w| w.starts_with(b"offload_cpu_") && w.len() == "offload_cpu_".len() + 64)
        .map(|w| String::from_utf8(w.to_vec()).unwrap())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(symbols.len(), 5, "{symbols:?}");
    for symbol in &symbols {
        assert!(count(symbol) >= 3, "{symbol}");
    }
}

/// AMD chips get a code object per kernel instance, held by the registry.
#[test]
fn amd_targets_get_a_code_object_per_kernel() {
    let (_root, src, out) = crate_with(KERNELS);
    let report = Builder::new()
        .targets(["gfx942", "gfx1100"])
        .sources(&src)
        .out_dir(&out)
        .compile()
        .unwrap();
    assert_eq!(
        report.kernels,
        [
            "saxpy",
            "scale::<f32>",
            "scale::<f64>",
            "scale::<f16>",
            "scale::<bf16>"
        ]
    );
    let library = std::fs::read(&report.library).unwrap();
    let count = |needle: &[u8]| {
        library
            .windows(needle.len())
            .filter(|w| *w == needle)
            .count()
    };
    // Each code object is an AMDGPU ELF naming its chip.
    assert_eq!(
        count(b"amdgcn-amd-amdhsa--gfx942"),
        5,
        "one code object per instance"
    );
    assert_eq!(
        count(b"amdgcn-amd-amdhsa--gfx1100"),
        5,
        "one code object per instance"
    );
    // saxpy's kernel descriptor, named in each code object's symbol tables and metadata.
    assert!(count(b"saxpy.kd") >= 2, "{}", count(b"saxpy.kd"));
}

/// A kernel's body may name the crate's integer `const` items; one defined by an
/// expression (which only rustc evaluates) leaves its kernel to the JIT.
#[test]
fn kernels_naming_the_crates_constants_are_built_where_their_values_are_plain() {
    let lib = "use offload::prelude::*;

const LANES: usize = 4;
const OFFSET: i32 = -7;
const SHIFTED: usize = 1 << 3;

#[offload_kernel]
fn plain(mut y: Region<i32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = (LANES as i32) * OFFSET;
    }
}

#[offload_kernel]
fn computed(mut y: Region<u32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = SHIFTED as u32;
    }
}
";
    let (_root, src, out) = crate_with(lib);
    let report = Builder::new()
        .targets(["cpu"])
        .sources(&src)
        .out_dir(&out)
        .compile()
        .unwrap();
    assert_eq!(report.kernels, ["plain"]);
}

#[test]
fn a_kernel_that_does_not_compile_fails_the_build_at_its_line() {
    let lib = "use offload::prelude::*;

#[offload_kernel]
fn bad(mut y: Region<f32, Linear1D>) {
    let s = y.len() as f32;
    y.sort();
}
";
    let (_root, src, out) = crate_with(lib);
    let error = Builder::new()
        .targets(["cpu"])
        .sources(&src)
        .out_dir(&out)
        .compile()
        .unwrap_err()
        .to_string();
    let file = src.join("lib.rs");
    let want = format!(
        "{}:6:7: kernel `bad`: the method `sort` is not supported in kernels; supported: ",
        file.display()
    );
    assert!(error.starts_with(&want), "{error}");
}

#[test]
fn unknown_targets_are_refused() {
    let (_root, src, out) = crate_with(KERNELS);
    let error = Builder::new()
        .targets(["sm_9x"])
        .sources(&src)
        .out_dir(&out)
        .compile()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown target `sm_9x`: expected `cpu`, an NVIDIA chip such as `sm_90` or an AMD one such as `gfx942`"
    );
}

#[test]
fn ptx_for_a_chip_is_the_newest_built_for_no_newer_chip() {
    let built = [("sm_80", "A"), ("sm_90", "H"), ("sm_90a", "Ha")];
    assert_eq!(offload::best_ptx(&built, "sm_90"), Some("H"));
    assert_eq!(offload::best_ptx(&built, "sm_90a"), Some("Ha"));
    assert_eq!(offload::best_ptx(&built, "sm_86"), Some("A"));
    assert_eq!(offload::best_ptx(&built, "sm_120"), Some("H"));
    assert_eq!(offload::best_ptx(&built, "sm_75"), None);
}
