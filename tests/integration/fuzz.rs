//! The differential fuzzer (`tests/fuzz/differential.rs`) on the CPU backend: CI's fixed
//! slice of seeds, or `OFFLOAD_FUZZ_SEEDS=START..END` (see `tools/fuzz/long-run`, which
//! runs ranges in separate processes so that a signal or a hang is caught and its seed
//! named).

#[path = "../fuzz/differential.rs"]
mod differential;

/// The seeds to run: `OFFLOAD_FUZZ_SEEDS=START..END`, or CI's fixed slice.
fn seeds() -> std::ops::Range<u64> {
    let Ok(range) = std::env::var("OFFLOAD_FUZZ_SEEDS") else {
        return 0..300;
    };
    let (start, end) = range
        .split_once("..")
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or_else(|| panic!("OFFLOAD_FUZZ_SEEDS must be START..END, got {range:?}"));
    start..end
}

#[test]
fn generated_kernels_agree_with_the_interpreter() {
    let (tally, failures) = differential::run(seeds(), false);
    // One line a tool can read back: how many programs ended in each class.
    println!("fuzz: {tally:?}");
    assert!(
        failures.is_empty(),
        "{} of the programs failed:\n{}\n(replay one with OFFLOAD_FUZZ_SEEDS=N..N+1, and OFFLOAD_FUZZ_PRINT=1 to print it)",
        failures.len(),
        failures.join("\n")
    );
}
