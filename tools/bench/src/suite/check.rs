//! `offload-bench suite-check`: each of our suite kernels at a small size, launched the
//! ordinary way (`try_offload!`) on the default device, against the host references the
//! GPU suite uses. Without a GPU that is the CPU backend, so this is how the suite's
//! kernels are checked on machines that cannot run the suite itself. Sizes include ones
//! that leave the last workgroup partly empty, and grids that are not square, which the
//! suite's own sizes never do.

use super::{kernels, reference};
use anyhow::Result;
use offload::prelude::*;

/// Ends with the plain `N passed, M failed` line; an error if any case failed.
pub(crate) fn check() -> Result<()> {
    println!("suite-check on {}", offload::default_device()?);
    let (mut passed, mut failed) = (0, 0);
    let mut case = |name: String, result: Result<()>| match result {
        Ok(()) => {
            passed += 1;
            println!("suite-check {name} ... ok");
        }
        Err(e) => {
            failed += 1;
            println!("suite-check {name} ... FAILED: {e:#}");
        }
    };
    for n in [4096, 4133] {
        case(format!("copy n={n}"), copy(n));
        case(format!("scale n={n}"), scale(n));
        case(format!("add n={n}"), add(n));
        case(format!("triad n={n}"), triad(n));
        case(format!("dot n={n}"), dot(n));
        case(format!("sum n={n}"), sum(n));
        case(format!("fir16 n={n}"), fir(n, false));
        case(format!("fir16 const taps n={n}"), fir(n, true));
        case(format!("block scan n={n}"), block_scan(n));
        case(format!("histogram 256 n={n}"), histogram(n));
        case(format!("saxpy bf16 n={n}"), bfloat_saxpy(n));
    }
    case("softmax rows n=4096".into(), softmax(4096));
    case("softmax rows bf16 n=4096".into(), softmax_bf16(4096));
    case("stencil7 3-D 16x12x10".into(), stencil7([16, 12, 10]));
    case("jacobi 2-D 64x48".into(), jacobi(64, 48));
    case("stencil5 2-D 64x48".into(), stencil5(64, 48));
    for n in [64, 50] {
        case(format!("gemm f32 n={n}"), gemm_f32(n));
        case(format!("gemm f64 n={n}"), gemm_f64(n));
    }
    println!("{passed} passed, {failed} failed");
    anyhow::ensure!(failed == 0, "{failed} suite kernels differ from the host");
    Ok(())
}

fn copy(n: usize) -> Result<()> {
    let a = reference::floats(n, 1);
    let mut c = vec![0.0f32; n];
    try_offload! { kernel = kernels::stream_copy, args = (&mut c, &a) }?;
    reference::close("copy", &c, &a)
}

fn scale(n: usize) -> Result<()> {
    let c = reference::floats(n, 1);
    let mut b = vec![0.0f32; n];
    try_offload! { kernel = kernels::stream_scale, args = (&mut b, &c, 1.5f32) }?;
    let want: Vec<f32> = c.iter().map(|v| 1.5 * v).collect();
    reference::close("scale", &b, &want)
}

fn add(n: usize) -> Result<()> {
    let (a, b) = (reference::floats(n, 1), reference::floats(n, 2));
    let mut c = vec![0.0f32; n];
    try_offload! { kernel = kernels::stream_add, args = (&mut c, &a, &b) }?;
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    reference::close("add", &c, &want)
}

fn triad(n: usize) -> Result<()> {
    let (b, c) = (reference::floats(n, 1), reference::floats(n, 2));
    let mut a = vec![0.0f32; n];
    try_offload! { kernel = kernels::stream_triad, args = (&mut a, &b, &c, 1.5f32) }?;
    let want: Vec<f32> = b.iter().zip(&c).map(|(x, y)| x + 1.5 * y).collect();
    reference::close("triad", &a, &want)
}

/// Workgroups of the reductions here: few, so each thread's grid-stride loop runs
/// several times and the last round is partial.
const REDUCTION_GROUPS: u32 = 5;

fn dot(n: usize) -> Result<()> {
    let (x, y) = (reference::floats(n, 3), reference::floats(n, 4));
    let stride = REDUCTION_GROUPS as usize * 256;
    let mut total = vec![0.0f32];
    try_offload! {
        kernel = kernels::dot,
        args = (&mut total, &x, &y, stride),
        workgroup_dim = [REDUCTION_GROUPS, 1, 1],
        thread_dim = [256, 1, 1]
    }?;
    reference::reduction("dot", total[0], reference::dot(&x, &y))
}

fn sum(n: usize) -> Result<()> {
    let x = reference::floats(n, 5);
    let stride = REDUCTION_GROUPS as usize * 256;
    let mut total = vec![0.0f32];
    try_offload! {
        kernel = kernels::sum,
        args = (&mut total, &x, stride),
        workgroup_dim = [REDUCTION_GROUPS, 1, 1],
        thread_dim = [256, 1, 1]
    }?;
    reference::reduction("sum", total[0], reference::sum(&x))
}

fn fir(n: usize, constant: bool) -> Result<()> {
    let x = reference::floats(n + 15, 6);
    let mut y = vec![0.0f32; n];
    if constant {
        try_offload! { kernel = crate::fir16_const, args = (&mut y, &x) }?;
    } else {
        try_offload! { kernel = crate::fir16, args = (&mut y, &x, &crate::FIR_TAPS) }?;
    }
    reference::close("fir16", &y, &reference::fir(&x, n))
}

fn block_scan(n: usize) -> Result<()> {
    let x = reference::floats(n, 11);
    let mut y = vec![0.0f32; n];
    try_offload! { kernel = crate::block_scan, args = (&mut y, &x) }?;
    reference::close("block scan", &y, &reference::block_scan(&x))
}

fn histogram(n: usize) -> Result<()> {
    let x = reference::words(n, 12);
    let mut bins = vec![0u32; 256];
    try_offload! {
        kernel = kernels::histogram256,
        args = (&mut bins, &x),
        workgroup_dim = [(n as u32).div_ceil(256), 1, 1],
        thread_dim = [256, 1, 1]
    }?;
    reference::equal("histogram", &bins, &reference::histogram(&x))
}

fn bfloat_saxpy(n: usize) -> Result<()> {
    let x: Vec<bf16> = reference::floats(n, 1)
        .into_iter()
        .map(bf16::from_f32)
        .collect();
    let y0: Vec<bf16> = reference::floats(n, 2)
        .into_iter()
        .map(bf16::from_f32)
        .collect();
    let a = bf16::from_f32(1.5);
    let mut y = y0.clone();
    try_offload! { kernel = kernels::bfloat_saxpy, args = (&mut y, &x, a) }?;
    let want: Vec<bf16> = x.iter().zip(&y0).map(|(x, y)| a * *x + *y).collect();
    anyhow::ensure!(y == want, "saxpy bf16: differs from the host's rounding");
    Ok(())
}

fn softmax_bf16(n: usize) -> Result<()> {
    let x: Vec<bf16> = reference::floats(n, 13)
        .into_iter()
        .map(bf16::from_f32)
        .collect();
    let mut y = vec![bf16::ZERO; n];
    try_offload! {
        kernel = kernels::softmax_rows_bf16,
        args = (&mut y, &x),
        thread_dim = [kernels::SOFTMAX_ROW as u32, 1, 1]
    }?;
    let rounded: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
    let got: Vec<f32> = y.iter().map(|v| v.to_f32()).collect();
    let want = reference::softmax(&rounded, kernels::SOFTMAX_ROW);
    reference::softmax_close_bf16("softmax bf16", &got, &want)
}

fn softmax(n: usize) -> Result<()> {
    let x = reference::floats(n, 13);
    let mut y = vec![0.0f32; n];
    try_offload! {
        kernel = kernels::softmax_rows,
        args = (&mut y, &x),
        thread_dim = [kernels::SOFTMAX_ROW as u32, 1, 1]
    }?;
    reference::softmax_close("softmax", &y, &reference::softmax(&x, kernels::SOFTMAX_ROW))
}

fn stencil7([nx, ny, nz]: [usize; 3]) -> Result<()> {
    let x = reference::floats(nx * ny * nz, 7);
    let mut y = vec![0.0f32; x.len()];
    try_offload! {
        kernel = kernels::stencil7,
        args = (Region::new_3d(&mut y, nx, ny).interior(1), &x)
    }?;
    reference::close("stencil7", &y, &reference::stencil7(&x, nx, ny, nz))
}

fn jacobi(w: usize, h: usize) -> Result<()> {
    let grid = reference::floats(w * h, 8);
    let mut next = vec![0.0f32; grid.len()];
    try_offload! {
        kernel = kernels::jacobi,
        args = (Region::new_2d(&mut next, w).interior(1), Region::stencil(&grid, w).interior(1))
    }?;
    reference::close("jacobi", &next, &reference::jacobi(&grid, w))
}

fn stencil5(w: usize, h: usize) -> Result<()> {
    let grid = reference::floats(w * h, 8);
    let mut next = vec![0.0f32; grid.len()];
    try_offload! {
        kernel = kernels::stencil5,
        args = (Region::new_2d(&mut next, w), Region::stencil(&grid, w))
    }?;
    reference::close("stencil5", &next, &reference::stencil5(&grid, w))
}

fn gemm_f32(n: usize) -> Result<()> {
    let (a, b) = (reference::floats(n * n, 9), reference::floats(n * n, 10));
    let mut c = vec![0.0f32; n * n];
    try_offload! { kernel = crate::matmul, args = (Region::new_2d(&mut c, n), &a, &b, n) }?;
    reference::gemm("gemm f32", &a, &b, &c, n)
}

fn gemm_f64(n: usize) -> Result<()> {
    let a: Vec<f64> = reference::floats(n * n, 9)
        .iter()
        .map(|v| *v as f64)
        .collect();
    let b: Vec<f64> = reference::floats(n * n, 10)
        .iter()
        .map(|v| *v as f64)
        .collect();
    let mut c = vec![0.0f64; n * n];
    try_offload! { kernel = kernels::matmul_f64, args = (Region::new_2d(&mut c, n), &a, &b, n) }?;
    reference::gemm("gemm f64", &a, &b, &c, n)
}
