//! `offload-bench compile-time [match|else-if] [N...]`: how compile time grows with kernel
//! size.
//!
//! For each N (default 1000, 2000, 4000, 8000) it generates two kernels whose body is
//! one big branch: a `match` of N integer arms, and an `if d == 0 {..} else if d == 1
//! {..} ...` chain of N arms. Each is translated from Rust (`syn` → MIR, validated),
//! linked (`offload_mir::link`: inlining, simplification, the safety verifier), lowered
//! to the `offload` dialect, and compiled both for the CPU backend (MIR → machine code,
//! what the runtime's JIT does) and to PTX. The table gives milliseconds per stage and,
//! per shape, how much each column grew from the previous N: ×2.0 for a doubling of N is
//! linear, ×4.0 quadratic. A second table splits `MIR->CPU` and `MIR->PTX` into their
//! steps: `Linked::for_target`, our passes, LLVM (the CPU JIT; `gpu-module-to-binary`).
//!
//! Compile time should stay near-linear in kernel size; `OFFLOAD_PASS_TIMING=1` makes
//! every MLIR pass manager print a per-pass timing report to stderr.

use anyhow::{Context as _, Result, anyhow};
use offload_lowering::{GpuTarget, Session};
use offload_mir::TargetFacts;
use std::time::Instant;

#[derive(Copy, Clone)]
enum Shape {
    Match,
    ElseIf,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Match => "match",
            Shape::ElseIf => "else-if",
        }
    }

    /// A kernel that maps `x[i] % (n + 5)` through `n` arms (and a default) into `y`.
    fn source(self, n: usize) -> String {
        let mut branch = String::new();
        match self {
            Shape::Match => {
                branch.push_str("match d {\n");
                for i in 0..n {
                    branch.push_str(&format!("            {i} => {},\n", i * 3));
                }
                branch.push_str("            _ => 7,\n        }");
            }
            Shape::ElseIf => {
                for i in 0..n {
                    if i > 0 {
                        branch.push_str(" else ");
                    }
                    branch.push_str(&format!(
                        "if d == {i} {{\n            {}\n        }}",
                        i * 3
                    ));
                }
                branch.push_str(" else {\n            7\n        }");
            }
        }
        format!(
            "use offload::prelude::*;
#[offload_kernel]
fn k(mut y: Region<u32, Linear1D>, x: &[u32]) {{
    let i = y.index();
    if let Some(v) = y.get_mut() {{
        let d = x[i] % {};
        *v = {branch};
    }}
}}
",
            n + 5
        )
    }
}

/// The headline columns: what a user waits for, per step.
const COLUMNS: [&str; 5] = ["Rust->MIR", "link", "MIR->offload", "MIR->CPU", "MIR->PTX"];

/// Where `MIR->CPU` and `MIR->PTX` go, measured step by step on a second run.
const DETAIL: [&str; 8] = [
    "cpu:specialize",
    "cpu:passes",
    "cpu:LLVM JIT",
    "gpu:specialize",
    "gpu:offload->gpu",
    "gpu:gpu->nvvm",
    "gpu:nvvm->ptx",
    "(offload)",
];

/// Milliseconds of each stage for one kernel.
struct Times {
    /// Rust → validated MIR; `offload_mir::link`; linked MIR → the `offload` dialect
    /// (emission, parsing, canonicalisation); linked MIR → CPU machine code
    /// (`compile_cpu`); linked MIR → PTX (`compile_ptx`). The last two include the
    /// `offload` stage.
    columns: [f64; 5],
    /// `Linked::for_target` for the CPU; `offload` → LLVM dialect; the rest of
    /// `compile_cpu` (the JIT's LLVM optimisation and code generation); `for_target` for
    /// the GPU; the three GPU stages; the `offload` stage again, for reference.
    detail: [f64; 8],
    blocks: usize,
}

fn measure(shape: Shape, n: usize) -> Result<Times> {
    let file = format!("compile_time_{}_{n}.rs", shape.name());
    let source = shape.source(n);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let parsed = syn::parse_file(&source).map_err(|e| anyhow!("{file}: {e}"))?;
    let Some(syn::Item::Fn(f)) = parsed.items.iter().find(|i| matches!(i, syn::Item::Fn(_))) else {
        return Err(anyhow!("{file}: no kernel function"));
    };
    let located = |e: offload_translate::TranslateError| anyhow!("{file}:{e}");
    let subst = offload_translate::instances(&f.sig)
        .map_err(located)?
        .into_iter()
        .next()
        .context("a non-generic kernel has one instance")?;
    let body = offload_translate::translate_instance(f, &file, &subst).map_err(located)?;
    offload_mir::validate(&body)?;
    let frontend = ms(t);

    let t = Instant::now();
    let linked = offload_mir::link(&body, &[])?;
    let link = ms(t);

    let t = Instant::now();
    let session = Session::new()?;
    session.offload_module(&linked)?;
    let offload = ms(t);
    drop(session);

    let t = Instant::now();
    offload_lowering::compile_cpu(&linked)?;
    let cpu = ms(t);

    let t = Instant::now();
    offload_lowering::compile_ptx(&linked, &GpuTarget::default())?;
    let ptx = ms(t);

    // The same again step by step, with the facts `compile_cpu` and `compile_ptx` fold in
    // (one-lane subgroups on the CPU, 32-lane warps on the GPU).
    let t = Instant::now();
    let on_cpu = linked.for_target(TargetFacts { subgroup_size: 1 });
    let cpu_specialize = ms(t);
    let session = Session::new()?;
    let t = Instant::now();
    let mut module = session.offload_module(&on_cpu)?;
    let cpu_offload = ms(t);
    let t = Instant::now();
    session.to_cpu(&mut module, None)?;
    let cpu_passes = ms(t);
    drop(module);
    drop(session);
    let t = Instant::now();
    let on_gpu = linked.for_target(TargetFacts { subgroup_size: 32 });
    let gpu_specialize = ms(t);
    let session = Session::new()?;
    let mut module = session.offload_module(&on_gpu)?;
    let t = Instant::now();
    session.to_gpu(&mut module)?;
    let to_gpu = ms(t);
    let t = Instant::now();
    session.to_nvvm(&mut module, &GpuTarget::default())?;
    let to_nvvm = ms(t);
    let t = Instant::now();
    session.to_ptx(&mut module)?;
    let to_ptx = ms(t);
    let jit = (cpu - cpu_specialize - cpu_offload - cpu_passes).max(0.0);

    Ok(Times {
        columns: [frontend, link, offload, cpu, ptx],
        detail: [
            cpu_specialize,
            cpu_passes,
            jit,
            gpu_specialize,
            to_gpu,
            to_nvvm,
            to_ptx,
            cpu_offload,
        ],
        blocks: linked.blocks.len(),
    })
}

/// A table cell: milliseconds, and the growth from the previous N.
fn cell(ms: f64, previous: Option<f64>) -> String {
    match previous {
        Some(p) if p > 0.0 => format!("{ms:.1} (x{:.1})", ms / p),
        _ => format!("{ms:.1}"),
    }
}

/// `offload-bench compile-time [match|else-if] [N...]`.
pub fn run(args: &[String]) -> Result<()> {
    let (shapes, args) = match args.first().map(String::as_str) {
        Some("match") => (&[Shape::Match][..], &args[1..]),
        Some("else-if") => (&[Shape::ElseIf][..], &args[1..]),
        _ => (&[Shape::Match, Shape::ElseIf][..], args),
    };
    let sizes = args
        .iter()
        .map(|s| s.parse())
        .collect::<Result<Vec<usize>, _>>()
        .context("compile-time [match|else-if] [N...]")?;
    let sizes = if sizes.is_empty() {
        &[1000, 2000, 4000, 8000][..]
    } else {
        &sizes[..]
    };
    let mut rows = Vec::new();
    for &shape in shapes {
        for &n in sizes {
            // Parsing and translating recurse once per `else if`: give them a deep stack.
            let times = std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn(move || measure(shape, n))?
                .join()
                .map_err(|_| anyhow!("compile-time: the {} N={n} run panicked", shape.name()))??;
            rows.push((shape, n, times));
        }
    }
    println!(
        "compile time in ms (growth from the previous N in brackets; x2.0 per doubling is linear)"
    );
    let table = |names: &[&str], values: &dyn Fn(&Times) -> Vec<f64>| {
        let mut header = format!("{:<8} {:>6} {:>7}", "shape", "N", "blocks");
        for name in names {
            header.push_str(&format!(" {name:>17}"));
        }
        println!("{header}");
        let mut previous: Option<(&str, Vec<f64>)> = None;
        for (shape, n, times) in &rows {
            let v = values(times);
            let mut line = format!("{:<8} {:>6} {:>7}", shape.name(), n, times.blocks);
            for (i, &ms) in v.iter().enumerate() {
                let before = previous
                    .as_ref()
                    .filter(|(s, _)| *s == shape.name())
                    .map(|(_, p)| p[i]);
                line.push_str(&format!(" {:>17}", cell(ms, before)));
            }
            println!("{line}");
            previous = Some((shape.name(), v));
        }
    };
    table(&COLUMNS, &|t| t.columns.to_vec());
    println!();
    println!("where MIR->CPU and MIR->PTX go (a second, step-by-step run):");
    table(&DETAIL, &|t| t.detail.to_vec());
    Ok(())
}
