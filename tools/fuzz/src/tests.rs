//! The generator's promises, checked over many seeds.

use super::*;
use offload_mir::interp::{self, ArgValue, InterpError, Options};
use offload_mir::{Rvalue, ScalarTy, Ty, convergence, parse, validate};

const SEEDS: u64 = 2000;

#[test]
fn generated_bodies_are_valid_and_round_trip() {
    for seed in 0..SEEDS {
        let p = generate(seed);
        if let Err(e) = validate(&p.body) {
            panic!("seed {seed}: {e}\n{}", p.body);
        }
        let text = p.body.to_string();
        let back = parse(&text).unwrap_or_else(|e| panic!("seed {seed}: {e:?}\n{text}"));
        assert_eq!(back.to_string(), text, "seed {seed}");
    }
}

#[test]
fn safe_programs_keep_the_convergence_rules() {
    for seed in 0..SEEDS {
        let p = generate(seed);
        if p.broken.is_some() {
            continue;
        }
        if let Err(e) = convergence::check_convergence(&p.body) {
            panic!("seed {seed}: {e:?}\n{}", p.body);
        }
        if let Some(e) = offload_mir::safety::check_shared_races(&p.body).first() {
            panic!("seed {seed}: {e:?}\n{}", p.body);
        }
    }
}

#[test]
fn safe_programs_run_in_the_interpreter() {
    let mut panicked = 0;
    for seed in 0..SEEDS {
        let mut p = generate(seed);
        if p.broken.is_some() {
            continue;
        }
        match interp::run(&p.body, &p.launch, &mut p.args, &Options::default()) {
            Ok(outcome) => panicked += outcome.panic.is_some() as u32,
            Err(e) => panic!("seed {seed}: {e}\n{}", p.body),
        }
    }
    // Some launches panic (an index past a slice, a zero divisor), most do not.
    assert!(
        panicked < SEEDS as u32 / 3,
        "{panicked} of {SEEDS} panicked"
    );
}

#[test]
fn generation_is_deterministic() {
    for seed in [0, 1, 77, u64::MAX] {
        let (a, b) = (generate(seed), generate(seed));
        assert_eq!(a.body.to_string(), b.body.to_string());
        assert_eq!((a.args, a.launch), (b.args, b.launch));
    }
}

#[test]
fn mutants_are_valid_and_differ() {
    let mut changed = 0;
    for seed in 0..500 {
        let p = generate(seed);
        let m = mutate(&p.body, seed ^ 0x5eed);
        if let Err(e) = validate(&m) {
            panic!("seed {seed}: {e}\n{m}");
        }
        changed += (m != p.body) as u32;
        // Whatever a mutant does, the interpreter answers without panicking.
        let mut args = p.args.clone();
        let options = Options {
            max_steps: 200_000,
            ..Options::default()
        };
        match interp::run(&m, &p.launch, &mut args, &options) {
            Ok(_) | Err(InterpError::StepLimit { .. }) => {}
            Err(e) => assert!(!matches!(e, InterpError::Invalid(_)), "{e}"),
        }
    }
    assert!(changed > 450, "only {changed} of 500 mutants differ");
}

/// What the generated programs contain, as names, over many seeds.
fn coverage() -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..SEEDS {
        let p = generate(seed);
        for decl in &p.body.locals {
            seen.insert(match decl.ty {
                Ty::Scalar(t) => format!("type {t}"),
                Ty::Region(_, s) => {
                    format!("strategy {}", s.to_string().replace(char::is_numeric, ""))
                }
                Ty::Shared(_, n) => {
                    format!("shared {}", if n.is_some() { "static" } else { "dyn" })
                }
                other => other.to_string().split('<').next().unwrap().to_string(),
            });
        }
        for block in &p.body.blocks {
            for s in &block.statements {
                seen.insert(rvalue_kind(&s.rvalue));
            }
            let t = format!("{:?}", block.terminator.kind);
            seen.insert(format!(
                "terminator {}",
                t.split([' ', '(', '{']).next().unwrap()
            ));
        }
        if let Some(rule) = p.broken {
            seen.insert(format!("broken {rule:?}"));
        }
        let interior = |a: &interp::ArgValue| matches!(a, interp::ArgValue::Buffer { layout, .. } if layout.margin > 0);
        if p.args.iter().any(interior) {
            seen.insert("an interior".into());
        }
    }
    seen
}

fn rvalue_kind(rv: &Rvalue) -> String {
    match rv {
        Rvalue::BinaryOp(op, ..) => format!("binary {}", op.name()),
        Rvalue::UnaryOp(op, _) => format!("unary {}", op.name()),
        Rvalue::Intrinsic(i, _) => format!("intrinsic {}", i.name()),
        Rvalue::Subgroup(op, _) => format!("subgroup {}", op.name()),
        Rvalue::AtomicRmw(op, ..) => format!("atomic {}", op.name()),
        Rvalue::Position(p, _) => format!("position {}", p.name()),
        other => format!("rvalue {}", format!("{other:?}").split('(').next().unwrap()),
    }
}

#[test]
fn every_kind_of_statement_terminator_type_and_strategy_appears() {
    let seen = coverage();
    let mut want: Vec<String> = Vec::new();
    want.extend(
        offload_mir::BinOp::ALL
            .iter()
            .map(|o| format!("binary {}", o.name())),
    );
    want.extend(["unary Neg", "unary Not"].map(String::from));
    let exact = offload_mir::Intrinsic::all().filter(|i| i.is_exact());
    want.extend(exact.map(|i| format!("intrinsic {}", i.name())));
    want.extend(
        offload_mir::SubgroupOp::ALL
            .iter()
            .map(|o| format!("subgroup {}", o.name())),
    );
    want.extend(
        offload_mir::AtomicOp::ALL
            .iter()
            .map(|o| format!("atomic {}", o.name())),
    );
    want.extend(
        offload_mir::Position::ALL
            .iter()
            .map(|p| format!("position {}", p.name())),
    );
    want.extend(
        offload_mir::ScalarTy::ALL
            .iter()
            .map(|t| format!("type {t}")),
    );
    want.extend(Broken::ALL.iter().map(|r| format!("broken {r:?}")));
    for kind in [
        "Use",
        "Cast",
        "Len",
        "RegionIndex",
        "RegionCoord",
        "RegionExtent",
        "RegionEnd",
        "AtomicCas",
    ] {
        want.push(format!("rvalue {kind}"));
    }
    for t in [
        "Goto",
        "SwitchInt",
        "Assert",
        "Return",
        "Unreachable",
        "Barrier",
    ] {
        want.push(format!("terminator {t}"));
    }
    for s in [
        "strategy LinearD",
        "strategy Chunked<>",
        "strategy StencilD<>",
        "strategy Indexed",
        "an interior",
        "shared static",
        "shared dyn",
        "Atomic",
    ] {
        want.push(s.to_string());
    }
    let missing: Vec<&String> = want.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(
        missing.is_empty(),
        "never generated: {missing:?}\nseen: {seen:?}"
    );
}

/// `cargo test -p offload-fuzz --release -- --ignored --nocapture`: how long generation
/// and interpretation take, and what the runs do.
#[test]
#[ignore]
fn statistics() {
    let start = std::time::Instant::now();
    let (mut panics, mut undefined, mut steps, mut blocks) = (0, 0, 0u64, 0);
    let n = 1000;
    for seed in 0..n {
        let mut p = generate(seed);
        blocks += p.body.blocks.len();
        match interp::run(&p.body, &p.launch, &mut p.args, &Options::default()) {
            Ok(o) => {
                panics += o.panic.is_some() as u32;
                steps += o.steps;
            }
            Err(_) => undefined += 1,
        }
    }
    println!(
        "{n} programs generated and run in {:?}: {panics} panicked, {undefined} undefined, {} steps and {} blocks on average",
        start.elapsed(),
        steps / n,
        blocks as u64 / n
    );
}

#[test]
#[ignore]
fn show() {
    let seed: u64 = std::env::var("SEED").map_or(1, |s| s.parse().unwrap());
    let p = generate(seed);
    println!("{}\n{:?}\n{:?}\n{:?}", p.body, p.launch, p.args, p.broken);
}

/// Simplification before lowering (`link`) must not change what a kernel computes: the
/// interpreter gives the same results for the generated body and the linked one.
#[test]
fn linking_keeps_the_results() {
    for seed in 0..SEEDS {
        let p = generate(seed);
        let Ok(linked) = offload_mir::link(&p.body, &[]) else {
            continue;
        };
        let (mut original, mut simplified) = (p.args.clone(), p.args.clone());
        let options = Options::default();
        let a = interp::run(&p.body, &p.launch, &mut original, &options);
        let b = interp::run(linked.body(), &p.launch, &mut simplified, &options);
        let same = match (&a, &b) {
            (Ok(a), Ok(b)) => {
                // Panic sites are renumbered when blocks are dropped: compare messages.
                let message = |o: &interp::Outcome, body| o.panic.as_ref().map(|r| r.message(body));
                message(a, &p.body) == message(b, linked.body())
                    && compare(&original, &simplified).is_ok()
            }
            (Err(_), Err(_)) => true,
            _ => false,
        };
        assert!(
            same,
            "seed {seed}: {a:?} before linking, {b:?} after\n{}",
            p.body
        );
    }
}

#[test]
fn results_compare_as_values() {
    let f = |v: f32| v.to_bits() as u64;
    assert!(same_value(ScalarTy::F32, f(0.0), f(-0.0)));
    assert!(same_value(ScalarTy::F32, f(f32::NAN), f(-f32::NAN)));
    assert!(!same_value(ScalarTy::F32, f(1.0), f(f32::NAN)));
    assert!(!same_value(ScalarTy::I32, 1, 2));
    let buffer = |data| ArgValue::buffer(ScalarTy::F32, data);
    let expected = [buffer(vec![f(1.0), f(0.0)])];
    assert_eq!(compare(&expected, &[buffer(vec![f(1.0), f(-0.0)])]), Ok(()));
    let wrong = compare(&expected, &[buffer(vec![f(1.0), f(2.0)])]).unwrap_err();
    assert_eq!((wrong.arg, wrong.element), (0, Some(1)));
}

/// `cargo test -p offload-fuzz --release link_acceptance -- --ignored --nocapture`: how
/// many safe programs the verifier refuses after linking, and why; which broken ones
/// it accepts (their violation may be dead once constant branches are folded).
#[test]
#[ignore]
fn link_acceptance() {
    let mut reasons = std::collections::BTreeMap::<String, Vec<u64>>::new();
    let mut accepted = Vec::new();
    for seed in 0..SEEDS {
        let p = generate(seed);
        match (offload_mir::link(&p.body, &[]), p.broken) {
            (Err(e), None) => {
                let text = e.to_string();
                // `file:line:column: in kernel `name`, bbN: message`, the message kept.
                let message = text
                    .split_once(", bb")
                    .and_then(|(_, m)| m.split_once(": "));
                let reason = message.map_or(text.as_str(), |(_, m)| m);
                let reason = reason.replace(char::is_numeric, "");
                reasons.entry(reason).or_default().push(seed);
            }
            (Ok(_), Some(rule)) => accepted.push((seed, rule)),
            _ => {}
        }
    }
    for (reason, seeds) in &reasons {
        println!(
            "{} safe programs refused ({:?}...): {reason}",
            seeds.len(),
            &seeds[..seeds.len().min(5)]
        );
    }
    println!("broken programs accepted: {accepted:?}");
}

#[test]
fn source_programs_translate_link_and_run() {
    let mut failures = Vec::new();
    let seeds: u64 = std::env::var("OFFLOAD_SOURCE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    for seed in 0..seeds {
        let (p, source) = match crate::generate_source(seed, false) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("seed {seed}: {e}"));
                continue;
            }
        };
        if let Err(e) = offload_mir::link(&p.body, &[]) {
            failures.push(format!("seed {seed}: link: {e}\n{source}"));
            continue;
        }
        let mut args = p.args.clone();
        if let Err(e) = interp::run(&p.body, &p.launch, &mut args, &Options::default()) {
            failures.push(format!("seed {seed}: interp: {e}\n{source}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every construct of the README's kernel-language and strategy tables is in some
/// program of a campaign's first 2,000.
#[test]
fn campaigns_cover_every_construct_of_the_kernel_language() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..2000 {
        let (p, _) = crate::program(seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        seen.extend(p.constructs);
    }
    let missing: Vec<_> = crate::Construct::ALL
        .iter()
        .filter(|c| !seen.contains(c))
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}
