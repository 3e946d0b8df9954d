//! `offload-opt doctor`: what this machine gives offload, checked. Prints one line per
//! part (the toolchain, the CUDA driver, each GPU, libdevice, the CPU backend) and exits
//! non-zero, with what to do, when something a program would need is missing.

use offload::prelude::*;
use std::process::ExitCode;

/// A tiny kernel the CPU backend compiles and runs, as a self-test of the JIT.
#[offload_kernel]
fn doctor_axpy(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = 2.0 * x[i] + *v;
    }
}

/// One finding: `ok` or not, the line to print, and what to do when it is not.
struct Finding {
    ok: bool,
    line: String,
    advice: Option<String>,
}

fn ok(line: String) -> Finding {
    Finding {
        ok: true,
        line,
        advice: None,
    }
}

pub fn run() -> ExitCode {
    let mut findings = vec![toolchain(), cpu_backend()];
    findings.extend(cuda());
    let mut failed = false;
    for f in &findings {
        println!("{} {}", if f.ok { "ok  " } else { "FAIL" }, f.line);
        if let Some(advice) = &f.advice {
            println!("     {advice}");
        }
        failed |= !f.ok;
    }
    println!("{}", cache_line());
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The LLVM this binary was built against, and whether it is still where the build found it
/// (a crate that depends on `offload` builds against the same one).
fn toolchain() -> Finding {
    let linked = match option_env!("MLIR_SYS_LINK_SHARED") {
        Some("1") => "MLIR and LLVM 22, loaded from their shared libraries",
        _ => "MLIR and LLVM 22, linked into this binary",
    };
    let Some(prefix) = option_env!("MLIR_SYS_220_PREFIX") else {
        return ok(format!("{linked} (build prefix unknown)"));
    };
    let config = std::path::Path::new(prefix).join("bin/llvm-config");
    match std::process::Command::new(&config).arg("--version").output() {
        Ok(out) if out.status.success() => ok(format!(
            "{linked}; {} reports {} (crates that depend on offload build against it: set MLIR_SYS_220_PREFIX, TABLEGEN_220_PREFIX and LLVM_SYS_221_PREFIX to {prefix}, and for small programs MLIR_SYS_LINK_SHARED=1 with the rpath {prefix}/lib, as this workspace's .cargo/config.toml does)",
            config.display(),
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        _ => Finding {
            ok: false,
            line: format!("{linked}, built from {prefix}, which has no {}", config.display()),
            advice: Some(
                "install LLVM 22 with MLIR (tools/ensure-deps does, on Debian and Ubuntu) to build crates that use offload".into(),
            ),
        },
    }
}

/// Compiles and runs a tiny kernel on the CPU backend.
fn cpu_backend() -> Finding {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; x.len()];
    let cpu = offload::devices()
        .iter()
        .position(|d| *d == offload::Device::Cpu)
        .expect("the CPU is always listed");
    let outcome = try_offload! { kernel = doctor_axpy, args = (&mut y, &x), device = cpu };
    let right = y.iter().zip(&x).all(|(y, x)| *y == 2.0 * x + 1.0);
    match outcome {
        Ok(()) if right => ok(format!(
            "CPU backend: {threads} threads; a kernel compiled and ran correctly"
        )),
        Ok(()) => Finding {
            ok: false,
            line: "CPU backend: a kernel ran but gave wrong results".into(),
            advice: Some("please report this, with this output".into()),
        },
        Err(e) => Finding {
            ok: false,
            line: format!("CPU backend: a kernel failed: {e}"),
            advice: Some("please report this, with this output".into()),
        },
    }
}

/// The CUDA driver library, each GPU, and libdevice.
fn cuda() -> Vec<Finding> {
    let mut tried: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates("cuda") {
        if !tried.contains(&name) {
            tried.push(name);
        }
    }
    let tried = tried.join(", ");
    // SAFETY: only probes whether the driver library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return vec![ok(format!(
            "CUDA driver: not found (tried {tried}); kernels run on the CPU backend"
        ))];
    }
    let gpus: Vec<offload::Device> = offload::devices()
        .into_iter()
        .filter(|d| *d != offload::Device::Cpu)
        .collect();
    let mut out = vec![ok(format!("CUDA driver: found (one of {tried})"))];
    if gpus.is_empty() {
        out.push(Finding {
            ok: false,
            line: "GPUs: the driver is there but lists no usable GPU".into(),
            advice: Some("check `nvidia-smi`; kernels run on the CPU backend meanwhile".into()),
        });
        return out;
    }
    for gpu in &gpus {
        out.push(ok(format!("GPU {gpu}")));
    }
    let looked: Vec<String> = offload_lowering::libdevice::candidates()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    out.push(match offload_lowering::libdevice::find() {
        Some(path) => ok(format!("libdevice: {path}")),
        None => Finding {
            ok: false,
            line: format!("libdevice: not found (looked in {})", looked.join(", ")),
            advice: Some(
                "kernels that call exp, sin, ln, ... need it: set OFFLOAD_LIBDEVICE to libdevice.10.bc, or CUDA_HOME to a CUDA toolkit".into(),
            ),
        },
    });
    out
}

/// Where compiled kernels (PTX, AMD code objects, CPU objects) are kept across runs, and
/// how much is there.
fn cache_line() -> String {
    let Some(cache) = offload::DiskCache::from_env() else {
        return "ok   disk cache: off (OFFLOAD_CACHE=off, or no home directory)".into();
    };
    let (files, bytes) = std::fs::read_dir(cache.dir())
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .fold((0u64, 0u64), |(n, b), m| (n + 1, b + m.len()))
        })
        .unwrap_or((0, 0));
    format!(
        "ok   disk cache: {} ({files} entries, {bytes} bytes: PTX, AMD code objects and CPU objects)",
        cache.dir().display()
    )
}
