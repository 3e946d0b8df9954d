//! A chunked pipeline: host data in page-locked memory is copied in, transformed and
//! copied back chunk by chunk, first on one stream and then with alternate chunks on two,
//! so that one chunk's copies overlap another's kernel. Prints both timings (host clock,
//! and the device time between two events) and checks the result against the host.
//! `cargo run --release --example pipeline [N] [CHUNKS]`.

use offload::PinnedVec;
use offload::prelude::*;
use std::time::Instant;

/// `x = 2x + 1`.
#[offload_kernel]
fn scale(mut x: Region<f32, Linear1D>) {
    if let Some(v) = x.get_mut() {
        *v = (*v).mul_add(2.0, 1.0);
    }
}

/// Runs the pipeline with chunk `c` on `streams[c % streams.len()]`, and returns the
/// host time and the device time from the first stream's start to its end.
fn pipeline(
    streams: &[Stream],
    input: &PinnedVec<f32>,
    output: &mut PinnedVec<f32>,
    work: &mut DeviceBuffer<f32>,
    chunks: usize,
) -> Result<(f64, f64), Error> {
    let per = input.len() / chunks;
    let started = Instant::now();
    let first = streams[0].record()?;
    for c in 0..chunks {
        let s = &streams[c % streams.len()];
        let range = c * per..if c + 1 == chunks {
            input.len()
        } else {
            (c + 1) * per
        };
        let mut window = work.slice_mut(range.clone())?;
        window.copy_from_slice_async(s, input.slice(range.clone())?)?;
        try_offload! { kernel = scale, args = (&mut window), stream = s }?;
        window.copy_to_async(s, &mut output.slice_mut(range)?)?;
    }
    // The first stream waits for the others, so that its last event ends the whole run.
    for s in &streams[1..] {
        streams[0].wait(&s.record()?)?;
    }
    let last = streams[0].record()?;
    streams[0].synchronize()?;
    for s in &streams[1..] {
        s.synchronize()?;
    }
    let host = started.elapsed().as_secs_f64() * 1e3;
    Ok((host, last.duration_since(&first)?.as_secs_f64() * 1e3))
}

pub fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1).map(|s| s.parse::<usize>().ok());
    let n = args.next().flatten().unwrap_or(1 << 26);
    let chunks = args.next().flatten().unwrap_or(8).clamp(1, n.max(1));
    let device = offload::default_device()?;
    println!("device: {device}");
    let data: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
    let input = PinnedVec::from_slice(&device, &data)?;
    let mut output = PinnedVec::<f32>::zeros(&device, n)?;
    let mut work = DeviceBuffer::<f32>::zeros(&device, n)?;
    let streams = [device.stream()?, device.stream()?];
    let mb = (2 * n * size_of::<f32>()) as f64 / 1e6;
    let mut times = Vec::new();
    for lanes in [1, 2] {
        // Named in a profiler's timeline (Nsight Systems: `--trace=cuda,nvtx`).
        let _range = offload::range(if lanes == 1 {
            "one stream"
        } else {
            "two streams"
        });
        // One untimed run first: the kernel's compilation and the first touch of memory.
        pipeline(&streams[..lanes], &input, &mut output, &mut work, chunks)?;
        let (host, device_ms) =
            pipeline(&streams[..lanes], &input, &mut output, &mut work, chunks)?;
        println!(
            "{lanes} stream{}: {host:.2} ms ({device_ms:.2} ms on the device), {:.1} GB/s of copies",
            if lanes == 1 { " " } else { "s" },
            mb / host
        );
        times.push(host);
    }
    println!("two streams: {:.2}x the speed of one", times[0] / times[1]);
    let result = output.as_slice()?;
    let wrong = (0..n)
        .filter(|&i| result[i] != data[i].mul_add(2.0, 1.0))
        .count();
    if wrong == 0 {
        println!("ok: {n} elements in {chunks} chunks match the host");
        Ok(())
    } else {
        eprintln!("FAILED: {wrong} elements differ from the host's");
        std::process::exit(1);
    }
}
