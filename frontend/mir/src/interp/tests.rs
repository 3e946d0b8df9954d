//! The interpreter against hand-written kernels.

use super::*;

const SAXPY: &str = r#"// offload-mir v1
kernel saxpy(mut _1: Region<f32, Linear1D>, _2: &[f32], _3: f32) {
file "saxpy.rs";
let mut _0: ();
let mut _4: usize;
let mut _5: usize;
let mut _6: bool;
let mut _7: usize;
let mut _8: bool;
let mut _9: f32;
let mut _10: f32;

bb0: {
    _4 = RegionIndex(_1); // 1:1
    _5 = Len(_1); // 1:1
    _6 = Lt(copy _4, copy _5); // 1:1
    switchInt(copy _6) -> [0: bb2, otherwise: bb1]; // 1:1
}

bb1: {
    _7 = Len(_2); // 2:1
    _8 = Lt(copy _4, copy _7); // 2:1
    assert(copy _8, BoundsCheck { len: copy _7, index: copy _4 }) -> bb3; // 2:1
}

bb2: {
    return; // 3:1
}

bb3: {
    _9 = Mul(copy _3, copy _2[_4]); // 4:1
    _10 = Add(copy _9, copy _1[_4]); // 4:1
    _1[_4] = copy _10; // 4:1
    goto -> bb2; // 4:1
}
}
"#;

fn f32s(values: &[f32]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits() as u64).collect()
}

fn launch(workgroups: u32, threads: u32) -> Launch {
    Launch {
        workgroups: [workgroups, 1, 1],
        threads: [threads, 1, 1],
        dyn_shared_bytes: 0,
    }
}

fn data(arg: &ArgValue) -> &[u64] {
    match arg {
        ArgValue::Buffer { data, .. } => data,
        ArgValue::Scalar(_) => panic!("not a buffer"),
    }
}

#[test]
fn saxpy_matches_a_host_loop() {
    let body = crate::parse(SAXPY).unwrap();
    let x: Vec<f32> = (0..37).map(|i| i as f32 * 0.25 - 3.0).collect();
    let y: Vec<f32> = (0..37).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    let a = 1.5f32;
    let mut args = vec![
        ArgValue::buffer(ScalarTy::F32, f32s(&y)),
        ArgValue::buffer(ScalarTy::F32, f32s(&x)),
        ArgValue::Scalar(Const::Float(a as f64, ScalarTy::F32)),
    ];
    // 40 threads for 37 elements: the last three skip.
    let outcome = run(&body, &launch(5, 8), &mut args, &Options::default()).unwrap();
    assert_eq!(outcome.panic, None);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    assert_eq!(data(&args[0]), f32s(&want));
}

#[test]
fn saxpy_with_a_short_slice_panics_and_writes_nothing() {
    let body = crate::parse(SAXPY).unwrap();
    let y = f32s(&[1.0; 8]);
    let mut args = vec![
        ArgValue::buffer(ScalarTy::F32, y.clone()),
        ArgValue::buffer(ScalarTy::F32, f32s(&[2.0; 5])),
        ArgValue::Scalar(Const::Float(1.0, ScalarTy::F32)),
    ];
    let outcome = run(&body, &launch(2, 4), &mut args, &Options::default()).unwrap();
    let first = outcome.panic.expect("threads 5..8 index past the slice");
    assert_eq!((first.site, &first.values[..]), (0, &[5, 5][..]));
    assert_eq!((first.workgroup, first.thread), ([1, 0, 0], [1, 0, 0]));
    assert_eq!(outcome.panics.len(), 3);
    assert_eq!(
        first.message(&body),
        "index out of bounds: the len is 5 but the index is 5"
    );
    assert_eq!(data(&args[0]), y, "no copy-back after a panic");
}

/// Each thread writes its slot, waits, and reads its neighbour's: right only if every
/// thread wrote before any read.
const ROTATE: &str = r#"// offload-mir v1
kernel rotate(mut _1: Region<u32, Linear1D>) {
file "rotate.rs";
let mut _0: ();
let mut _2: Shared<u32, 8>;
let mut _3: usize;
let mut _4: usize;
let mut _5: u32;
let mut _6: usize;
let mut _7: usize;
let mut _8: usize;
let mut _9: u32;
let mut _10: usize;
let mut _11: usize;
let mut _12: bool;

bb0: {
    _3 = thread_idx(0); // 1:1
    _4 = workgroup_dim(0); // 1:1
    _5 = copy _3 as u32; // 1:1
    _5 = Mul(copy _5, const 10u32); // 1:1
    _2[_3] = copy _5; // 1:1
    barrier -> bb1; // 1:1
}

bb1: {
    _6 = Add(copy _3, const 1usize); // 2:1
    _7 = Rem(copy _6, copy _4); // 2:1
    _9 = copy _2[_7]; // 2:1
    _10 = RegionIndex(_1); // 2:1
    _11 = Len(_1); // 2:1
    _12 = Lt(copy _10, copy _11); // 2:1
    switchInt(copy _12) -> [0: bb3, otherwise: bb2]; // 2:1
}

bb2: {
    _1[_10] = copy _9; // 3:1
    goto -> bb3; // 3:1
}

bb3: {
    return; // 4:1
}
}
"#;

#[test]
fn a_barrier_separates_writes_from_reads() {
    let body = crate::parse(ROTATE).unwrap();
    let mut args = vec![ArgValue::buffer(ScalarTy::U32, vec![0; 8])];
    let outcome = run(&body, &launch(2, 4), &mut args, &Options::default()).unwrap();
    assert_eq!(outcome.panic, None);
    assert_eq!(data(&args[0]), [10, 20, 30, 0, 10, 20, 30, 0]);
}

const CHECKED: &str = r#"// offload-mir v1
kernel checked(mut _1: Region<i32, Linear1D>, _2: i32) {
file "checked.rs";
let mut _0: ();
let mut _3: usize;
let mut _4: i32;
let mut _5: bool;
let mut _6: i32;

bb0: {
    _3 = RegionIndex(_1); // 1:1
    _4 = copy _3 as i32; // 1:1
    _5 = Ne(copy _4, copy _2); // 1:1
    assert(copy _5, "hit the forbidden thread") -> bb1; // 1:1
}

bb1: {
    _6 = Div(const 100i32, copy _4); // 2:1
    _1[_3] = copy _6; // 2:1
    return; // 2:1
}
}
"#;

#[test]
fn a_panic_is_reported_with_its_site_and_message() {
    let body = crate::parse(CHECKED).unwrap();
    let mut args = vec![
        ArgValue::buffer(ScalarTy::I32, vec![7; 4]),
        ArgValue::Scalar(Const::Int(2, ScalarTy::I32)),
    ];
    // Thread 0 divides by zero before thread 2 panics: undefined, not a panic.
    let err = run(&body, &launch(1, 4), &mut args, &Options::default()).unwrap_err();
    assert!(matches!(err, InterpError::DivisionByZero { .. }), "{err}");
    args[1] = ArgValue::Scalar(Const::Int(0, ScalarTy::I32));
    let outcome = run(&body, &launch(1, 4), &mut args, &Options::default()).unwrap();
    let report = outcome.panic.unwrap();
    assert_eq!((report.site, report.thread), (0, [0, 0, 0]));
    assert_eq!(report.message(&body), "hit the forbidden thread");
    assert_eq!(data(&args[0]), [7; 4]);
}

#[test]
fn endless_loops_run_out_of_steps() {
    let text = "// offload-mir v1\nkernel spin(_1: u32) {\n    file \"spin.rs\";\n    let mut _0: ();\n\n    bb0: {\n        goto -> bb0; // 1:1\n    }\n}\n";
    let body = crate::parse(text).unwrap();
    let mut args = vec![ArgValue::Scalar(Const::Int(1, ScalarTy::U32))];
    let options = Options {
        max_steps: 1000,
        ..Options::default()
    };
    let err = run(&body, &launch(1, 1), &mut args, &options).unwrap_err();
    assert_eq!(err, InterpError::StepLimit { max_steps: 1000 });
    let err = run(&body, &launch(1, 1), &mut args[..0], &options).unwrap_err();
    assert!(matches!(err, InterpError::BadArguments(_)), "{err}");
    let err = run(&body, &launch(0, 1), &mut args, &options).unwrap_err();
    assert!(matches!(err, InterpError::BadLaunch(_)), "{err}");
}

#[test]
fn casts_follow_rust_as() {
    use ScalarTy::*;
    let f = |v: f64| v.to_bits();
    assert_eq!(cast(F64, I8, f(300.7)), 127);
    assert_eq!(cast(F64, I8, f(-300.0)), 0x80);
    assert_eq!(cast(F64, U64, f(-1.0)), 0);
    assert_eq!(cast(F64, I32, f(f64::NAN)), 0);
    assert_eq!(cast(F64, U64, f(1e30)), u64::MAX);
    assert_eq!(
        cast(F32, I64, (2.0f32.powi(63)).to_bits() as u64),
        i64::MAX as u64
    );
    assert_eq!(cast(I8, U64, 0xFF), u64::MAX);
    assert_eq!(cast(U8, I64, 0xFF), 0xFF);
    assert_eq!(cast(I64, U8, u64::MAX - 1), 0xFE);
    assert_eq!(cast(Bool, I32, 1), 1);
    assert_eq!(cast(Bool, F32, 1), 1.0f32.to_bits() as u64);
    assert_eq!(cast(U64, F32, u64::MAX), (u64::MAX as f32).to_bits() as u64);
    assert_eq!(cast(I16, F64, 0x8000), f(-32768.0));
}

#[test]
fn integer_arithmetic_wraps_and_masks_shifts() {
    use ScalarTy::*;
    let ok = |op, ty, a, b| binary(op, ty, a, b).ok().unwrap();
    assert_eq!(ok(BinOp::Add, U8, 200, 100), 44);
    assert_eq!(ok(BinOp::Shl, U8, 1, 9), 2);
    assert_eq!(ok(BinOp::Shr, I8, 0x80, 7), 0xFF);
    assert_eq!(ok(BinOp::Shr, I8, 0x80, 0xFF), 0xFF, "-1 masks to 7");
    assert_eq!(ok(BinOp::Lt, I32, 0xFFFF_FFFF, 0), 1);
    assert_eq!(ok(BinOp::Lt, U32, 0xFFFF_FFFF, 0), 0);
    assert_eq!(ok(BinOp::Rem, I8, (-7i8) as u8 as u64, 2), 0xFF);
    assert!(binary(BinOp::Div, I16, 0x8000, 0xFFFF).is_err());
    assert_eq!(ok(BinOp::Div, U16, 0x8000, 0xFFFF), 0);
    assert_eq!(unary(UnOp::Neg, I8, 0x80), 0x80);
    assert_eq!(
        int_intrinsic(Intrinsic::Abs, I32, &[0x8000_0000]),
        0x8000_0000
    );
    assert_eq!(int_intrinsic(Intrinsic::LeadingZeros, U16, &[1]), 15);
    assert_eq!(int_intrinsic(Intrinsic::TrailingZeros, I8, &[0]), 8);
    assert_eq!(int_intrinsic(Intrinsic::Min, I8, &[0xFF, 1]), 0xFF);
    assert_eq!(int_intrinsic(Intrinsic::Max, U8, &[0xFF, 1]), 0xFF);
}

#[test]
fn float_functions_follow_the_lowering() {
    let b = |v: f32| v.to_bits() as u64;
    let nan = b(f32::NAN);
    let min = |x, y| float_intrinsic::<f32>(Intrinsic::Min, &[x, y]);
    assert_eq!(min(nan, b(2.0)), b(2.0));
    assert_eq!(min(b(2.0), nan), b(2.0));
    assert_eq!(min(b(0.0), b(-0.0)), b(0.0), "equal: the first operand");
    assert_eq!(powi(3.0f32, 3), 27.0);
    assert_eq!(powi(2.0f32, -2), 0.25);
    assert_eq!(powi(0.0f64, -1), f64::INFINITY);
    assert_eq!(powi(1.0f64, i32::MIN), 1.0);
    assert_eq!(powi(f64::NAN, 0), 1.0);
    let round = float_intrinsic::<f64>(Intrinsic::Round, &[(-2.5f64).to_bits()]);
    assert_eq!(f64::from_bits(round), -3.0);
    let neg = unary(UnOp::Neg, ScalarTy::F32, nan);
    assert_eq!(neg, nan ^ (1 << 31));
}

/// Every thread adds one to element 0 of an atomic; `USED` also writes the previous value
/// to the thread's element of a region.
const COUNTER: &str = r#"// offload-mir v1
kernel counter(mut _1: Region<u32, Linear1D>, mut _2: Atomic<u32>) {
file "counter.rs";
let mut _0: ();
let mut _3: usize;
let mut _4: usize;
let mut _5: bool;
let mut _6: u32;
let mut _7: usize;

bb0: {
    _7 = const 0usize; // 1:1
    _4 = Len(_2); // 1:1
    _5 = Lt(copy _7, copy _4); // 1:1
    assert(copy _5, BoundsCheck { len: copy _4, index: copy _7 }) -> bb1; // 1:1
}

bb1: {
    _6 = AtomicRmw(Add, _2[_7], const 1u32); // 2:1
    _3 = RegionIndex(_1); // 3:1
    _4 = Len(_1); // 3:1
    _5 = Lt(copy _3, copy _4); // 3:1
    switchInt(copy _5) -> [0: bb3, otherwise: bb2]; // 3:1
}

bb2: {
    USED; // 4:1
    goto -> bb3; // 4:1
}

bb3: {
    return; // 5:1
}
}
"#;

#[test]
fn a_used_result_of_a_contended_atomic_depends_on_thread_order() {
    let run_counter = |second_block: &str, threads: u32| {
        let body = crate::parse(&COUNTER.replace("USED;", second_block)).unwrap();
        let mut args = vec![
            ArgValue::buffer(ScalarTy::U32, vec![0; threads as usize]),
            ArgValue::buffer(ScalarTy::U32, vec![0]),
        ];
        let outcome = run(&body, &launch(1, threads), &mut args, &Options::default()).unwrap();
        assert_eq!(data(&args[1]), [threads as u64]);
        outcome.order_dependent
    };
    let used = "_1[_3] = copy _6;";
    let unused = "_1[_3] = const 7u32;";
    assert!(run_counter(used, 4));
    assert!(!run_counter(unused, 4));
    // One thread alone: nothing to be ordered against.
    assert!(!run_counter(used, 1));
}

#[test]
fn an_f32_atomic_add_flushes_subnormals_only_when_modelling_nvidia() {
    let body = crate::parse(
        r#"// offload-mir v1
kernel add(mut _1: Atomic<f32>, _2: f32) {
file "add.rs";
let mut _0: ();
let mut _3: usize;
let mut _4: usize;
let mut _5: bool;
let mut _6: f32;

bb0: {
    _3 = const 0usize; // 1:1
    _4 = Len(_1); // 1:1
    _5 = Lt(copy _3, copy _4); // 1:1
    assert(copy _5, BoundsCheck { len: copy _4, index: copy _3 }) -> bb1; // 1:1
}

bb1: {
    _6 = AtomicRmw(Add, _1[_3], copy _2); // 2:1
    return; // 3:1
}
}
"#,
    )
    .unwrap();
    let tiny = f32::from_bits(1); // the least subnormal
    let add = |old: f32, v: f32, ftz: bool| {
        let mut args = vec![
            ArgValue::buffer(ScalarTy::F32, f32s(&[old])),
            ArgValue::Scalar(Const::Float(v as f64, ScalarTy::F32)),
        ];
        let options = Options {
            f32_atomic_add_flushes_subnormals: ftz,
            ..Options::default()
        };
        run(&body, &launch(1, 1), &mut args, &options).unwrap();
        f32::from_bits(data(&args[0])[0] as u32)
    };
    let normal = f32::MIN_POSITIVE;
    // Rust's addition keeps the subnormal operand; NVIDIA's flushes it first.
    assert_eq!(add(tiny, normal, false).to_bits(), normal.to_bits() + 1);
    assert_eq!(add(tiny, normal, true), normal);
    assert_eq!(add(normal, tiny, true), normal);
    // A subnormal result is flushed to zero of its sign.
    assert_eq!(add(-1.5 * normal, normal, false), -0.5 * normal);
    assert_eq!(
        add(-1.5 * normal, normal, true).to_bits(),
        (-0.0f32).to_bits()
    );
}

#[test]
fn half_floats_round_each_result_to_their_type() {
    use ScalarTy::{Bf16, F16, F32, F64};
    use half::{bf16, f16};
    let h = |v: f16| v.to_bits() as u64;
    let (a, b) = (f16::from_f32(1.0), f16::from_f32(2f32.powi(-11)));
    // 1 + 2^-11 is a tie between 1 and the next f16: even, 1.
    assert_eq!(binary(BinOp::Add, F16, h(a), h(b)).ok(), Some(h(a)));
    let (x, y) = (f16::from_f32(0.1), f16::from_f32(3.3));
    for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Rem] {
        let want = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            _ => x % y,
        };
        assert_eq!(binary(op, F16, h(x), h(y)).ok(), Some(h(want)), "{op:?}");
    }
    assert_eq!(binary(BinOp::Lt, F16, h(x), h(y)).ok(), Some(1));
    assert_eq!(unary(UnOp::Neg, F16, h(x)), h(-x));
    let p = |v: bf16| v.to_bits() as u64;
    let (u, w) = (bf16::from_f32(1.7), bf16::from_f32(-0.3));
    assert_eq!(binary(BinOp::Mul, Bf16, p(u), p(w)).ok(), Some(p(u * w)));
    // From f64, rounded once: just above a tie goes up, where rounding to f32 first
    // would land on the tie and go to even.
    let above_tie = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
    let one_up = f16::from_bits(0x3c01);
    assert_eq!(cast(F64, F16, above_tie.to_bits()), h(one_up));
    assert_eq!(
        cast(F16, F32, h(one_up)),
        (one_up.to_f32()).to_bits() as u64
    );
    assert_eq!(cast(F16, F64, h(one_up)), one_up.to_f64().to_bits());
    assert_eq!(
        cast(F32, Bf16, 1.7f32.to_bits() as u64),
        p(bf16::from_f32(1.7))
    );
    assert_eq!(
        intrinsic(Intrinsic::Max, F16, &[h(f16::NAN), h(x)]),
        h(x),
        "a NaN operand yields the other"
    );
}

#[test]
fn half_float_constants_round_trip_through_text() {
    let text = "// offload-mir v1
kernel k(mut _1: Region<f16, Linear1D>, _2: bf16) {
    file \"k.rs\";
    let mut _0: ();
    let mut _3: f16;
    let mut _4: bf16;

    bb0: {
        _3 = Add(const 0x3c00_f16, const 0.5f16); // 1:1
        _4 = Mul(copy _2, const 1.5bf16); // 1:1
        return; // 1:1
    }
}
";
    let body = crate::parse(text).expect("parses");
    let printed = body.to_string();
    assert!(
        printed.contains("Add(const 1.0f16, const 0.5f16)"),
        "{printed}"
    );
    assert!(printed.contains("Mul(copy _2, const 1.5bf16)"), "{printed}");
    assert_eq!(crate::parse(&printed).expect("reparses"), body);
    crate::validate(&body).expect("valid");
}

#[test]
fn half_floats_convert_only_through_wide_floats() {
    let text = "// offload-mir v1
kernel k(mut _1: Region<f16, Linear1D>, _2: i32) {
    file \"k.rs\";
    let mut _0: ();
    let mut _3: f16;

    bb0: {
        _3 = copy _2 as f16; // 1:1
        return; // 1:1
    }
}
";
    let body = crate::parse(text).expect("parses");
    let e = crate::validate(&body).expect_err("refused").to_string();
    assert!(
        e.contains("cannot cast `i32` to `f16`: `f16` and `bf16` convert through `f32` or `f64`"),
        "{e}"
    );
}

/// A sub-slice's range checks: each message reads back from text as it was written and
/// reports its two values as Rust's slicing panics do.
#[test]
fn slice_range_messages_round_trip_and_report_their_values() {
    let text = "// offload-mir v1
kernel k(_1: &[u32], _2: usize, _3: usize) {
    file \"k.rs\";
    let mut _0: ();
    let mut _4: usize;
    let mut _5: bool;

    bb0: {
        _4 = Len(_1); // 1:1
        _5 = Le(copy _2, copy _4); // 1:1
        assert(copy _5, SliceStart { start: copy _2, len: copy _4 }) -> bb1; // 1:1
    }

    bb1: {
        _5 = Lt(copy _3, copy _4); // 2:1
        assert(copy _5, SliceEnd { end: copy _3, len: copy _4 }) -> bb2; // 2:1
    }

    bb2: {
        _5 = Le(copy _2, copy _3); // 3:1
        assert(copy _5, SliceOrder { start: copy _2, end: copy _3 }) -> bb3; // 3:1
    }

    bb3: {
        return; // 4:1
    }
}
";
    let body = crate::parse(text).expect("parses");
    assert_eq!(crate::parse(&body.to_string()).expect("reparses"), body);
    crate::validate(&body).expect("valid");
    let message = |a: u64, b: u64| {
        let mut args = vec![
            ArgValue::buffer(ScalarTy::U32, vec![0; 8]),
            ArgValue::Scalar(Const::Int(a as i128, ScalarTy::Usize)),
            ArgValue::Scalar(Const::Int(b as i128, ScalarTy::Usize)),
        ];
        let outcome = run(&body, &launch(1, 1), &mut args, &Options::default()).unwrap();
        outcome.panic.map(|p| p.message(&body))
    };
    assert_eq!(message(2, 5), None);
    let texts = [
        (
            9,
            9,
            "range start index 9 out of range for slice of length 8",
        ),
        (2, 8, "range end index 8 out of range for slice of length 8"),
        (5, 3, "slice index starts at 5 but ends at 3"),
    ];
    for (a, b, text) in texts {
        assert_eq!(message(a, b).as_deref(), Some(text));
    }
}

/// `_1 = _2 × _3` for 16 × 16 matrices of `f32`, through shared tiles and `tile_mma`.
const TILE_PRODUCT: &str = r#"// offload-mir v1
kernel product(mut _1: Region<f32, Linear1D>, _2: &[f32], _3: &[f32]) {
file "product.rs";
let mut _0: ();
let mut _4: Shared<f32, 256>;
let mut _5: Shared<f32, 256>;
let mut _6: Shared<f32, 256>;
let mut _7: usize;
let mut _8: usize;
let mut _9: bool;
let mut _10: f32;

bb0: {
    _7 = thread_idx(0); // 1:1
    _8 = Len(_2); // 1:1
    _9 = Lt(copy _7, copy _8); // 1:1
    assert(copy _9, BoundsCheck { len: copy _8, index: copy _7 }) -> bb1; // 1:1
}

bb1: {
    _5[_7] = copy _2[_7]; // 2:1
    _6[_7] = copy _3[_7]; // 2:1
    tile_mma(_4, _5, _6, 16, 16, 16, 16, 16, 16) -> bb2; // 3:1
}

bb2: {
    _10 = copy _4[_7]; // 4:1
    _1[_7] = copy _10; // 4:1
    return; // 5:1
}
}
"#;

#[test]
fn tile_mma_adds_the_product_once_every_thread_has_arrived() {
    let body = crate::parse(TILE_PRODUCT).unwrap();
    crate::validate(&body).unwrap();
    let a: Vec<f32> = (0..256).map(|i| (i % 7) as f32 * 0.5 - 1.0).collect();
    let b: Vec<f32> = (0..256).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    let mut args = vec![
        ArgValue::buffer(ScalarTy::F32, f32s(&[0.0; 256])),
        ArgValue::buffer(ScalarTy::F32, f32s(&a)),
        ArgValue::buffer(ScalarTy::F32, f32s(&b)),
    ];
    let outcome = run(&body, &launch(1, 256), &mut args, &Options::default()).unwrap();
    assert_eq!(outcome.panic, None);
    // Each product exact, each sum rounded once, in order of k.
    let want: Vec<f32> = (0..256)
        .map(|e| {
            (0..16).fold(0f32, |s, k| {
                (s as f64 + a[e / 16 * 16 + k] as f64 * b[k * 16 + e % 16] as f64) as f32
            })
        })
        .collect();
    assert_eq!(data(&args[0]), f32s(&want));
}
