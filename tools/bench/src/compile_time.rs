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
//! linear, ×4.0 quadratic.
//!
//! Compile time should stay near-linear in kernel size; `OFFLOAD_PASS_TIMING=1` makes
//! every MLIR pass manager print a per-pass timing report to stderr.

use anyhow::{Context as _, Result, anyhow};
use offload_lowering::{GpuTarget, Session};
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

/// Milliseconds of each stage for one kernel.
struct Times {
    /// Rust → validated MIR.
    frontend: f64,
    /// `offload_mir::link`.
    link: f64,
    /// Linked MIR → the `offload` dialect (emission, parsing, canonicalisation).
    offload: f64,
    /// Linked MIR → CPU machine code (`compile_cpu`, the `offload` stage included).
    cpu: f64,
    /// Linked MIR → PTX (`compile_ptx`, the `offload` stage included).
    ptx: f64,
    blocks: usize,
}

impl Times {
    fn columns(&self) -> [f64; 5] {
        [self.frontend, self.link, self.offload, self.cpu, self.ptx]
    }
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
    let located = |e: offload_mir::translate::TranslateError| anyhow!("{file}:{e}");
    let subst = offload_mir::translate::instances(&f.sig)
        .map_err(located)?
        .into_iter()
        .next()
        .context("a non-generic kernel has one instance")?;
    let body = offload_mir::translate::translate_instance(f, &file, &subst).map_err(located)?;
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

    Ok(Times {
        frontend,
        link,
        offload,
        cpu,
        ptx,
        blocks: linked.blocks.len(),
    })
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
    println!(
        "compile time in ms (growth from the previous N in brackets; x2.0 per doubling is linear)"
    );
    println!(
        "{:<8} {:>6} {:>7}  {:>16} {:>16} {:>16} {:>16} {:>16}",
        "shape", "N", "blocks", "Rust->MIR", "link", "MIR->offload", "MIR->CPU", "MIR->PTX"
    );
    for &shape in shapes {
        let mut previous: Option<[f64; 5]> = None;
        for &n in sizes {
            // Parsing and translating recurse once per `else if`: give them a deep stack.
            let times = std::thread::Builder::new()
                .stack_size(1 << 30)
                .spawn(move || measure(shape, n))?
                .join()
                .map_err(|_| anyhow!("compile-time: the {} N={n} run panicked", shape.name()))??;
            let columns = times.columns();
            let cells: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(i, &ms)| match previous {
                    Some(p) if p[i] > 0.0 => format!("{ms:.1} (x{:.1})", ms / p[i]),
                    _ => format!("{ms:.1}"),
                })
                .collect();
            println!(
                "{:<8} {:>6} {:>7}  {:>16} {:>16} {:>16} {:>16} {:>16}",
                shape.name(),
                n,
                times.blocks,
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4]
            );
            previous = Some(columns);
        }
    }
    Ok(())
}
