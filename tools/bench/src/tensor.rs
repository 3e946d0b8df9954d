//! `offload-bench tensor-gemm [REPS] [N...]`: the `bf16` product of
//! `examples/gemm_bf16.rs` (tensor cores through `tile_mma`, `f32` sums) next to cuBLAS's
//! `cublasGemmEx` on the same problem (`bf16` in, `f32` out, `CUBLAS_COMPUTE_32F`), at
//! `N × N × N` (4096 and 8192 by default), in one process: each side's median of REPS
//! runs, each run timed from its launch to the end of a synchronisation, after a checked
//! first run. Inputs are quarters from -2 to 2, so both results must equal the host's
//! exactly; 64 sampled elements are compared.

use crate::examples::gemm_bf16;
use anyhow::{Context, Result, ensure};
use cudarc::cublas::{CudaBlas, result::gemm_ex, sys};
use cudarc::driver::{CudaContext, DevicePtr, DevicePtrMut};
use offload::{DeviceBuffer, bf16};
use std::time::Instant;

pub fn run(mut args: impl Iterator<Item = String>) -> Result<()> {
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let sizes: Vec<usize> = args.map(|s| s.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() {
        vec![4096, 8192]
    } else {
        sizes
    };
    let device = offload::default_device()?;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone()).context("starting cuBLAS")?;
    println!(
        "tensor-gemm on {device}: bf16 x bf16 -> f32, median of {reps} runs each, TFLOP/s = 2 n^3 / time"
    );
    println!(
        "{:>6} {:>10} {:>9} {:>10} {:>9} {:>12}",
        "n", "offload ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ours/cuBLAS"
    );
    for n in sizes {
        let quarter = |i: usize| ((i * 37 + 11) % 17) as f32 / 4.0 - 2.0;
        let a: Vec<bf16> = (0..n * n).map(|i| bf16::from_f32(quarter(i))).collect();
        let b: Vec<bf16> = (0..n * n).map(|i| bf16::from_f32(quarter(i + 5))).collect();
        let samples: Vec<(usize, usize)> = (0..64u64)
            .map(|s| {
                let row = (s.wrapping_mul(2654435761) % n as u64) as usize;
                (row, (s.wrapping_mul(40503) % n as u64) as usize)
            })
            .collect();
        let check = |who: &str, c: &[f32]| -> Result<()> {
            let wrong = samples
                .iter()
                .filter(|&&(i, j)| {
                    let want: f32 = (0..n)
                        .map(|d| a[i * n + d].to_f32() * b[d * n + j].to_f32())
                        .sum();
                    c[i * n + j] != want
                })
                .count();
            ensure!(
                wrong == 0,
                "{who}: {wrong} of 64 sampled elements differ from the host at n = {n}"
            );
            Ok(())
        };

        let (da, db) = (
            DeviceBuffer::from_slice(&device, &a)?,
            DeviceBuffer::from_slice(&device, &b)?,
        );
        let mut dc = DeviceBuffer::<f32>::zeros(&device, n * n)?;
        gemm_bf16::gemm(&mut dc, &da, &db, n, n)?;
        check("offload", &dc.to_vec()?)?;
        let ours = median_ms(reps, || {
            gemm_bf16::gemm(&mut dc, &da, &db, n, n)?;
            Ok(offload::synchronize()?)
        })?;

        // cudarc here has no `bf16` element type: the same bits travel as `u16`.
        let bits = |x: &[bf16]| x.iter().map(|v| v.to_bits()).collect::<Vec<u16>>();
        let (ca, cb) = (stream.clone_htod(&bits(&a))?, stream.clone_htod(&bits(&b))?);
        let mut cc = stream.alloc_zeros::<f32>(n * n)?;
        let dim = i32::try_from(n)?;
        let (one, zero) = (1.0f32, 0.0f32);
        let product = |cc: &mut cudarc::driver::CudaSlice<f32>| -> Result<()> {
            let (pa, _ga) = ca.device_ptr(&stream);
            let (pb, _gb) = cb.device_ptr(&stream);
            let (pc, _gc) = cc.device_ptr_mut(&stream);
            // cuBLAS is column-major: row-major c = a b is column-major c^T = b^T a^T,
            // so it multiplies b by a, each as stored.
            // SAFETY: each buffer holds n * n elements of the type named beside it, and
            // the scalars are `f32`, as `CUBLAS_COMPUTE_32F` reads them.
            unsafe {
                gemm_ex(
                    *blas.handle(),
                    sys::cublasOperation_t::CUBLAS_OP_N,
                    sys::cublasOperation_t::CUBLAS_OP_N,
                    dim,
                    dim,
                    dim,
                    (&one as *const f32).cast(),
                    pb as *const _,
                    sys::cudaDataType::CUDA_R_16BF,
                    dim,
                    pa as *const _,
                    sys::cudaDataType::CUDA_R_16BF,
                    dim,
                    (&zero as *const f32).cast(),
                    pc as *mut _,
                    sys::cudaDataType::CUDA_R_32F,
                    dim,
                    sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }?;
            Ok(())
        };
        product(&mut cc)?;
        stream.synchronize()?;
        check("cuBLAS", &stream.clone_dtoh(&cc)?)?;
        let theirs = median_ms(reps, || {
            product(&mut cc)?;
            Ok(stream.synchronize()?)
        })?;
        let tflops = |ms: f64| 2.0 * (n as f64).powi(3) / ms / 1e9;
        println!(
            "{n:>6} {ours:>10.3} {:>9.1} {theirs:>10.3} {:>9.1} {:>12.3}",
            tflops(ours),
            tflops(theirs),
            tflops(ours) / tflops(theirs)
        );
    }
    Ok(())
}

/// The median time of `reps` runs of `run`, after one unmeasured run.
fn median_ms(reps: usize, mut run: impl FnMut() -> Result<()>) -> Result<f64> {
    run()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        run()?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
