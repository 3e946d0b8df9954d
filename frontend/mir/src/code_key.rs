//! The key of a body's compiled code: a hash of everything the code depends on, and of
//! nothing else. Source locations are left out: compiled code reports a panic by its
//! site number, and the runtime turns that into a message from its own body, so a
//! kernel built ahead of time from a file the build script names one way is the same
//! code as the kernel the macro sees under another name for that file.

use crate::{Body, Span};
use sha2::{Digest, Sha256};

/// The hex SHA-256 of `body` printed without its file name and source positions.
pub fn code_key(body: &Body) -> String {
    let mut plain = body.clone();
    plain.file.clear();
    for decl in &mut plain.locals {
        if let Some((_, span)) = &mut decl.debug {
            *span = Span::default();
        }
    }
    for block in &mut plain.blocks {
        for statement in &mut block.statements {
            statement.span = Span::default();
        }
        block.terminator.span = Span::default();
    }
    Sha256::digest(plain.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "// offload-mir v1
kernel k(mut _1: Region<i32, Linear1D>) {
    file \"src/lib.rs\";
    let mut _0: ();
    let mut _2: usize;
    debug y => _1; // 3:12

    bb0: {
        _2 = RegionIndex(_1); // 4:9
        return; // 5:1
    }
}
";
    #[test]
    fn locations_do_not_change_the_key_but_code_does() {
        let key = |text: &str| code_key(&crate::parse(text).expect("test MIR parses"));
        let base = key(KERNEL);
        assert_eq!(base.len(), 64);
        let moved = KERNEL
            .replace("src/lib.rs", "/home/u/crate/src/lib.rs")
            .replace("// 4:9", "// 40:13")
            .replace("// 3:12", "// 30:2");
        assert_eq!(key(&moved), base);
        let renamed = KERNEL.replace("kernel k(", "kernel k2(");
        assert_ne!(key(&renamed), base);
    }
}
