//! File tests.
//!
//! - `tests/filetests/link/*.mir`: each file is linked (every kernel with the file's
//!   device functions) and lowered to the CPU stage. A file states what linking must
//!   report in `// error: ` lines right after its header, one per line of the error, in
//!   order; a file without them must link and lower.
//! - `tests/filetests/passes/*.mlir`: each file names a pipeline in its first line
//!   (`// pipeline: builtin.module(convert-offload-to-gpu)`), usually one offload pass, and
//!   is run through it as `offload-opt FILE --pass-pipeline=...` would. What the output
//!   must hold is in the file's `// CHECK:`, `// CHECK-NEXT:` and `// CHECK-NOT:` lines,
//!   as LLVM's `FileCheck` reads them (literal texts): the lines the pass is responsible
//!   for, so that an MLIR upgrade that prints the rest differently changes no test. A file
//!   without them is compared whole with `NAME.out`: the error tests, whose output is
//!   `error: ` and the diagnostics.
//!
//! After an intended change, rerun with `OFFLOAD_BLESS=1` to rewrite the expectations,
//! and review the diff.

use offload_lowering::{GpuTarget, Session, Stage, emit};
use offload_mir::{Body, BodyKind, link, parse_module};
use std::path::Path;

const ERROR: &str = "// error: ";

#[test]
fn link_filetests() {
    let files = files_in(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests/link"),
        "mir",
    );
    let bless = std::env::var_os("OFFLOAD_BLESS").is_some();
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("a readable file test");
        let expected: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix(ERROR)).collect();
        let actual = run_with_deadline(&text);
        if actual != expected {
            if bless {
                std::fs::write(path, blessed(&text, &actual)).expect("a writable file test");
            } else {
                failures.push(format!(
                    "{}:\n  expected: {expected:#?}\n  actual:   {actual:#?}",
                    path.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(rerun with OFFLOAD_BLESS=1 to accept)",
        failures.join("\n")
    );
}

/// [`run`], or one line saying it had not finished within a minute: a file test that
/// hangs (as MLIR's canonicalizer once did on some of them) then fails instead of
/// holding up CI. Its thread is left spinning until the test binary exits.
fn run_with_deadline(text: &str) -> Vec<String> {
    let (send, receive) = std::sync::mpsc::channel();
    let text = text.to_string();
    std::thread::spawn(move || send.send(run(&text)));
    receive
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| vec!["did not finish linking and lowering within 60 s".into()])
}

/// The error lines linking and lowering `text` gives; none when both succeed.
fn run(text: &str) -> Vec<String> {
    // Comment lines after the header are for readers; blanking them keeps line numbers.
    let source: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i > 0 && l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let bodies = match parse_module(&source) {
        Ok(b) => b,
        Err(e) => return vec![format!("parse: {e}")],
    };
    let device: Vec<&Body> = bodies
        .iter()
        .filter(|b| b.kind == BodyKind::Device)
        .collect();
    let mut out = Vec::new();
    for kernel in bodies.iter().filter(|b| b.kind == BodyKind::Kernel) {
        match link(kernel, &device) {
            Ok(linked) => {
                if let Err(e) = emit(&linked, Stage::Cpu, &GpuTarget::default()) {
                    out.push(format!("lowering: {e}"));
                }
            }
            Err(e) => out.extend(e.to_string().lines().map(str::to_string)),
        }
    }
    out
}

fn blessed(text: &str, errors: &[String]) -> String {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(ERROR))
        .map(str::to_string)
        .collect();
    for (i, e) in errors.iter().enumerate() {
        lines.insert(1 + i, format!("{ERROR}{e}"));
    }
    lines.join("\n") + "\n"
}

const PIPELINE: &str = "// pipeline: ";

#[test]
fn pass_filetests() {
    // Relative, so that diagnostics name the files the same on every machine.
    let files = files_in(Path::new("filetests/passes"), "mlir");
    let bless = std::env::var_os("OFFLOAD_BLESS").is_some();
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("a readable file test");
        let Some(pipeline) = text.lines().next().and_then(|l| l.strip_prefix(PIPELINE)) else {
            failures.push(format!(
                "{}: the first line must be `{PIPELINE}...`",
                path.display()
            ));
            continue;
        };
        let session = Session::new().expect("an MLIR session");
        let actual = match session
            .parse_file(&path.to_string_lossy())
            .and_then(|mut module| {
                session.run_pipeline(&mut module, pipeline)?;
                Ok(module.as_operation().to_string())
            }) {
            Ok(module) => module,
            Err(e) => format!("error: {e}\n"),
        };
        let checks = checks(&text);
        if !checks.is_empty() {
            if let Err(why) = check_lines(&checks, &actual) {
                failures.push(format!(
                    "{}: {why}\nin the output:\n{actual}",
                    path.display()
                ));
            }
            continue;
        }
        let expected_path = path.with_extension("out");
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            if bless {
                std::fs::write(&expected_path, &actual).expect("a writable expectation");
            } else {
                failures.push(format!(
                    "{}: the output differs from {}:\n{actual}",
                    path.display(),
                    expected_path.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(rerun with OFFLOAD_BLESS=1 to accept)",
        failures.join("\n")
    );
}

/// A `// CHECK...:` line of a pass file test: what kind, and the text to find.
#[derive(Debug)]
enum Check<'t> {
    /// `CHECK:` a later line holds the text.
    Later(&'t str),
    /// `CHECK-NEXT:` the line right after the last match holds it.
    Next(&'t str),
    /// `CHECK-NOT:` no line between the last match and the next one (or the end) does.
    Not(&'t str),
}

/// The `CHECK` lines of a file test, in order.
fn checks(text: &str) -> Vec<Check<'_>> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().strip_prefix("// ")?;
            if let Some(t) = l.strip_prefix("CHECK-NEXT:") {
                Some(Check::Next(t.trim()))
            } else if let Some(t) = l.strip_prefix("CHECK-NOT:") {
                Some(Check::Not(t.trim()))
            } else {
                l.strip_prefix("CHECK:").map(|t| Check::Later(t.trim()))
            }
        })
        .collect()
}

/// Whether `output` satisfies `checks`, as LLVM's `FileCheck` reads them (texts are
/// matched literally, no variables): each `CHECK` after the previous match, a
/// `CHECK-NEXT` on the very next line, a `CHECK-NOT` nowhere in between.
fn check_lines(checks: &[Check<'_>], output: &str) -> Result<(), String> {
    let lines: Vec<&str> = output.lines().collect();
    // The line after the last match, and the `CHECK-NOT`s waiting for the next one.
    let (mut at, mut not): (usize, Vec<&str>) = (0, Vec::new());
    let refuse_nots = |from: usize, to: usize, not: &mut Vec<&str>| -> Result<(), String> {
        for n in not.drain(..) {
            if let Some(k) = (from..to).find(|&k| lines[k].contains(n)) {
                return Err(format!("`CHECK-NOT: {n}` found at output line {}", k + 1));
            }
        }
        Ok(())
    };
    for check in checks {
        match check {
            Check::Not(t) => not.push(t),
            Check::Later(t) => {
                let found = (at..lines.len()).find(|&k| lines[k].contains(t));
                let k = found.ok_or_else(|| format!("`CHECK: {t}` not found after line {at}"))?;
                refuse_nots(at, k, &mut not)?;
                at = k + 1;
            }
            Check::Next(t) => {
                if !lines.get(at).is_some_and(|l| l.contains(t)) {
                    return Err(format!("`CHECK-NEXT: {t}` is not output line {}", at + 1));
                }
                refuse_nots(at, at, &mut not)?;
                at += 1;
            }
        }
    }
    refuse_nots(at, lines.len(), &mut not)
}

/// The files of `dir` whose extension is `ext`, sorted; at least one.
fn files_in(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no file tests in {}", dir.display());
    files
}

/// A pass that panics (a bug of ours) fails the pipeline with an error at the module,
/// not an abort, and the context stays usable.
#[test]
fn a_pass_that_panics_fails_with_an_internal_error() {
    let (failed, after) = offload_lowering::run_a_panicking_pass();
    assert_eq!(
        failed.unwrap_err().to_string(),
        "internal error in the `test` stage:\n-:1:1: test-panics: internal error: a bug forced for the test"
    );
    after.unwrap();
}
