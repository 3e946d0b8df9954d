//! The translator over the conformance suite's kernels.

use super::*;

/// The conformance suite's kernels and device functions, with the values of its
/// `const` items.
fn conformance() -> (Vec<syn::ItemFn>, Vec<(String, ConstValue)>) {
    let file: syn::File = syn::parse_str(include_str!("../../../tests/conformance/cases.rs"))
        .expect("the conformance cases parse");
    let mut functions = Vec::new();
    let mut consts = Vec::new();
    for item in file.items {
        match item {
            syn::Item::Fn(f)
                if f.attrs.iter().any(|a| {
                    a.path().is_ident("offload_kernel") || a.path().is_ident("offload_device")
                }) =>
            {
                functions.push(f)
            }
            syn::Item::Const(c) => {
                if let Some(v) = const_value(&c.expr) {
                    consts.push((c.ident.to_string(), v));
                }
            }
            _ => {}
        }
    }
    (functions, consts)
}

/// The inference pass models every use the conformance kernels make of their
/// literal-typed bindings: each is translated once, with no type learned afterwards.
#[test]
fn conformance_kernels_are_translated_once() {
    let (functions, consts) = conformance();
    assert!(functions.len() > 70, "found {} functions", functions.len());
    // A device function that returns a tuple is translated as one function per element.
    let parts = functions.iter().flat_map(|item| {
        crate::tuple_results::tuple_result_parts(item).unwrap_or_else(|| vec![item.clone()])
    });
    for item in parts.collect::<Vec<_>>().iter() {
        // As `translate_body` does first.
        let item = &crate::rewrite_syntax(item).expect("the syntax rewrites apply");
        let device = item
            .attrs
            .iter()
            .any(|a| a.path().is_ident("offload_device"));
        for subst in instances(&item.sig).expect("instances") {
            let (kind, ret) = match (&item.sig.output, device) {
                (syn::ReturnType::Type(_, t), true) => (
                    BodyKind::Device,
                    Ty::Scalar(types::scalar_type(t, &subst).expect("a scalar result")),
                ),
                _ => (BodyKind::Kernel, Ty::Unit),
            };
            let instance = Instance {
                name: item.sig.ident.to_string(),
                file: "cases.rs",
                kind,
                ret,
                subst: &subst,
                consts: &consts,
            };
            let hints = inference::infer(item, &subst, &consts, ret.scalar());
            let (result, missed) = instance.translate(item, &hints);
            match result {
                Err(_) if crate::optional_instance(&subst) => continue,
                Err(e) => panic!("`{}` does not translate: {}", item.sig.ident, e.message),
                Ok(_) => {}
            }
            assert!(
                missed.is_empty(),
                "`{}`: translation learned {missed:?} after inference",
                item.sig.ident
            );
        }
    }
}

/// A kernel naming outside `const` items, translated as the macro does (values rustc's),
/// refers to the items; filled in with their values, its text is what a tool that read
/// the values from the source translates, and it parses and validates.
#[test]
fn outside_const_items_are_referred_to_and_filled_in() {
    use offload_mir::Piece;
    let item: syn::ItemFn = syn::parse_quote! {
        #[offload_kernel]
        fn k(mut y: Region<f32, Chunked<COLS>>, img: Region<f32, Stencil2D<R>>) {
            if let Some(c) = y.get_mut() {
                for j in 0..c.len() {
                    c[j] = img.get_clamped(R as isize, 0) * DT + TILE as f32;
                }
            }
        }
    };
    let names = kernel_consts(&item);
    assert_eq!(names, ["COLS", "R", "DT", "TILE"]);
    let rustc: Vec<(String, ConstValue)> = names
        .iter()
        .map(|n| (n.clone(), ConstValue::Rustc))
        .collect();
    let body = translate_instance_with(&item, "k.rs", &[], &rustc).expect("translates");
    offload_mir::validate_translated(&body).expect("valid with its items");
    let invalid = offload_mir::validate(&body).expect_err("items are not filled in");
    assert!(invalid.message.contains("was not filled in"), "{invalid}");

    let values = [
        ConstValue::Int(8),
        ConstValue::Int(2),
        ConstValue::Float(0.25),
        ConstValue::Int(16),
    ];
    let mut filled = String::new();
    let mut seen = Vec::new();
    for piece in offload_mir::pieces(&body) {
        match piece {
            Piece::Text(text) => filled.push_str(&text),
            Piece::Item { k, ty } => {
                seen.push((k, ty));
                match (values[k as usize], ty) {
                    (ConstValue::Int(v), None) => filled.push_str(&v.to_string()),
                    (ConstValue::Int(v), Some(t)) => filled.push_str(&format!("{v}{t}")),
                    (ConstValue::Float(v), Some(ScalarTy::F32)) => {
                        filled.push_str(&format!("{:#x}_f32", (v as f32).to_bits()))
                    }
                    other => panic!("unexpected item use {other:?}"),
                }
            }
        }
    }
    assert!(
        seen.contains(&(0, None)),
        "the chunk length in the type: {seen:?}"
    );
    assert!(
        seen.contains(&(1, None)),
        "the radius in the type: {seen:?}"
    );
    assert!(
        seen.contains(&(2, Some(ScalarTy::F32))),
        "DT as an f32: {seen:?}"
    );
    assert!(
        seen.contains(&(3, Some(ScalarTy::I32))),
        "TILE, typed as a literal: {seen:?}"
    );

    let known: Vec<(String, ConstValue)> = names.iter().cloned().zip(values).collect();
    let from_source = translate_instance_with(&item, "k.rs", &[], &known).expect("translates");
    let parsed = offload_mir::parse(&filled).expect("the filled-in text parses");
    offload_mir::validate(&parsed).expect("and validates");
    assert_eq!(parsed.to_string(), from_source.to_string());
}

/// A `Shared2D` tile sized by an outside `const` item travels with its length as the
/// Rust expression `ROWS * COLS`, which a tool that read the item's value multiplies out.
#[test]
fn tiles_sized_by_outside_const_items_name_their_length() {
    let item: syn::ItemFn = syn::parse_quote! {
        #[offload_kernel]
        fn k(mut y: Region<f32, Linear1D>) {
            let mut tile = Shared2D::<f32, { 2 * 2 }, SIDE>::new();
            tile.write(1.0);
            sync_threads();
            if let Some(v) = y.get_mut() {
                *v = tile[(0, 1)] + tile.len() as f32;
            }
        }
    };
    let names = kernel_consts(&item);
    assert_eq!(names, ["SIDE", "{ 2 * 2 } * SIDE"]);
    let rustc: Vec<(String, ConstValue)> = names
        .iter()
        .map(|n| (n.clone(), ConstValue::Rustc))
        .collect();
    let body = translate_instance_with(&item, "k.rs", &[], &rustc).expect("translates");
    let text = body.to_string();
    assert!(text.contains("Shared<f32, \u{1}item 1\u{1}>"), "{text:?}");
    let known = [
        ("SIDE".to_string(), ConstValue::Int(8)),
        ("{ 2 * 2 } * SIDE".to_string(), ConstValue::Int(32)),
    ];
    let body = translate_instance_with(&item, "k.rs", &[], &known).expect("translates");
    assert!(body.to_string().contains("Shared<f32, 32>"));
}

/// No text of a kernel, its file's name included, can forge the mark of an item: the
/// printer escapes the mark's character in strings.
#[test]
fn item_marks_cannot_be_forged_by_names() {
    use offload_mir::Piece;
    let item: syn::ItemFn = syn::parse_quote! {
        #[offload_kernel]
        fn k(mut y: Region<f32, Linear1D>) {
            if let Some(v) = y.get_mut() {
                *v = 1.0;
            }
        }
    };
    let file = "src/{item 0 usize}\u{1}item 0 usize\u{1}.rs";
    let body = translate_instance_with(&item, file, &[], &[]).expect("translates");
    let pieces = offload_mir::pieces(&body);
    assert!(matches!(&pieces[..], [Piece::Text(_)]), "{pieces:?}");
    let parsed = offload_mir::parse(&body.to_string()).expect("parses back");
    assert_eq!(parsed.file, file);
}
