//! Ahead-of-time builds (`offload-build`): kernels found in a crate's sources, compiled
//! for every target, and errors at the kernel's line. That the macro attaches the code
//! and a program without the JIT runs it is `examples/aot`, run by `tools/test`.

use offload_build::Builder;
use std::path::{Path, PathBuf};

/// A crate's `src/` holding `lib.rs`, and an empty output directory.
fn crate_with(name: &str, lib: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!("offload-aot-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    (src, root.join("out"))
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
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
    let (src, out) = crate_with("targets", KERNELS);
    let report = Builder::new()
        .targets(["sm_80", "cpu"])
        .sources(&src)
        .out_dir(&out)
        .compile()
        .unwrap();
    assert_eq!(report.kernels, ["saxpy", "scale::<f32>", "scale::<f64>"]);

    let ptx = files_ending(&out, ".sm_80.ptx");
    assert_eq!(ptx.len(), 3);
    for file in &ptx {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains(".target sm_80"), "{text}");
    }
    let library = std::fs::read(out.join("liboffload_kernels_offload_tests.a")).unwrap();
    assert!(library.starts_with(b"!<arch>\n"));
    let attached = files_ending(&out, ".rs");
    assert_eq!(attached.len(), 3);
    for file in &attached {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.contains("include_str!") && text.contains("(\"sm_80\", "),
            "{text}"
        );
        // The CPU entry point it names is in the library.
        let symbol = text
            .split("#[link_name = \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        assert!(symbol.starts_with("offload_cpu_"));
        let found = library
            .windows(symbol.len())
            .any(|w| w == symbol.as_bytes());
        assert!(found, "{symbol} is not in the library");
    }
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
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
    let (src, out) = crate_with("bad", lib);
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
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn unknown_targets_are_refused() {
    let (src, out) = crate_with("unknown", KERNELS);
    let error = Builder::new()
        .targets(["sm_9x"])
        .sources(&src)
        .out_dir(&out)
        .compile()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown target `sm_9x`: expected `cpu` or an NVIDIA chip such as `sm_90`"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
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
