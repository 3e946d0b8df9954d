//! The suite's table on stdout and its figures in `suite.json`.
//!
//! The table is printed a row at a time, as each benchmark finishes, so that a run cut
//! short still shows what it measured. The JSON holds the raw figures (both sides'
//! median and minimum, the reps, the bytes or flops, the copy and the roof), from which
//! every derived number of the table can be recomputed.

use super::{Row, Timing, Work};
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::path::Path;

/// Prints the table's header.
pub(super) fn header() {
    println!(
        "{:<18} {:>12} {:>11} {:>11} {:>7} {:>18} {:>18}  copy or roof",
        "kernel", "size", "offload ms", "CUDA ms", "ratio", "offload rate", "CUDA rate"
    );
}

/// Prints one row: both medians, their ratio, both rates, and the copy's bandwidth or
/// the roof's time.
pub(super) fn print_row(row: &Row) {
    let rate = |t: Timing| format!("{:.1} {}", row.rate(t), row.unit());
    let extra = match (row.copy, row.roof) {
        (Some(copy), _) => format!("d2d copy {:.1} GB/s", row.rate(copy)),
        (None, Some((name, roof))) => format!(
            "{name} {:.4} ms, {} (offload/roof {:.2})",
            roof.median_ms,
            rate(roof),
            row.offload.median_ms / roof.median_ms
        ),
        (None, None) => String::new(),
    };
    println!(
        "{:<18} {:>12} {:>11.4} {:>11.4} {:>7.3} {:>18} {:>18}  {extra}",
        row.kernel,
        row.size,
        row.offload.median_ms,
        row.cuda.median_ms,
        row.ratio(),
        rate(row.offload),
        rate(row.cuda),
    );
}

fn timing(t: Timing) -> Value {
    json!({ "median_ms": t.median_ms, "min_ms": t.min_ms })
}

/// Writes every row's figures to `path`.
pub(super) fn write_json(path: &Path, device: &str, rows: &[Row]) -> Result<()> {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let (bytes, flops) = match r.work {
                Work::Bytes(b) => (Some(b), None),
                Work::Flops(f) => (None, Some(f)),
            };
            json!({
                "kernel": r.kernel,
                "size": r.size,
                "large": r.large,
                "elements": r.elements,
                "reps": r.reps,
                "offload": timing(r.offload),
                "cuda": timing(r.cuda),
                "ratio": r.ratio(),
                "bytes": bytes,
                "flops": flops,
                "unit": r.unit(),
                "offload_rate": r.rate(r.offload),
                "cuda_rate": r.rate(r.cuda),
                "copy": r.copy.map(timing),
                "roof": r.roof.map(|(name, t)| json!({
                    "name": name,
                    "median_ms": t.median_ms,
                    "min_ms": t.min_ms,
                })),
            })
        })
        .collect();
    let doc = json!({
        "device": device,
        "timing": "CUDA events around each launch on device-resident data; median and minimum \
                   of `reps` launches after 3 warm-ups; accumulating outputs zeroed inside the \
                   timed region on both sides",
        "rows": rows,
    });
    std::fs::write(path, serde_json::to_string_pretty(&doc)? + "\n")
        .with_context(|| format!("writing {}", path.display()))
}
