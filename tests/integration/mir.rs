//! The MIR text format: printing and parsing are inverses, and bad input is a located
//! error.

use offload_mir::{parse, validate};

#[test]
fn saxpy_round_trips_through_text() {
    for body in crate::kernels("saxpy.rs") {
        let text = body.to_string();
        let parsed = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(&parsed, body.body());
        assert_eq!(parsed.to_string(), text);
    }
}

#[test]
fn constants_and_messages_round_trip() {
    let text = r#"// offload-mir v1
kernel k(mut _1: Region<f64, Linear1D>, _2: &[i8], _3: u64) {
    file "src/k.rs";
    let mut _0: ();
    let mut _4: f64;
    let mut _5: bool;
    let mut _6: i8;
    debug w => _1; // 1:10

    bb0: {
        _4 = const -0.1f64; // 2:1
        _4 = const 1e-7f64; // 2:2
        _4 = const inff64; // 2:3
        _6 = const -128i8; // 2:4
        _5 = Ne(copy _4, const NaNf64); // 2:5
        switchInt(copy _3) -> [0: bb1, 18446744073709551615: bb1, otherwise: bb2]; // 3:1
    }

    bb1: {
        assert(copy _5, "quote \" and newline \n") -> bb2; // 4:1
    }

    bb2: {
        return; // 5:1
    }
}
"#;
    let body = parse(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(body.to_string(), text);
    validate(&body).unwrap();
}

#[test]
fn parse_errors_carry_a_location() {
    let cases = [
        ("", "1:1: expected the header `// offload-mir v1`"),
        (
            "// offload-mir v9\n",
            "1:1: unsupported MIR format `offload-mir v9`; this build reads `offload-mir v1`",
        ),
        (
            "// offload-mir v1\nkernel k() {\n    file \"f\";\n    let mut _0: ();\n\n    bb0: {\n        _0 = Frob(copy _1); // 1:1\n        return; // 1:1\n    }\n}\n",
            "7:14: unknown rvalue `Frob`",
        ),
        (
            "// offload-mir v1\nkernel k() {\n    file \"f\";\n    let mut _0: ();\n    bb0: {\n        goto -> bb0;\n    }\n}\n",
            "7:5: expected a `// LINE:COLUMN` span comment, found `}`",
        ),
        (
            "// offload-mir v1\nkernel k(_1: Region<f32, Spiral>) {",
            "2:26: unknown partitioning strategy `Spiral`",
        ),
    ];
    for (text, expected) in cases {
        let err = parse(text).expect_err(text);
        assert_eq!(err.to_string(), expected, "for input:\n{text}");
    }
}

#[test]
fn validation_errors_name_kernel_block_and_span() {
    let cases = [
        (
            "_4 = Add(copy _3, const 1i32); // 7:3",
            "f.rs:7:3: in kernel `k`, bb0: `Add` operands differ in type: `f32` and `i32`",
        ),
        (
            "_2[_5] = copy _3; // 7:3",
            "f.rs:7:3: in kernel `k`, bb0: `_2` is a read-only slice and cannot be assigned to",
        ),
        (
            "_4 = copy _6; // 7:3",
            "f.rs:7:3: in kernel `k`, bb0: `_6` is read before it is assigned on every path",
        ),
        (
            "_4 = copy _9; // 7:3",
            "f.rs:7:3: in kernel `k`, bb0: `_9` is not declared",
        ),
    ];
    for (statement, expected) in cases {
        let text = format!(
            "// offload-mir v1\nkernel k(mut _1: Region<f32, Linear1D>, _2: &[f32], _3: f32) {{\n    file \"f.rs\";\n    let mut _0: ();\n    let mut _4: f32;\n    let mut _5: usize;\n    let mut _6: f32;\n\n    bb0: {{\n        _5 = RegionIndex(_1); // 6:1\n        {statement}\n        return; // 8:1\n    }}\n}}\n"
        );
        let body = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(validate(&body).unwrap_err().to_string(), expected);
    }
}
