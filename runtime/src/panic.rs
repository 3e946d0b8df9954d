//! Turning a kernel's panic buffer into an [`Error::KernelPanic`].

use crate::Error;
use offload_mir::{AssertMessage, Body};

/// The words of the panic buffer the lowering's kernel ABI defines: `[count, site,
/// value0, value1, scratch...]`.
pub(crate) type PanicWords = [i64; PANIC_BUFFER_WORDS];

/// The buffer's length, fixed by the lowering; restated here so that a program with only
/// ahead-of-time kernels need not link the lowering, and checked against it when it does.
pub(crate) const PANIC_BUFFER_WORDS: usize = 7;
#[cfg(feature = "jit")]
const _: () = assert!(PANIC_BUFFER_WORDS == offload_lowering::PANIC_BUFFER_WORDS);

/// The error for the first panic recorded in `words`, if any thread panicked.
pub(crate) fn decode(kernel: &str, body: &Body, words: &PanicWords) -> Option<Error> {
    if words[0] == 0 {
        return None;
    }
    let sites = body.panic_sites();
    let site = usize::try_from(words[1]).ok().and_then(|s| sites.get(s));
    let Some((msg, span)) = site else {
        return Some(Error::KernelPanic {
            kernel: kernel.to_string(),
            file: body.file.clone(),
            line: 0,
            column: 0,
            message: format!("a thread panicked at an unknown site ({})", words[1]),
        });
    };
    let message = match msg {
        AssertMessage::BoundsCheck { .. } => {
            format!(
                "index out of bounds: the len is {} but the index is {}",
                words[2], words[3]
            )
        }
        AssertMessage::Panic(text) => text.clone(),
    };
    Some(Error::KernelPanic {
        kernel: kernel.to_string(),
        file: body.file.clone(),
        line: span.line,
        column: span.column,
        message,
    })
}
