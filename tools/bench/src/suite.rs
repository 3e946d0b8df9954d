//! The benchmark suite: each kernel written twice, in our kernel language
//! (`suite/kernels.rs`, plus the FIR filters, the block scan and the f32 matrix product
//! of `main.rs`) and in CUDA C++ (`cuda/suite.cu`), with the same algorithm and launch
//! geometry, timed side by side.
//!
//! `offload-bench suite PTX_PATH OUT_DIR [REPS] [FAMILIES]` needs a CUDA GPU and `PTX_PATH`, nvcc's
//! PTX for `cuda/suite.cu` (`nvcc -O3 -arch=sm_90 -ptx cuda/suite.cu -o suite.ptx`;
//! `run-gpu.sh` builds it). Both sides run in this one process, so that one timing
//! method serves both: the twins are loaded from that PTX with cudarc, our kernels are
//! compiled to PTX by our compiler as `offload!` would for the launch, and each pair runs
//! over the same device-resident buffers on one stream (see `suite/gpu.rs` for the steps:
//! both results checked against the host once, then CUDA events around each launch,
//! median of REPS after 3 warm-ups, default 50). Each kernel runs at a large size (2^26
//! elements; 8192² and 512×512×256 for the grids; GEMM 4096) and at 2^20 (1024², 128×128×64;
//! GEMM 1024). For the bandwidth-bound kernels the suite also times a device-to-device
//! copy of the same bytes, the bandwidth they could reach; for the matrix products,
//! cuBLAS SGEMM and DGEMM as the roof, when cuBLAS loads.
//!
//! FAMILIES, a comma-separated list (`stencils,GEMM`), runs only the families whose names
//! start with one of them, for a profiler run.
//!
//! It prints a table (`report.rs`) and writes `OUT_DIR/suite.json` (every figure),
//! `OUT_DIR/ratio.svg` (offload / CUDA C++ per kernel and size) and
//! `OUT_DIR/bandwidth.svg` (achieved GB/s against the copy; `plots.rs`). A result that
//! differs from the host's stops its family of kernels with `FAILED` and makes the run
//! fail, after the other families have run and the files are written.
//! `tools/bench/run-gpu.sh BENCH [N] [REPS] [SUITE_DIR]` builds the PTX and runs the
//! suite last.
//!
//! `offload-bench suite-check` runs our kernels at small sizes through `try_offload!` on
//! the default device against the same host references (`check.rs`): the correctness
//! check for a machine without a GPU.

mod check;
mod gpu;
mod kernels;
mod plots;
mod reference;
mod report;

pub(crate) use check::check;

use anyhow::{Context, Result};
use gpu::{Elementwise, Harness, Want};
use std::path::PathBuf;

/// One side's timing: the median and the minimum of its timed launches, in ms.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
}

/// What a kernel does per launch, for its rate.
#[derive(Clone, Copy, Debug)]
pub(super) enum Work {
    /// Bytes it must read and write at least (its arrays once each): a bandwidth-bound
    /// kernel, rated in GB/s.
    Bytes(f64),
    /// Floating-point operations: a compute-bound kernel, rated in GFLOP/s.
    Flops(f64),
}

/// One kernel at one size.
#[derive(Clone, Debug)]
pub(super) struct Row {
    pub kernel: &'static str,
    /// The size as the table shows it: `2^26`, `8192x8192`, `4096`.
    pub size: String,
    /// Whether this is the large size (else 2^20 elements, or GEMM 1024).
    pub large: bool,
    /// Elements of the output (or of the input, for the reductions and the histogram).
    pub elements: usize,
    pub reps: usize,
    pub offload: Timing,
    pub cuda: Timing,
    pub work: Work,
    /// A device-to-device copy of the same bytes, for bandwidth-bound kernels.
    pub copy: Option<Timing>,
    /// The library's time for the same result (cuBLAS for the matrix products).
    pub roof: Option<(&'static str, Timing)>,
}

impl Row {
    /// Offload's median over CUDA C++'s: above 1, ours is slower.
    pub fn ratio(&self) -> f64 {
        self.offload.median_ms / self.cuda.median_ms
    }

    /// The rate of a timing: GB/s or GFLOP/s, as [`Row::unit`] says.
    pub fn rate(&self, t: Timing) -> f64 {
        match self.work {
            Work::Bytes(x) | Work::Flops(x) => x / t.median_ms / 1e6,
        }
    }

    pub fn unit(&self) -> &'static str {
        match self.work {
            Work::Bytes(_) => "GB/s",
            Work::Flops(_) => "GFLOP/s",
        }
    }
}

// `softmax_rows` gives each row a workgroup of the suite's 1-D workgroup size.
const _: () = assert!(kernels::SOFTMAX_ROW == crate::BLOCK as usize);

/// Elements of the one-dimensional kernels at each size.
const LINEAR: [usize; 2] = [1 << 26, 1 << 20];

/// Row length of the square 2-D grids (8192² = 2^26, 1024² = 2^20).
const SQUARE: [usize; 2] = [8192, 1024];

/// The 3-D grid, x fastest (2^26 and 2^20 points).
const CUBE: [[usize; 3]; 2] = [[512, 512, 256], [128, 128, 64]];

/// The matrix products' order.
const GEMM: [usize; 2] = [4096, 1024];

/// Timed launches of a large matrix product at most: each takes 20 to 40 ms on an
/// H200, and three products (ours, the twin, cuBLAS) per type must fit the suite's
/// budget of about three minutes.
const GEMM_LARGE_REPS: usize = 20;

/// Whether index `s` of the size arrays (`LINEAR`, `SQUARE`, `CUBE`, `GEMM`) is the large
/// size.
fn is_large(s: usize) -> bool {
    s == 0
}

/// `offload-bench suite PTX_PATH OUT_DIR [REPS]`.
pub(crate) fn run(mut args: impl Iterator<Item = String>) -> Result<()> {
    let usage = "usage: offload-bench suite PTX_PATH OUT_DIR [REPS] [FAMILIES]";
    let ptx = PathBuf::from(args.next().context(usage)?);
    let out = PathBuf::from(args.next().context(usage)?);
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(50);
    anyhow::ensure!(reps >= 1, "REPS must be at least 1");
    let only: Option<Vec<String>> = args
        .next()
        .map(|f| f.split(',').map(str::to_owned).collect());
    let started = std::time::Instant::now();
    let h = Harness::new(&ptx)?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    println!(
        "suite on {}: each side median of {reps} launches (large GEMM {}) after 3 warm-ups, \
         CUDA events, device-resident data",
        h.device,
        reps.min(GEMM_LARGE_REPS)
    );
    let mut rows = Vec::new();
    report::header();
    let mut add = |mut row: Row| -> Result<()> {
        if let Work::Bytes(bytes) = row.work {
            row.copy = Some(h.copy(bytes, row.reps)?);
        }
        report::print_row(&row);
        rows.push(row);
        Ok(())
    };
    // A failure (a result that differs from the host's, a CUDA error) ends its family of
    // benchmarks, loudly, but not the others: the figures measured still get written,
    // and the run still fails at the end.
    let families: [(&str, Family); 6] = [
        ("stream", streams),
        ("reductions", reductions),
        ("FIR filters", filters),
        ("stencils", grids),
        ("GEMM", gemms),
        ("scan, histogram, softmax", workgroup_kernels),
    ];
    let mut failures = Vec::new();
    let chosen = |family: &str| {
        (only.as_ref()).is_none_or(|only| only.iter().any(|o| family.starts_with(o.as_str())))
    };
    for (family, run) in families.into_iter().filter(|(f, _)| chosen(f)) {
        if let Err(e) = run(&h, reps, &mut add) {
            println!("FAILED ({family}): {e:#}");
            failures.push(family);
        }
    }

    let json = out.join("suite.json");
    report::write_json(&json, &h.device, &rows)?;
    let ratio = out.join("ratio.svg");
    plots::ratio(&ratio, &h.device, &rows)?;
    let bandwidth = out.join("bandwidth.svg");
    plots::bandwidth(&bandwidth, &h.device, &rows)?;
    println!(
        "suite done in {:.0} s; wrote {}, {} and {}",
        started.elapsed().as_secs_f64(),
        json.display(),
        ratio.display(),
        bandwidth.display()
    );
    anyhow::ensure!(
        failures.is_empty(),
        "the suite failed in: {} (see FAILED above)",
        failures.join(", ")
    );
    Ok(())
}

/// What each family of benchmarks hands its rows to.
type Add<'a> = dyn FnMut(Row) -> Result<()> + 'a;

/// A family of benchmarks: runs them, handing each row to the [`Add`].
type Family = fn(&Harness, usize, &mut Add) -> Result<()>;

/// A row of a one-dimensional kernel over `n` elements.
fn linear_row(kernel: &'static str, s: usize, reps: usize, t: (Timing, Timing), work: Work) -> Row {
    let n = LINEAR[s];
    Row {
        kernel,
        size: format!("2^{}", n.trailing_zeros()),
        large: is_large(s),
        elements: n,
        reps,
        offload: t.0,
        cuda: t.1,
        work,
        copy: None,
        roof: None,
    }
}

/// STREAM copy, scale, add and triad.
fn streams(h: &Harness, reps: usize, add: &mut Add) -> Result<()> {
    let scalar = 1.5f32;
    for (name, kernel, twin, reads) in [
        ("copy", kernels::STREAM_COPY, "stream_copy", 1),
        ("scale", kernels::STREAM_SCALE, "stream_scale", 1),
        ("add", kernels::STREAM_ADD, "stream_add", 2),
        ("triad", kernels::STREAM_TRIAD, "stream_triad", 2),
    ] {
        for (s, n) in LINEAR.into_iter().enumerate() {
            let (a, b) = (reference::floats(n, 1), reference::floats(n, 2));
            let (inputs, scalars, want): (Vec<&[f32]>, Vec<f32>, Vec<f32>) = match twin {
                "stream_copy" => (vec![&a], vec![], a.clone()),
                "stream_scale" => (
                    vec![&a],
                    vec![scalar],
                    a.iter().map(|v| scalar * v).collect(),
                ),
                "stream_add" => (
                    vec![&a, &b],
                    vec![],
                    a.iter().zip(&b).map(|(x, y)| x + y).collect(),
                ),
                _ => (
                    vec![&a, &b],
                    vec![scalar],
                    a.iter().zip(&b).map(|(x, y)| x + scalar * y).collect(),
                ),
            };
            let bytes = 4.0 * (reads + 1) as f64 * n as f64;
            let e = Elementwise {
                kernel,
                twin,
                inputs,
                scalars: scalars
                    .iter()
                    .map(|v| (v.to_bits() as u64, gpu::Arg::F32(*v)))
                    .collect(),
                want: Want::Close(&want),
            };
            let t = h.elementwise(name, &e, n, reps)?;
            add(linear_row(name, s, reps, t, Work::Bytes(bytes)))?;
        }
    }
    // The triad in `f16` and `bf16`: half the bytes of `f32`'s, each result rounded to
    // the type on both sides (the twins use `__hmul_rn`/`__hadd_rn`, which nvcc does not fuse).
    for (name, kernel, twin) in [
        ("triad f16", kernels::HALF_TRIAD, "half_triad"),
        ("triad bf16", kernels::BFLOAT_TRIAD, "bfloat_triad"),
    ] {
        let bfloat = twin == "bfloat_triad";
        let to_bits = |v: f32| {
            if bfloat {
                half::bf16::from_f32(v).to_bits()
            } else {
                half::f16::from_f32(v).to_bits()
            }
        };
        let triad = |b: u16, c: u16| -> u16 {
            if bfloat {
                let (b, c, s) = (
                    half::bf16::from_bits(b),
                    half::bf16::from_bits(c),
                    half::bf16::from_f32(scalar),
                );
                (b + s * c).to_bits()
            } else {
                let (b, c, s) = (
                    half::f16::from_bits(b),
                    half::f16::from_bits(c),
                    half::f16::from_f32(scalar),
                );
                (b + s * c).to_bits()
            }
        };
        for (s, n) in LINEAR.into_iter().enumerate() {
            let b: Vec<u16> = reference::floats(n, 1).into_iter().map(to_bits).collect();
            let c: Vec<u16> = reference::floats(n, 2).into_iter().map(to_bits).collect();
            let want: Vec<u16> = b.iter().zip(&c).map(|(b, c)| triad(*b, *c)).collect();
            let s_bits = to_bits(scalar);
            let e = Elementwise {
                kernel,
                twin,
                inputs: vec![&b, &c],
                scalars: vec![(s_bits as u64, gpu::Arg::Half(s_bits))],
                want: Want::Exact(&want),
            };
            let t = h.elementwise(name, &e, n, reps)?;
            add(linear_row(
                name,
                s,
                reps,
                t,
                Work::Bytes(2.0 * 3.0 * n as f64),
            ))?;
        }
    }
    // `y = a * x + y` in `bf16`: the checked launch finds y zeroed, so its result is
    // `a * x + 0` rounded as the host rounds it; the timed ones update y in place.
    let a = half::bf16::from_f32(scalar);
    for (s, n) in LINEAR.into_iter().enumerate() {
        let x: Vec<u16> = (reference::floats(n, 1).into_iter())
            .map(|v| half::bf16::from_f32(v).to_bits())
            .collect();
        let want: Vec<u16> = (x.iter())
            .map(|b| (a * half::bf16::from_bits(*b) + half::bf16::ZERO).to_bits())
            .collect();
        let e = Elementwise {
            kernel: kernels::BFLOAT_SAXPY,
            twin: "bfloat_saxpy",
            inputs: vec![&x],
            scalars: vec![(a.to_bits() as u64, gpu::Arg::Half(a.to_bits()))],
            want: Want::Exact(&want),
        };
        let t = h.elementwise("saxpy bf16", &e, n, reps)?;
        add(linear_row(
            "saxpy bf16",
            s,
            reps,
            t,
            Work::Bytes(2.0 * 3.0 * n as f64),
        ))?;
    }
    Ok(())
}

/// The dot product and the sum.
fn reductions(h: &Harness, reps: usize, add: &mut Add) -> Result<()> {
    for (s, n) in LINEAR.into_iter().enumerate() {
        let (x, y) = (reference::floats(n, 3), reference::floats(n, 4));
        let t = h.reduction(
            "dot",
            kernels::DOT,
            "dot",
            &[&x, &y],
            reference::dot(&x, &y),
            reps,
        )?;
        add(linear_row("dot", s, reps, t, Work::Bytes(8.0 * n as f64)))?;
    }
    for (s, n) in LINEAR.into_iter().enumerate() {
        let x = reference::floats(n, 5);
        let t = h.reduction("sum", kernels::SUM, "sum", &[&x], reference::sum(&x), reps)?;
        add(linear_row("sum", s, reps, t, Work::Bytes(4.0 * n as f64)))?;
    }
    Ok(())
}

/// The 16-tap FIR filter, taps from a slice (the twin: from a pointer) and taps a
/// constant array (the twin: `__constant__`).
fn filters(h: &Harness, reps: usize, add: &mut Add) -> Result<()> {
    for (name, kernel, twin) in [
        ("fir16", &crate::__OFFLOAD_KERNEL_fir16, "fir16"),
        (
            "fir16 const taps",
            &crate::__OFFLOAD_KERNEL_fir16_const,
            "fir16_const",
        ),
    ] {
        for (s, n) in LINEAR.into_iter().enumerate() {
            let x = reference::floats(n + 15, 6);
            let want = reference::fir(&x, n);
            let inputs: Vec<&[f32]> = if twin == "fir16" {
                vec![&x, &crate::FIR_TAPS]
            } else {
                vec![&x]
            };
            let bytes = 8.0 * n as f64;
            let e = Elementwise {
                kernel,
                twin,
                inputs,
                scalars: vec![],
                want: Want::Close(&want),
            };
            let t = h.elementwise(name, &e, n, reps)?;
            add(linear_row(name, s, reps, t, Work::Bytes(bytes)))?;
        }
    }
    Ok(())
}

/// The 3-D 7-point stencil, the 2-D Jacobi sweep and the 5-point stencil.
fn grids(h: &Harness, reps: usize, add: &mut Add) -> Result<()> {
    for (s, [nx, ny, nz]) in CUBE.into_iter().enumerate() {
        let x = reference::floats(nx * ny * nz, 7);
        let want = reference::stencil7(&x, nx, ny, nz);
        let t = h.stencil7("stencil7 3-D", &x, [nx, ny, nz], &want, reps)?;
        let n = x.len();
        add(Row {
            size: format!("{nx}x{ny}x{nz}"),
            elements: n,
            ..linear_row("stencil7 3-D", s, reps, t, Work::Bytes(8.0 * n as f64))
        })?;
    }
    for (name, kernel, twin, margin) in [
        ("jacobi 2-D", kernels::JACOBI, "jacobi", 1),
        ("stencil5 2-D", kernels::STENCIL5, "stencil5", 0),
    ] {
        for (s, w) in SQUARE.into_iter().enumerate() {
            let grid = reference::floats(w * w, 8);
            let want = if margin == 1 {
                reference::jacobi(&grid, w)
            } else {
                reference::stencil5(&grid, w)
            };
            let t = h.grid2d(name, kernel, twin, &grid, w, margin, &want, reps)?;
            add(Row {
                size: format!("{w}x{w}"),
                elements: w * w,
                ..linear_row(name, s, reps, t, Work::Bytes(8.0 * (w * w) as f64))
            })?;
        }
    }
    Ok(())
}

/// The f32 and f64 tiled matrix products, with cuBLAS as the roof.
fn gemms(h: &Harness, reps: usize, add: &mut Add) -> Result<()> {
    for (s, n) in GEMM.into_iter().enumerate() {
        let reps = if is_large(s) {
            reps.min(GEMM_LARGE_REPS)
        } else {
            reps
        };
        let (a, b) = (reference::floats(n * n, 9), reference::floats(n * n, 10));
        let (ours, cuda, roof) = h.gemm(
            "gemm f32",
            &crate::__OFFLOAD_KERNEL_matmul,
            "matmul_f32",
            &a,
            &b,
            n,
            reps,
        )?;
        add(gemm_row(
            "gemm f32",
            "cuBLAS SGEMM",
            s,
            reps,
            (ours, cuda, roof),
        ))?;
        let (a, b): (Vec<f64>, Vec<f64>) = (
            a.iter().map(|v| *v as f64).collect(),
            b.iter().map(|v| *v as f64).collect(),
        );
        let (ours, cuda, roof) = h.gemm(
            "gemm f64",
            kernels::MATMUL_F64,
            "matmul_f64",
            &a,
            &b,
            n,
            reps,
        )?;
        add(gemm_row(
            "gemm f64",
            "cuBLAS DGEMM",
            s,
            reps,
            (ours, cuda, roof),
        ))?;
    }
    Ok(())
}

fn gemm_row(
    kernel: &'static str,
    roof_name: &'static str,
    s: usize,
    reps: usize,
    (offload, cuda, roof): (Timing, Timing, Option<Timing>),
) -> Row {
    let n = GEMM[s];
    Row {
        kernel,
        size: n.to_string(),
        large: is_large(s),
        elements: n * n,
        reps,
        offload,
        cuda,
        work: Work::Flops(2.0 * (n as f64).powi(3)),
        copy: None,
        roof: roof.map(|t| (roof_name, t)),
    }
}

/// The kernels built on the workgroup: the block scan (shared memory and barriers), the
/// histogram (atomics) and the row softmax (workgroup reductions).
fn workgroup_kernels(h: &Harness, reps: usize, add: &mut Add) -> Result<()> {
    for (s, n) in LINEAR.into_iter().enumerate() {
        let x = reference::floats(n, 11);
        let want = reference::block_scan(&x);
        let e = Elementwise {
            kernel: &crate::__OFFLOAD_KERNEL_block_scan,
            twin: "block_scan",
            inputs: vec![&x],
            scalars: vec![],
            want: Want::Close(&want),
        };
        let t = h.elementwise("block scan", &e, n, reps)?;
        add(linear_row(
            "block scan",
            s,
            reps,
            t,
            Work::Bytes(8.0 * n as f64),
        ))?;
    }
    for (s, n) in LINEAR.into_iter().enumerate() {
        let x = reference::words(n, 12);
        let want = reference::histogram(&x);
        let t = h.histogram("histogram 256", &x, &want, reps)?;
        add(linear_row(
            "histogram 256",
            s,
            reps,
            t,
            Work::Bytes(4.0 * n as f64),
        ))?;
    }
    for (s, n) in LINEAR.into_iter().enumerate() {
        let x = reference::floats(n, 13);
        let want = reference::softmax(&x, kernels::SOFTMAX_ROW);
        let e = Elementwise {
            kernel: kernels::SOFTMAX_ROWS,
            twin: "softmax_rows",
            inputs: vec![&x],
            scalars: vec![],
            want: Want::Softmax(&want),
        };
        let t = h.elementwise("softmax rows", &e, n, reps)?;
        add(linear_row(
            "softmax rows",
            s,
            reps,
            t,
            Work::Bytes(8.0 * n as f64),
        ))?;
    }
    // In `bf16`: half the bytes; the reference is the softmax of the rounded inputs.
    for (s, n) in LINEAR.into_iter().enumerate() {
        let x: Vec<u16> = (reference::floats(n, 13).into_iter())
            .map(|v| half::bf16::from_f32(v).to_bits())
            .collect();
        let rounded: Vec<f32> = x
            .iter()
            .map(|b| half::bf16::from_bits(*b).to_f32())
            .collect();
        let want = reference::softmax(&rounded, kernels::SOFTMAX_ROW);
        let e = Elementwise {
            kernel: kernels::SOFTMAX_ROWS_BF16,
            twin: "softmax_rows_bf16",
            inputs: vec![&x],
            scalars: vec![],
            want: Want::Softmax(&want),
        };
        let t = h.elementwise("softmax rows bf16", &e, n, reps)?;
        add(linear_row(
            "softmax rows bf16",
            s,
            reps,
            t,
            Work::Bytes(4.0 * n as f64),
        ))?;
    }
    Ok(())
}
