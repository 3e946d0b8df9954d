//! What the inference pass infers for small functions.

use super::*;

/// The types inferred for `src`'s literal-typed bindings, by name.
fn inferred(src: &str, ret: Option<ScalarTy>) -> Vec<(String, ScalarTy)> {
    let item: syn::ItemFn = syn::parse_str(src).expect("the test kernel parses");
    let lines: Vec<&str> = src.lines().collect();
    let mut names: Vec<(String, ScalarTy)> = infer(&item, &[], &[], ret)
        .into_iter()
        .map(|((line, column), ty)| {
            let name: String = lines[line - 1][column..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (name, ty)
        })
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    names
}

fn named(pairs: &[(&str, ScalarTy)]) -> Vec<(String, ScalarTy)> {
    pairs.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

#[test]
fn a_later_annotation_types_an_earlier_literal() {
    let src = "fn k(x: &[f32]) {\n let a = 0;\n let b = a + 1;\n let c: u8 = b;\n}";
    assert_eq!(
        inferred(src, None),
        named(&[("a", ScalarTy::U8), ("b", ScalarTy::U8)])
    );
}

#[test]
fn an_index_is_a_usize_and_an_element_has_the_slice_type() {
    let src = "fn k(x: &[f32], n: u64) {\n let i = 0;\n let mut acc = 0.0;\n acc += x[i];\n let j = 1;\n let m = n - j;\n}";
    assert_eq!(
        inferred(src, None),
        named(&[
            ("acc", ScalarTy::F32),
            ("i", ScalarTy::Usize),
            ("j", ScalarTy::U64)
        ])
    );
}

#[test]
fn counters_and_element_loops_meet_their_uses() {
    let src = "fn k(x: &[f64], s: isize) {\n let mut t = 0.0;\n for v in x.iter() { t += *v; }\n for d in -1..=1 { let o: isize = s + d; }\n}";
    assert_eq!(
        inferred(src, None),
        named(&[("d", ScalarTy::Isize), ("t", ScalarTy::F64)])
    );
}

#[test]
fn unconstrained_and_mismatched_literals_keep_the_default() {
    // A float type never reaches an integer variable; the translator reports that.
    let src =
        "fn k(x: &[f32]) {\n let a = 0;\n let b: f32 = a as f32;\n let c = 2;\n let d: f32 = c;\n}";
    assert_eq!(inferred(src, None), named(&[]));
}

#[test]
fn results_patterns_and_methods_carry_types() {
    let src = "fn f(x: u32) -> u32 {\n let k = 3;\n let m = 2;\n let p = 5;\n let q = 1.5;\n let w = match m { 0u8 => x, _ => x.min(p) };\n let r = q.max(2.0f32);\n x * k\n}";
    assert_eq!(
        inferred(src, Some(ScalarTy::U32)),
        named(&[
            ("k", ScalarTy::U32),
            ("m", ScalarTy::U8),
            ("p", ScalarTy::U32),
            ("q", ScalarTy::F32)
        ])
    );
}
