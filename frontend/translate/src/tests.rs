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
        let item = &crate::split_locals::split(item).expect("tuple and range locals split");
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
