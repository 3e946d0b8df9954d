//! `offload-opt` on good and bad input: bad input is a located diagnostic and a non-zero
//! exit, never a panic.

use std::process::Command;

fn run(args: &[&str], input: Option<(&str, &str)>) -> (bool, String, String) {
    // Each call its own folder (tests run in parallel), removed when the call returns.
    let folder = tempfile::Builder::new()
        .prefix("offload-opt-test-")
        .tempdir()
        .unwrap();
    let dir = folder.path();
    let mut all: Vec<String> = Vec::new();
    if let Some((name, text)) = input {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        all.push(path.to_string_lossy().into_owned());
    }
    all.extend(args.iter().map(|s| s.to_string()));
    let out = Command::new(env!("CARGO_BIN_EXE_offload-opt"))
        .args(&all)
        .output()
        .unwrap();
    let stderr =
        String::from_utf8_lossy(&out.stderr).replace(&dir.to_string_lossy().into_owned(), "DIR");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

const SAXPY: &str = "
#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}
";

#[test]
fn every_stage_prints() {
    for stage in ["mir", "offload", "gpu", "llvm", "ptx", "cpu"] {
        let (ok, stdout, stderr) = run(&["--emit", stage], Some(("k.rs", SAXPY)));
        assert!(ok, "--emit {stage}: {stderr}");
        assert!(!stdout.trim().is_empty(), "--emit {stage} printed nothing");
    }
    let (ok, stdout, _) = run(&["--emit", "all"], Some(("k.rs", SAXPY)));
    assert!(ok);
    for header in ["mir", "offload", "gpu", "llvm", "ptx"] {
        assert!(
            stdout.contains(&format!("// ===== saxpy :: {header} =====")),
            "missing {header}"
        );
    }
    assert!(stdout.contains(".entry saxpy("));
}

#[test]
fn mir_output_reads_back_as_input() {
    let (ok, mir, _) = run(&["--emit", "mir"], Some(("k.rs", SAXPY)));
    assert!(ok);
    let (ok, again, stderr) = run(&["--emit", "mir"], Some(("k.mir", &mir)));
    assert!(ok, "{stderr}");
    assert_eq!(again, mir);
}

#[test]
fn bad_input_is_a_located_diagnostic() {
    let cases: [(&str, &str, &str); 5] = [
        (
            "bad.rs",
            "fn f( x ) {}",
            "error: DIR/bad.rs:1:9: expected `:`",
        ),
        (
            "closure.rs",
            "#[offload_kernel]\nfn k(mut y: Region<f32, Linear1D>) {\n    let f = move |a: f32| a;\n}\n",
            "error: DIR/closure.rs:3:13: `move` closures are not supported in kernels",
        ),
        (
            "bad.mir",
            "// offload-mir v1\nkernel k() {\n    file \"f\";\n    let mut _0: ()\n",
            "error: DIR/bad.mir:5:1: expected `;`, found end of input",
        ),
        (
            "none.rs",
            "fn plain() {}\n",
            "error: DIR/none.rs: no `#[offload_kernel]` functions found",
        ),
        (
            "invalid.mir",
            "// offload-mir v1\nkernel k() {\n    file \"f\";\n    let mut _0: ();\n\n    bb0: {\n        goto -> bb7; // 3:4\n    }\n}\n",
            "error: f:3:4: in kernel `k`, bb0: branch to `bb7`, which does not exist",
        ),
    ];
    for (name, text, expected) in cases {
        let (ok, _, stderr) = run(&["--emit", "ptx"], Some((name, text)));
        assert!(!ok, "{name} should fail");
        assert!(stderr.starts_with(expected), "{name}: got {stderr:?}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    let (ok, _, stderr) = run(&["/no/such/file.rs"], None);
    assert!(!ok);
    assert!(
        stderr.starts_with("error: cannot read /no/such/file.rs"),
        "{stderr}"
    );
}

/// Input nested deeper than the parser can recurse is an error, not a stack overflow;
/// input just inside the limit goes through.
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let kernel = |body: &str| {
        format!(
            "#[offload_kernel]\nfn k(mut y: Region<f32, Linear1D>) {{\n    let t = thread_idx(0);\n{body}\n    if let Some(v) = y.get_mut() {{ *v = 1.0; }}\n}}\n"
        )
    };
    let parens = kernel(&format!(
        "    let a = {}1.0f32{};",
        "(".repeat(5000),
        ")".repeat(5000)
    ));
    let (ok, _, stderr) = run(&["--emit", "mir"], Some(("k.rs", &parens)));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "error: DIR/k.rs:4:268: brackets nested more than 256 deep are not supported"
    );
    let chain: Vec<String> = (0..2000).map(|i| format!("if t == {i} {{ }}")).collect();
    let (ok, _, stderr) = run(
        &["--emit", "mir"],
        Some(("k.rs", &kernel(&format!("    {};", chain.join(" else "))))),
    );
    assert!(!ok);
    assert!(
        stderr.contains("more than 1024 `else` branches in one block are not supported"),
        "{stderr}"
    );
    let ifs = format!("{}{}", "if t > 0 { ".repeat(200), "} ".repeat(200));
    let (ok, _, stderr) = run(&["--emit", "mir"], Some(("k.rs", &kernel(&ifs))));
    assert!(ok, "{stderr}");
}

#[test]
fn one_kernel_is_printed_with_the_device_functions_it_calls() {
    let file = "use offload::prelude::*;
#[offload_device]
fn halved(a: i32) -> i32 {
    a / 2
}
#[offload_kernel]
fn calls(mut y: Region<i32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = halved(*v);
    }
}
#[offload_kernel]
fn other(mut y: Region<i32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = 1;
    }
}
";
    let (ok, stdout, stderr) = run(
        &["--kernel", "calls", "--emit", "offload"],
        Some(("k.rs", file)),
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("func.func @calls"), "{stdout}");
    assert!(!stdout.contains("@other"), "{stdout}");
    let (ok, stdout, stderr) = run(
        &["--kernel", "halved", "--emit", "mir"],
        Some(("k.rs", file)),
    );
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("fn halved(") && !stdout.contains("kernel calls"),
        "{stdout}"
    );
    let (ok, _, stderr) = run(
        &["--kernel", "halved", "--emit", "ptx"],
        Some(("k.rs", file)),
    );
    assert!(!ok);
    assert_eq!(
        stderr,
        "error: `halved` is a device function: its code is part of each kernel that calls it \
         (`--emit mir` prints it alone)\n"
    );
    let (ok, _, stderr) = run(&["--kernel", "nope"], Some(("k.rs", file)));
    assert!(!ok);
    assert_eq!(stderr, "error: DIR/k.rs: no kernel named `nope`\n");
}

#[test]
fn pass_pipelines_run_on_mlir_files() {
    let dir = tempfile::tempdir().unwrap();
    let offload = dir.path().join("k.mlir");
    let offload = offload.to_str().unwrap();
    let (ok, stdout, stderr) = run(&["--emit", "offload", "-o", offload], Some(("k.rs", SAXPY)));
    assert!(ok && stdout.is_empty(), "{stderr}");
    assert!(
        std::fs::read_to_string(offload)
            .unwrap()
            .contains("offload.region_index")
    );
    // An offload pass by name, then upstream passes: each runs in order.
    let (ok, stdout, stderr) = run(
        &[
            offload,
            "--pass-pipeline",
            "builtin.module(offload-partition, convert-offload-to-gpu, canonicalize)",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("gpu.func @saxpy"), "{stdout}");
    assert!(!stdout.contains("offload.region_index"), "{stdout}");
    // The same pipeline on the kernels of a Rust file starts from their `offload` stage.
    let (ok, from_rust, stderr) = run(
        &["--pass-pipeline", "builtin.module(offload-partition)"],
        Some(("k.rs", SAXPY)),
    );
    assert!(ok, "{stderr}");
    assert!(from_rust.contains("offload.workgroup_id"), "{from_rust}");
    for (pipeline, error) in [
        (
            "builtin.module(no-such-pass)",
            "error: bad pass pipeline `builtin.module(no-such-pass)`",
        ),
        (
            "builtin.module(offload-partition{x=1})",
            "error: bad pass pipeline `builtin.module(offload-partition{x=1})`: `offload-partition{x=1}`: offload passes take no options",
        ),
        (
            "func.func(offload-partition)",
            "error: bad pass pipeline `func.func(offload-partition)`: offload passes run on `builtin.module(...)` only",
        ),
        (
            "builtin.module(offload-partition,,cse)",
            "error: bad pass pipeline `builtin.module(offload-partition,,cse)`: an empty pass name",
        ),
    ] {
        let (ok, _, stderr) = run(&[offload, "--pass-pipeline", pipeline], None);
        assert!(!ok, "{pipeline} was accepted");
        assert!(stderr.starts_with(error), "{pipeline}: {stderr}");
    }
    // A stage preset is for kernels; on MLIR the pipeline is named.
    let (ok, _, stderr) = run(&[offload, "--emit", "ptx"], None);
    assert!(!ok, "--emit on a .mlir file was accepted");
    assert_eq!(
        stderr,
        "error: `--emit` takes a `.rs` or `.mir` file; a `.mlir` file is printed as it is or \
         after a pipeline, such as `--pass-pipeline='builtin.module(offload-partition, \
         convert-offload-to-gpu)'`\n"
    );
    // Malformed MLIR is a located diagnostic.
    let (ok, _, stderr) = run(&[], Some(("bad.mlir", "module {\n  func.func @f( {\n}\n")));
    assert!(!ok);
    assert!(stderr.starts_with("error: DIR/bad.mlir:2:"), "{stderr}");
}

#[test]
fn math_without_libdevice_is_an_error_not_unresolved_ptx() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.rs");
    std::fs::write(
        &file,
        "#[offload_kernel]\nfn k(mut y: Region<f32, Linear1D>) {\n    if let Some(v) = y.get_mut() {\n        *v = (*v).exp();\n    }\n}\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_offload-opt"))
        .arg(&file)
        .args(["--emit", "ptx"])
        .env("OFFLOAD_LIBDEVICE", "/nonexistent/libdevice.10.bc")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: the kernel calls `__nv_expf`, which needs CUDA's libdevice.10.bc; it is not in /nonexistent/libdevice.10.bc (set OFFLOAD_LIBDEVICE to the file, or CUDA_HOME to a CUDA toolkit)\n"
    );
}

#[test]
fn doctor_checks_the_machine() {
    let (ok, stdout, stderr) = run(&["doctor"], None);
    assert!(stdout.contains("ok   CPU backend: "), "{stdout}{stderr}");
    assert!(
        stdout.contains("a kernel compiled and ran correctly"),
        "{stdout}"
    );
    assert!(stdout.contains("CUDA driver: "), "{stdout}");
    // The exit status says whether anything failed.
    assert_eq!(ok, !stdout.contains("FAIL"), "{stdout}");
}

/// The JIT leaves nothing in the temporary directory (LLVM's perf jitdumps, for one).
#[test]
fn the_jit_leaves_no_files_behind() {
    let folder = tempfile::tempdir().unwrap();
    let tmp = folder.path();
    let out = Command::new(env!("CARGO_BIN_EXE_offload-opt"))
        .arg("doctor")
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("a kernel compiled and ran correctly"),
        "{stdout}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The conformance suite's kernels, by the names `--emit linked` prints them under.
fn conformance_kernels() -> Vec<String> {
    let cases = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/conformance/cases.rs"
    );
    let (ok, stdout, stderr) = run(&[cases, "--emit", "linked"], None);
    assert!(ok, "{stderr}");
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("kernel "))
        .map(|l| l[..l.find('(').unwrap()].to_string())
        .collect()
}

/// The bits of an AMDGPU ELF header's flags that name the chip (LLVM's `ELF.h`).
const EF_AMDGPU_MACH: u32 = 0x0ff;

/// Checks that `path` is an AMD GPU code object for `mach` (the ELF header's
/// `EF_AMDGPU_MACH` code of the chip) holding each of `kernels` with its kernel
/// descriptor, and nothing undefined; returns how many kernels it holds.
fn check_code_object(path: &std::path::Path, mach: u32, kernels: &[String]) -> usize {
    use object::read::elf::{ElfFile64, FileHeader};
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap();
    let elf = ElfFile64::<object::Endianness>::parse(&data[..]).unwrap();
    let (header, endian) = (elf.elf_header(), elf.endian());
    assert_eq!(header.e_machine(endian), object::elf::EM_AMDGPU);
    assert_eq!(header.e_type(endian), object::elf::ET_DYN);
    assert_eq!(header.e_flags(endian) & EF_AMDGPU_MACH, mach);
    let names: std::collections::HashSet<String> = elf
        .symbols()
        .chain(elf.dynamic_symbols())
        .filter(|s| !s.is_undefined())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect();
    let undefined: Vec<String> = elf
        .dynamic_symbols()
        .filter(|s| s.is_undefined() && s.name().is_ok_and(|n| !n.is_empty()))
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect();
    assert!(
        undefined.is_empty(),
        "undefined in the code object: {undefined:?}"
    );
    for k in kernels {
        assert!(names.contains(k), "no symbol `{k}`");
        assert!(
            names.contains(&format!("{k}.kd")),
            "no kernel descriptor `{k}.kd`"
        );
    }
    names.iter().filter(|n| n.ends_with(".kd")).count()
}

#[test]
fn the_conformance_suite_compiles_to_amd_code_objects() {
    let kernels = conformance_kernels();
    assert!(kernels.len() > 50, "only {} kernels found", kernels.len());
    let cases = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/conformance/cases.rs"
    );
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    // CDNA 3 (wave64) and RDNA 3 (wave32).
    for (chip, mach) in [("gfx942", 0x04c), ("gfx1100", 0x041)] {
        let out = dir.join(format!("{chip}.hsaco"));
        let out_arg = out.to_string_lossy().into_owned();
        let (ok, _, stderr) = run(
            &[cases, "--emit", "hsaco", "--chip", chip, "-o", &out_arg],
            None,
        );
        assert!(ok, "{chip}: {stderr}");
        let held = check_code_object(&out, mach, &kernels);
        assert_eq!(held, kernels.len(), "{chip}: kernel descriptors");
    }
}

#[test]
fn amd_stages_print_for_the_chip_named() {
    const SUM: &str = "
#[offload_kernel]
fn sums(mut y: Region<f32, Linear1D>) {
    let s = subgroup_sum(1.0f32);
    if let Some(v) = y.get_mut() {
        *v = s;
    }
}
";
    // Six butterfly steps for CDNA's 64 lanes, five for RDNA's 32.
    for (chip, width, steps) in [("gfx942", 64, 6), ("gfx1100", 32, 5)] {
        let (ok, gpu, stderr) = run(&["--emit", "gpu", "--chip", chip], Some(("k.rs", SUM)));
        assert!(ok, "{stderr}");
        assert!(
            gpu.contains(&format!("arith.constant {width} : i32")),
            "{chip}: {gpu}"
        );
        assert_eq!(
            gpu.matches("gpu.shuffle  xor").count(),
            steps,
            "{chip}: {gpu}"
        );
        let (ok, rocdl, stderr) = run(&["--emit", "rocdl", "--chip", chip], Some(("k.rs", SUM)));
        assert!(ok, "{stderr}");
        assert!(
            rocdl.contains(&format!("#rocdl.target<O = 3, chip = \"{chip}\">")),
            "{rocdl}"
        );
        let (ok, asm, stderr) = run(&["--emit", "amdgcn", "--chip", chip], Some(("k.rs", SUM)));
        assert!(ok, "{stderr}");
        assert!(
            asm.contains(&format!(".amdgcn_target \"amdgcn-amd-amdhsa--{chip}\"")),
            "{asm}"
        );
    }
}

#[test]
fn amd_misuse_is_a_clear_error() {
    let (ok, _, stderr) = run(&["--emit", "hsaco"], Some(("k.rs", SAXPY)));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "error: `--emit hsaco` writes a binary code object: name its file with `-o`"
    );
    let (ok, _, stderr) = run(&["--emit", "rocdl", "--chip", "gfx"], Some(("k.rs", SAXPY)));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "error: `gfx` is not an AMD GPU LLVM 22 compiles for: give `gfx` and its number (`gfx90a`, `gfx942`, `gfx1100`)"
    );
    let (ok, _, stderr) = run(
        &["--emit", "ptx", "--chip", "gfx942"],
        Some(("k.rs", SAXPY)),
    );
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "error: `--chip gfx942` is an AMD GPU: its stages are `gpu`, `rocdl`, `amdgcn` and `hsaco`"
    );
}

/// Two bounds checks, so two panic reports.
const GATHER: &str = "
#[offload_kernel]
fn gather(mut y: Region<f32, Linear1D>, x: &[f32], at: &[u32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = x[at[i] as usize];
    }
}
";

/// Compiled for launches that run their whole grid at once, a thread's position is the
/// block index times the block size in one 32-bit wide multiply; compiled for any launch,
/// the hidden group base is added first, which takes a 64-bit multiply.
#[test]
fn whole_grid_launches_multiply_positions_in_32_bits() {
    let input = Some(("gather.rs", GATHER));
    let (ok, any, err) = run(&["--emit", "ptx", "--block-size", "256"], input);
    assert!(ok, "{err}");
    assert!(any.contains("mad.lo.s64"), "{any}");
    let args = ["--emit", "ptx", "--block-size", "256", "--whole-grid"];
    let (ok, whole, err) = run(&args, input);
    assert!(ok, "{err}");
    assert!(!whole.contains("mad.lo.s64"), "{whole}");
    assert!(
        whole.contains("mad.lo.s32") || whole.contains("mul.wide.u32"),
        "{whole}"
    );
}

/// On NVIDIA GPUs each check's panic report keeps a block of its own (marked by its
/// site), so the path that does not panic copies nothing into a shared report; compiled
/// to a register budget (`--resident-workgroups`, PTX `.minnctapersm`) the reports merge
/// again, which costs fewer registers.
#[test]
fn panic_reports_stay_apart_unless_registers_are_budgeted() {
    let input = Some(("gather.rs", GATHER));
    let (ok, ptx, err) = run(&["--emit", "ptx", "--block-size", "256"], input);
    assert!(ok, "{err}");
    for site in 0..2 {
        assert!(
            ptx.contains(&format!("// offload panic site {site}")),
            "{ptx}"
        );
    }
    assert!(!ptx.contains(".minnctapersm"), "{ptx}");
    let args = [
        "--emit",
        "ptx",
        "--block-size",
        "256",
        "--resident-workgroups",
        "8",
    ];
    let (ok, budgeted, err) = run(&args, input);
    assert!(ok, "{err}");
    assert!(budgeted.contains(".minnctapersm 8"), "{budgeted}");
    assert!(!budgeted.contains("offload panic site"), "{budgeted}");
}

/// A block-reversing kernel with a barrier, for the CPU stage's thread loops.
const REVERSE: &str = "
#[offload_kernel]
fn reverse_blocks(mut y: Region<i32, Linear1D>, x: &[i32]) {
    let mut tile = Shared::<i32, 1024>::new();
    let t = thread_idx(0);
    let n = workgroup_dim(0);
    tile.write(x.get(workgroup_idx(0) * n + t).copied().unwrap_or(-1));
    sync_threads();
    if let Some(v) = y.get_mut() {
        *v = tile[n - 1 - t];
    }
}
";

/// Compiled for one workgroup size, the CPU stage's thread loops count to constants: the
/// host function's size arguments (`%arg5` to `%arg7`, after the workgroup range and
/// counts) are read nowhere but the signature; compiled for any size, the loops read
/// them.
#[test]
fn cpu_stage_for_one_workgroup_size_counts_to_constants() {
    let input = Some(("reverse.rs", REVERSE));
    let (ok, any, err) = run(&["--emit", "cpu"], input);
    assert!(ok, "{err}");
    assert!(any.matches("%arg5").count() > 1, "{any}");
    let (ok, fixed, err) = run(&["--emit", "cpu", "--block-size", "128"], input);
    assert!(ok, "{err}");
    for size_arg in ["%arg5", "%arg6", "%arg7"] {
        assert_eq!(fixed.matches(size_arg).count(), 1, "{size_arg} in {fixed}");
    }
    assert!(fixed.contains("llvm.mlir.constant(128 : index)"), "{fixed}");
}
