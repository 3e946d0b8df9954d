//! `offload-bench fuzz [START] [END] [gpu|cpu]`: the differential fuzzer
//! (`tests/fuzz/differential.rs`, which CI runs on the CPU backend) on the first CUDA
//! GPU, or with `cpu` on the CPU backend (a campaign on a machine with many cores):
//! generated and mutated kernels against the MIR interpreter, seeds `START..END`
//! (default `0..2000`). On a GPU, programs with subgroup operations are skipped, since
//! the interpreter's subgroups are one lane wide.

use anyhow::{Result, bail};

#[path = "../../../tests/fuzz/differential.rs"]
mod differential;

pub fn run(mut args: impl Iterator<Item = String>) -> Result<()> {
    let start: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(0);
    let end: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(2000);
    let gpu = match args.next().as_deref() {
        None | Some("gpu") => true,
        Some("cpu") => false,
        Some(other) => bail!("`{other}`: the device is `gpu` (the default) or `cpu`"),
    };
    if gpu
        && !offload::devices()
            .iter()
            .any(|d| matches!(d, offload::Device::Cuda { .. }))
    {
        bail!("no CUDA device");
    }
    let t = std::time::Instant::now();
    let (tally, failures) = differential::run(start..end, gpu);
    println!(
        "fuzz on the {}, seeds {start}..{end}: {tally:?} in {:.1} s",
        if gpu { "GPU" } else { "CPU backend" },
        t.elapsed().as_secs_f64()
    );
    for f in &failures {
        println!("{f}");
    }
    println!("launches: {}", offload::__private::launches());
    if !failures.is_empty() {
        bail!("{} programs failed", failures.len());
    }
    Ok(())
}
