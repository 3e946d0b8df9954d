//! `const` items outside a kernel: which ones a kernel names (in its strategies and its
//! body), and the values that tools reading sources without rustc can give them.

use offload_mir::{Param, ScalarTy};

/// Values of the `const` items a kernel names outside itself (`Chunked<COLS>`, `N` in its
/// body), by name.
pub type ConstValues = [(String, ConstValue)];

/// The value of a `const` item outside a kernel.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ConstValue {
    Int(i128),
    Float(f64),
    /// Known only to rustc (the macro's case): the translation refers to the item
    /// ([`offload_mir::Const::Item`], [`offload_mir::Param::Item`]), by its place in the
    /// list of names, and the macro fills its value in.
    Rustc,
}

/// The `const` items a kernel's signature uses as strategy arguments (`COLS` in
/// `Region<f32, Chunked<COLS>>`), each once, in order. Their values are known to rustc,
/// not to the macro: see [`translate_instance_with`](crate::translate_instance_with).
pub fn strategy_consts(sig: &syn::Signature) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for input in &sig.inputs {
        let syn::FnArg::Typed(arg) = input else {
            continue;
        };
        let syn::Type::Path(p) = &*arg.ty else {
            continue;
        };
        let Some(last) = p.path.segments.last() else {
            continue;
        };
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            continue;
        };
        if last.ident != "Region" {
            continue;
        }
        for a in &args.args {
            let syn::GenericArgument::Type(syn::Type::Path(s)) = a else {
                continue;
            };
            let Some(strategy) = s.path.segments.last() else {
                continue;
            };
            let syn::PathArguments::AngleBracketed(params) = &strategy.arguments else {
                continue;
            };
            for param in &params.args {
                let name = match param {
                    syn::GenericArgument::Type(syn::Type::Path(c)) => c.path.get_ident(),
                    syn::GenericArgument::Const(syn::Expr::Path(c)) => c.path.get_ident(),
                    _ => None,
                };
                if let Some(name) = name.map(|n| n.to_string())
                    && !names.contains(&name)
                {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// The `const` items a kernel may name whose values only rustc knows: those its
/// strategies name ([`strategy_consts`]), then the names in its body that look like
/// constants (`DT`, `TILE_SIZE`: all capitals) and are used as values or as the sizes of
/// shared arrays (`Shared::<f32, TILE>`), and for a `Shared2D` tile sized so, the product
/// of its rows and columns ([`tile_len`]). A name the body declares itself is found there
/// first; the rest take the values the caller gives
/// ([`translate_instance_with`](crate::translate_instance_with)), as integer constants
/// typed by their use, as a literal is.
pub fn kernel_consts(item: &syn::ItemFn) -> Vec<String> {
    use syn::visit::Visit;
    struct Names(Vec<String>);
    impl Names {
        fn add(&mut self, name: String) {
            if !self.0.contains(&name) {
                self.0.push(name);
            }
        }
    }
    impl<'a> Visit<'a> for Names {
        fn visit_path_segment(&mut self, s: &'a syn::PathSegment) {
            let kind = s.ident.to_string();
            if let ("Shared" | "Shared2D", syn::PathArguments::AngleBracketed(args)) =
                (kind.as_str(), &s.arguments)
            {
                let sizes: Vec<&syn::GenericArgument> = args.args.iter().skip(1).collect();
                let named: Vec<String> = sizes.iter().filter_map(|a| size_name(a)).collect();
                for name in &named {
                    self.add(name.clone());
                }
                match sizes[..] {
                    [rows, cols] if !named.is_empty() => self.add(tile_len(rows, cols, None)),
                    [rows, cols, pad] if !named.is_empty() => {
                        self.add(tile_pitch(cols, pad));
                        self.add(tile_len(rows, cols, Some(pad)));
                    }
                    _ => {}
                }
            }
            syn::visit::visit_path_segment(self, s);
        }
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if let Some(id) = p.path.get_ident() {
                let name = id.to_string();
                let constant = name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if constant && !self.0.contains(&name) {
                    self.0.push(name);
                }
            }
            syn::visit::visit_expr_path(self, p);
        }
    }
    let mut names = Names(strategy_consts(&item.sig));
    names.visit_block(&item.block);
    names.0
}

/// The `const` item a shared array's size argument names (`TILE` in `Shared::<f32,
/// TILE>`, also `{ TILE }`), if it names one.
pub(crate) fn size_name(arg: &syn::GenericArgument) -> Option<String> {
    let path = match arg {
        syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => &p.path,
        syn::GenericArgument::Const(syn::Expr::Path(p)) => &p.path,
        syn::GenericArgument::Const(syn::Expr::Block(b)) => match &b.block.stmts[..] {
            [syn::Stmt::Expr(syn::Expr::Path(p), None)] => &p.path,
            _ => return None,
        },
        _ => return None,
    };
    let id = path.get_ident()?.to_string();
    ScalarTy::from_name(&id).is_none().then_some(id)
}

/// A size argument as Rust text: the `const` item it names, or its tokens.
fn size_text(a: &syn::GenericArgument) -> String {
    use quote::ToTokens;
    match size_name(a) {
        Some(name) => name,
        None => a.to_token_stream().to_string(),
    }
}

/// The name under which the length of a `Shared2D` tile whose sizes are `const` items
/// travels: the Rust expression `ROWS * COLS` (`ROWS * (COLS + PAD)` for a padded tile),
/// whose value rustc gives.
pub(crate) fn tile_len(
    rows: &syn::GenericArgument,
    cols: &syn::GenericArgument,
    pad: Option<&syn::GenericArgument>,
) -> String {
    match pad {
        None => format!("{} * {}", size_text(rows), size_text(cols)),
        Some(pad) => format!("{} * ({})", size_text(rows), tile_pitch(cols, pad)),
    }
}

/// Likewise the distance between a padded tile's rows: `COLS + PAD`.
pub(crate) fn tile_pitch(cols: &syn::GenericArgument, pad: &syn::GenericArgument) -> String {
    format!("{} + {}", size_text(cols), size_text(pad))
}

/// The value of a `const` item's initialiser when it is an integer literal, possibly
/// negated (`64`, `-7`): what tools that read sources without rustc can carry into
/// kernels.
pub fn const_value(expr: &syn::Expr) -> Option<ConstValue> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok().map(ConstValue::Int),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => f.base10_parse().ok().map(ConstValue::Float),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => const_value(expr).map(|v| match v {
            ConstValue::Int(i) => ConstValue::Int(-i),
            ConstValue::Float(f) => ConstValue::Float(-f),
            ConstValue::Rustc => ConstValue::Rustc,
        }),
        syn::Expr::Paren(p) => const_value(&p.expr),
        _ => None,
    }
}

/// A strategy's or shared array's number named by `name` (an item, or a tile's `ROWS *
/// COLS`): its value where the caller knows it and it is a `u32`, or the item itself,
/// whose value the macro fills in (rustc then checks that it fits).
pub(crate) fn named_param(consts: &ConstValues, name: &str) -> Option<Param> {
    let k = consts.iter().position(|(c, _)| c == name)?;
    match consts[k].1 {
        ConstValue::Int(v) => u32::try_from(v).ok().map(Param::Value),
        ConstValue::Rustc => Some(Param::Item(k as u32)),
        ConstValue::Float(_) => None,
    }
}
