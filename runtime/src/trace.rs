//! `OFFLOAD_TRACE=summary`: per kernel, how many launches ran and how much device time
//! they took, printed to standard error when the program exits.
//!
//! A GPU launch is timed by two events around it on its queue, resolved into the totals
//! at the next synchronisation that finds them passed (and at exit); a CPU launch by the
//! host clock, since it runs on the calling thread. Off (the default), a launch pays one
//! load of a flag.

use crate::Error;
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

/// A launch's device time, once its end has passed.
pub(crate) trait Timing: Send {
    /// Seconds from start to end, or `None` while the end has not passed (`wait`: waits
    /// for it instead).
    fn seconds(&self, wait: bool) -> Result<Option<f64>, Error>;
}

/// Launches and seconds per kernel.
static TOTALS: Mutex<BTreeMap<String, (u64, f64)>> = Mutex::new(BTreeMap::new());
/// Launches whose time is not known yet.
type Open = Vec<(&'static str, Box<dyn Timing>)>;
static OPEN: Mutex<Open> = Mutex::new(Vec::new());

/// Whether `OFFLOAD_TRACE=summary` is set (read once; the summary is printed at exit).
pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let on = std::env::var("OFFLOAD_TRACE").is_ok_and(|v| v.trim() == "summary");
        if on {
            unsafe extern "C" {
                fn atexit(f: extern "C" fn()) -> i32;
            }
            // SAFETY: `print_summary` is a plain function that lives for the process.
            if unsafe { atexit(print_summary) } != 0 {
                tracing::warn!("OFFLOAD_TRACE=summary: could not register the summary");
            }
        }
        on
    })
}

/// A launch of `kernel` that took `seconds`.
pub(crate) fn launched(kernel: &str, seconds: f64) {
    let mut totals = lock(&TOTALS);
    let entry = totals.entry(kernel.to_string()).or_default();
    entry.0 += 1;
    entry.1 += seconds;
}

/// A launch of `kernel` whose time `timing` will tell.
pub(crate) fn pending(kernel: &'static str, timing: Box<dyn Timing>) {
    lock(&OPEN).push((kernel, timing));
}

/// Moves the launches whose end has passed (all of them if `wait`) into the totals.
pub(crate) fn resolve(wait: bool) {
    if enabled() {
        resolve_open(wait);
    }
}

fn resolve_open(wait: bool) {
    let open = std::mem::take(&mut *lock(&OPEN));
    let mut still = Vec::new();
    for (kernel, timing) in open {
        match timing.seconds(wait) {
            Ok(Some(seconds)) => launched(kernel, seconds),
            Ok(None) => still.push((kernel, timing)),
            Err(e) => tracing::debug!("OFFLOAD_TRACE: a launch of `{kernel}` was not timed: {e}"),
        }
    }
    lock(&OPEN).extend(still);
}

/// The summary's table: kernels by total time, longest first.
fn summary() -> String {
    let totals = lock(&TOTALS);
    let mut rows: Vec<_> = totals.iter().collect();
    rows.sort_by(|a, b| b.1.1.total_cmp(&a.1.1).then(a.0.cmp(b.0)));
    let mut out = format!(
        "offload: device time per kernel (OFFLOAD_TRACE=summary)\n{:<40} {:>10} {:>14} {:>12}\n",
        "kernel", "launches", "total ms", "mean us"
    );
    for (kernel, &(launches, seconds)) in rows {
        out += &format!(
            "{kernel:<40} {launches:>10} {:>14.3} {:>12.3}\n",
            seconds * 1e3,
            seconds * 1e6 / launches.max(1) as f64
        );
    }
    out
}

extern "C" fn print_summary() {
    resolve(true);
    eprint!("{}", summary());
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launch that ends once the test waits for it.
    struct Running;

    impl Timing for Running {
        fn seconds(&self, wait: bool) -> Result<Option<f64>, Error> {
            Ok(wait.then_some(0.5))
        }
    }

    fn row(kernel: &str) -> Option<Vec<String>> {
        let table = summary();
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("{kernel} ")))?;
        Some(line.split_whitespace().map(String::from).collect())
    }

    #[test]
    fn the_summary_totals_each_kernels_launches() {
        launched("trace_test_fast", 0.001);
        launched("trace_test_fast", 0.003);
        assert_eq!(
            row("trace_test_fast").unwrap(),
            ["trace_test_fast", "2", "4.000", "2000.000"]
        );
        // A launch still running counts once its end has passed.
        pending("trace_test_running", Box::new(Running));
        resolve_open(false);
        assert_eq!(row("trace_test_running"), None);
        resolve_open(true);
        assert_eq!(
            row("trace_test_running").unwrap(),
            ["trace_test_running", "1", "500.000", "500000.000"]
        );
    }
}
