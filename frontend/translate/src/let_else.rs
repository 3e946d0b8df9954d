//! `let PAT = EXPR else { .. };` rewritten before a body is translated: the statements
//! after it in its block become the `then` block of `if let PAT = EXPR { .. } else { .. }`.
//! Rust requires the `else` block to diverge (rustc checks the kernel's body), so the two
//! forms mean the same, and the translator takes `if let` already (`if let Some(v) =
//! y.get_mut()`, `if let Some(&v) = x.get(i)`).
//!
//! `while let PAT = EXPR { .. }` is first `loop { let PAT = EXPR else { break; }; .. }`,
//! with its label: `break` and `continue` in the body mean the same in both.

use syn::visit_mut::VisitMut;

/// `item` with every `while let` turned into a `loop`, and every `let ... else` into an
/// `if let`.
pub(super) fn rewrite(item: &syn::ItemFn) -> syn::ItemFn {
    let mut item = item.clone();
    LetElse.visit_block_mut(&mut item.block);
    item
}

struct LetElse;

impl VisitMut for LetElse {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::While(w) = e
            && let syn::Expr::Let(l) = &*w.cond
        {
            let (label, pat, expr, body) = (&w.label, &l.pat, &l.expr, &w.body.stmts);
            let span = w.while_token.span;
            *e = syn::parse_quote_spanned! {span=>
                #label loop {
                    let #pat = #expr else { break; };
                    #(#body)*
                }
            };
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        // Inner blocks first, so a `let ... else` in the statements moved below is
        // rewritten too.
        syn::visit_mut::visit_block_mut(self, block);
        let at = block.stmts.iter().rposition(|s| {
            matches!(s, syn::Stmt::Local(syn::Local { init: Some(init), .. }) if init.diverge.is_some())
        });
        let Some(at) = at else {
            return;
        };
        let rest: Vec<syn::Stmt> = block.stmts.drain(at + 1..).collect();
        let syn::Stmt::Local(local) = block.stmts.pop().expect("the statement was found") else {
            unreachable!("found as a `let`")
        };
        let init = local.init.expect("found with an initialiser");
        let (else_token, diverge) = init.diverge.expect("found with an `else`");
        let (pat, expr) = (local.pat, init.expr);
        let span = local.let_token.span;
        let then = syn::Block {
            brace_token: Default::default(),
            stmts: rest,
        };
        let if_let: syn::Expr = syn::parse_quote_spanned! {span=>
            if let #pat = #expr #then #else_token #diverge
        };
        block.stmts.push(syn::Stmt::Expr(if_let, None));
        // A block with several: rewrite the earlier ones, now that the later one moved.
        self.visit_block_mut(block);
    }
}
