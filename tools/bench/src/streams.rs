//! `offload-bench streams [PATH/TO/streams_cuda] [REPS]`: what streams, asynchronous
//! copies and graphs buy, ours next to `cuda/streams.cu` (the same work written with the
//! CUDA runtime), whose figures it reads from the program's output. Each figure is the
//! median of REPS repetitions (steps: ten times as many) after warm-ups, timed with the
//! host clock around the whole repetition and its final synchronisation:
//!
//! - pipeline: 2 GiB of `f32` in page-locked host memory, in 8 chunks of 2^26: each
//!   copied in, scaled (`2x + 1`) and copied out, on one stream (serial) and with chunk
//!   `c` on stream `c % 2` (overlapped);
//! - step: 100 launches of `y = 0.5 x + y` over 2^20 floats on one stream, then a
//!   synchronisation; and the same 100 recorded once as a graph and replayed;
//! - busy: two kernels that each fill half the GPU's multiprocessors with dependent
//!   multiply-adds, one after the other on one stream, and on two streams.

use crate::launch::{cuda_figures, median_us};
use anyhow::{Result, bail};
use offload::prelude::*;
use offload::{Graph, PinnedVec};
use std::collections::BTreeMap;

/// `x = 2x + 1`.
#[offload_kernel]
fn scale(mut x: Region<f32, Linear1D>) {
    if let Some(v) = x.get_mut() {
        *v = *v * 2.0 + 1.0;
    }
}

/// `iters` dependent multiply-adds per thread from `thread_idx * 1e-3`.
#[offload_kernel]
fn spin(mut out: Region<f32, Linear1D>, iters: u32) {
    let mut v = thread_idx(0) as f32 * 1e-3;
    let mut k = 0;
    while k < iters {
        v = v.mul_add(0.999999, 0.5);
        k += 1;
    }
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

pub fn run(mut args: impl Iterator<Item = String>) -> Result<()> {
    let cuda = args.next();
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(10);
    let device = offload::default_device()?;
    if !matches!(device, offload::Device::Cuda { .. }) {
        bail!("no CUDA device");
    }
    let mut ours = BTreeMap::new();
    let (serial, overlapped) = pipeline(&device, reps)?;
    ours.insert("pipeline_serial_ms", serial);
    ours.insert("pipeline_ms", overlapped);
    let (launches, graph) = step(&device, reps * 10)?;
    ours.insert("step_launches_us", launches);
    ours.insert("step_graph_us", graph);
    let (one, two) = busy(&device, reps)?;
    ours.insert("busy_one_ms", one);
    ours.insert("busy_two_ms", two);
    let theirs = match cuda {
        Some(path) => cuda_figures(&path, reps)?,
        None => BTreeMap::new(),
    };
    println!(
        "{:<22} {:>12} {:>12} {:>8}",
        "figure", "offload", "CUDA C++", "ratio"
    );
    for (name, value) in &ours {
        match theirs.get(*name) {
            Some(c) => println!("{name:<22} {value:>12.3} {c:>12.3} {:>8.3}", value / c),
            None => println!("{name:<22} {value:>12.3} {:>12} {:>8}", "-", "-"),
        }
    }
    println!(
        "pipeline: two streams {:.2}x faster than one",
        serial / overlapped
    );
    if let (Some(s), Some(o)) = (theirs.get("pipeline_serial_ms"), theirs.get("pipeline_ms")) {
        println!(
            "pipeline in CUDA C++: two streams {:.2}x faster than one",
            s / o
        );
    }
    println!(
        "busy kernels: two streams {:.2}x faster than one",
        one / two
    );
    if let Some(cuda_launches) = theirs.get("step_launches_us") {
        println!(
            "step: our graph replay takes {:.3}x the time of CUDA's 100 <<<>>> launches",
            graph / cuda_launches
        );
    }
    Ok(())
}

/// Median milliseconds of the 2 GiB pipeline on one stream and on two.
fn pipeline(device: &offload::Device, reps: usize) -> Result<(f64, f64)> {
    let (n, chunks) = (1usize << 29, 8usize);
    let mut input = PinnedVec::<f32>::zeros(device, n)?;
    for (i, v) in input.as_mut_slice()?.iter_mut().enumerate() {
        *v = (i % 1000) as f32 * 0.25;
    }
    let mut output = PinnedVec::<f32>::zeros(device, n)?;
    let mut work = DeviceBuffer::<f32>::zeros(device, n)?;
    let streams = [device.stream()?, device.stream()?];
    let per = n / chunks;
    let mut run = |lanes: usize| -> Result<f64> {
        let t = median_us(reps, || {
            for c in 0..chunks {
                let (s, range) = (&streams[c % lanes], c * per..(c + 1) * per);
                let mut window = work.slice_mut(range.clone())?;
                window.copy_from_slice_async(s, input.slice(range.clone())?)?;
                try_offload! { kernel = scale, args = (&mut window), stream = s }?;
                window.copy_to_async(s, &mut output.slice_mut(range)?)?;
            }
            for s in &streams[..lanes] {
                s.synchronize()?;
            }
            Ok(())
        })?;
        Ok(t / 1e3)
    };
    let serial = run(1)?;
    let overlapped = run(2)?;
    let out = output.as_slice()?;
    for i in (0..n).step_by(4097).chain([n - 1]) {
        let want = ((i % 1000) as f32 * 0.25) * 2.0 + 1.0;
        if out[i] != want {
            bail!("pipeline: element {i} is {}, not {want}", out[i]);
        }
    }
    Ok((serial, overlapped))
}

/// Median microseconds of 100 launches on a stream, and of their graph's replay.
fn step(device: &offload::Device, reps: usize) -> Result<(f64, f64)> {
    let n = 1usize << 20;
    let x = DeviceBuffer::from_slice(device, &vec![1.0f32; n])?;
    let mut y = DeviceBuffer::<f32>::zeros(device, n)?;
    let s = device.stream()?;
    let mut launches = || -> Result<()> {
        for _ in 0..100 {
            try_offload! { kernel = crate::saxpy, args = (&mut y, &x, 0.5f32), stream = &s }?;
        }
        s.synchronize()?;
        Ok(())
    };
    let one_by_one = median_us(reps, &mut launches)?;
    let graph = Graph::record(&s, |s| {
        for _ in 0..100 {
            try_offload! { kernel = crate::saxpy, args = (&mut y, &x, 0.5f32), stream = s }?;
        }
        Ok(())
    })?;
    let replayed = median_us(reps, || {
        graph.launch(&s)?;
        s.synchronize()?;
        Ok(())
    })?;
    // 3 warm-ups and `reps` timed runs of each, 100 launches of 0.5 each.
    let want = 0.5 * 100.0 * 2.0 * (reps + 3) as f32;
    let got = y.to_vec()?;
    if got[0] != want || got[n - 1] != want {
        bail!("step: y is {} and {}, not {want}", got[0], got[n - 1]);
    }
    Ok((one_by_one, replayed))
}

/// Median milliseconds of two half-GPU kernels on one stream, and on two.
fn busy(device: &offload::Device, reps: usize) -> Result<(f64, f64)> {
    let offload::Device::Cuda { ordinal, .. } = device else {
        bail!("no CUDA device");
    };
    let sms = cudarc::driver::CudaContext::new(*ordinal)?.attribute(
        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )? as u32;
    let len = (sms / 2) as usize * 1024;
    let iters = 1u32 << 18;
    let mut a = DeviceBuffer::<f32>::zeros(device, len)?;
    let mut b = DeviceBuffer::<f32>::zeros(device, len)?;
    let (s1, s2) = (device.stream()?, device.stream()?);
    let mut run = |two: bool| -> Result<f64> {
        let second = if two { &s2 } else { &s1 };
        let t = median_us(reps, || {
            try_offload! { kernel = spin, args = (&mut a, iters), thread_dim = [1024, 1, 1], stream = &s1 }?;
            try_offload! { kernel = spin, args = (&mut b, iters), thread_dim = [1024, 1, 1], stream = second }?;
            s1.synchronize()?;
            s2.synchronize()?;
            Ok(())
        })?;
        Ok(t / 1e3)
    };
    let one = run(false)?;
    let two = run(true)?;
    if a.to_vec()? != b.to_vec()? {
        bail!("busy: the two kernels' results differ");
    }
    Ok((one, two))
}
