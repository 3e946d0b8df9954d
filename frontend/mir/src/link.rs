//! Linking: from a kernel's MIR and the device functions it may call to the one verified
//! body that is lowered.
//!
//! [`link`] is the only way to a [`Linked`] receipt, and lowering accepts nothing else,
//! so every kernel that runs, from the macro, a build script, `offload-opt` or a test, has
//! passed the same steps:
//!
//! 1. the kernel and every device function are valid MIR ([`validate`]);
//! 2. device-function calls are inlined ([`crate::inline`]);
//! 3. branches on constants are folded and unreachable blocks dropped (`simplify`), so
//!    the MLIR pipeline never sees code it would cut off itself;
//! 4. the result is valid MIR again, and the safety verifier accepts it: barriers and
//!    subgroup operations in uniform control flow and no shared-memory races
//!    ([`crate::convergence`]), and every access in bounds and owned
//!    ([`crate::safety`]).

use crate::ir::*;
use crate::{Validated, ValidationError, validate};
use std::fmt;

/// A kernel with its device functions inlined, simplified, validated and verified safe.
#[derive(Clone, Debug, PartialEq)]
pub struct Linked {
    body: Body,
    proven: crate::safety::Proven,
}

impl Linked {
    pub fn body(&self) -> &Body {
        &self.body
    }

    /// What the safety verifier proved of the body beyond its safety.
    pub fn proven(&self) -> &crate::safety::Proven {
        &self.proven
    }

    /// The receipt of validation, for code that needs only that.
    pub fn validated(&self) -> Validated<'_> {
        validate(&self.body).expect("a linked body was validated when linked")
    }
}

/// What a target fixes that MIR leaves open, for [`Linked::for_target`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TargetFacts {
    /// Lanes per subgroup: 32 on NVIDIA GPUs, 1 on the CPU backend.
    pub subgroup_size: u32,
}

impl Linked {
    /// This kernel with what `target` fixes folded in: the subgroup size, on a one-lane
    /// target every subgroup operation's value, then constant
    /// branches folded again. Lowering calls this so that no branch on a target constant is left for
    /// MLIR's canonicalizer to cut off (see `simplify`). Folding constants keeps what
    /// the verifier proved.
    pub fn for_target(&self, target: TargetFacts) -> Linked {
        let mut body = self.body.clone();
        crate::simplify::specialize(&mut body, target);
        // Panic reports name a site by its number in this body's block order, which the
        // runtime decodes with the linked body: the numbers must not move.
        crate::simplify::simplify_keeping_sites(&mut body);
        // Folding takes accesses away and adds none, so what was proven still holds.
        Linked {
            body,
            proven: self.proven.clone(),
        }
    }
}

impl std::ops::Deref for Linked {
    type Target = Body;
    fn deref(&self) -> &Body {
        &self.body
    }
}

/// One reason the safety verifier refused a kernel, at its MIR location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub block: Option<BasicBlock>,
    pub span: Span,
    pub message: String,
}

/// Why a kernel could not be linked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The kernel or a device function is not valid MIR.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// What was given to link as the kernel is a device function.
    #[error("{file}: in kernel `{kernel}`: only a kernel can be linked; this is a device function")]
    NotAKernel { kernel: String, file: String },
    /// A call could not be inlined.
    #[error("{file}: in kernel `{kernel}`: {error}")]
    Inline {
        kernel: String,
        file: String,
        error: crate::inline::InlineError,
    },
    /// The safety verifier refused the linked kernel; every violation found is listed.
    #[error("{}", render(kernel, file, violations))]
    Unsafe {
        kernel: String,
        file: String,
        violations: Vec<Violation>,
    },
}

fn render(kernel: &str, file: &str, violations: &[Violation]) -> String {
    let mut out = String::new();
    for (i, v) in violations.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let block = v.block.map(|b| format!(", {b}")).unwrap_or_default();
        out.push_str(&format!(
            "{file}:{}: in kernel `{kernel}`{block}: {}",
            v.span, v.message
        ));
    }
    out
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.span, self.message)
    }
}

/// Links `kernel` with the device functions it may call (every instance of each, by
/// name) into one verified body.
pub fn link(kernel: &Body, device_functions: &[&Body]) -> Result<Linked, LinkError> {
    validate(kernel)?;
    if kernel.kind != BodyKind::Kernel {
        return Err(LinkError::NotAKernel {
            kernel: kernel.name.clone(),
            file: kernel.file.clone(),
        });
    }
    let mut by_name: crate::inline::DeviceFunctions = Default::default();
    for f in device_functions {
        validate(f)?;
        by_name.entry(f.name.as_str()).or_default().push(f);
    }
    let mut body =
        crate::inline::inline_calls(kernel, &by_name).map_err(|error| LinkError::Inline {
            kernel: kernel.name.clone(),
            file: kernel.file.clone(),
            error,
        })?;
    crate::simplify::simplify(&mut body);
    validate(&body)?;
    match verify(&body) {
        Ok(proven) => Ok(Linked { body, proven }),
        Err(violations) => Err(LinkError::Unsafe {
            kernel: body.name.clone(),
            file: body.file.clone(),
            violations,
        }),
    }
}

/// Every safety violation of a linked body, or what the verifier proved of it.
fn verify(body: &Body) -> Result<crate::safety::Proven, Vec<Violation>> {
    let mut out = Vec::new();
    let convergence = |e: crate::convergence::ConvergenceError| Violation {
        block: None,
        span: e.span,
        message: e.message,
    };
    if let Err(e) = crate::convergence::check_convergence(body) {
        out.push(convergence(e));
    }
    match crate::safety::check_memory_safety(body) {
        Ok(proven) if out.is_empty() => return Ok(proven),
        Ok(_) => {}
        Err(errors) => out.extend(errors.into_iter().map(|e| Violation {
            block: Some(e.block),
            span: e.span,
            message: e.message,
        })),
    }
    Err(out)
}
