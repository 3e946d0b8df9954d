//! The symbol a kernel's GPU code is loaded under: its Rust path, mangled as C++
//! (Itanium) names are, which is also the form of Rust's legacy symbols. Profilers and
//! debuggers (`nsys`, `ncu`, `compute-sanitizer`, `cuda-gdb`) demangle it, so a kernel
//! shows as `my_crate::physics::advance` or `my_crate::scale<f16>` rather than as a bare
//! `advance` that several crates may share.
//!
//! The code is compiled (ahead of time or now) under the kernel's MIR name; the runtime
//! renames the PTX entry when it loads it, so code built by a build script, which does not
//! know the module a kernel is declared in, gets the same symbol.

/// The mangled symbol of the kernel shown as `display` (`scale`, or `scale::<f16, u32>`
/// for an instance of a generic kernel) declared in module `path` (`module_path!()`): a
/// nested name of the path's segments and the kernel's, with the instance's types as
/// template arguments, as a function of no parameters. `None` without a path (descriptors made by hand), or where a
/// name is not a plain identifier (a raw `r#type`), which PTX could not spell.
pub(crate) fn mangled(path: &str, display: &str) -> Option<String> {
    let plain = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if path.is_empty() || !path.split("::").all(plain) {
        return None;
    }
    let (name, types) = match display.split_once("::<") {
        Some((name, types)) => (name, types.strip_suffix('>')),
        None => (display, None),
    };
    let mut symbol = String::from("_ZN");
    for segment in path.split("::").chain([name]) {
        symbol.push_str(&format!("{}{segment}", segment.len()));
    }
    if let Some(types) = types {
        symbol.push('I');
        for t in types.split(", ") {
            if !plain(t) {
                return None;
            }
            symbol.push_str(&format!("{}{t}", t.len()));
        }
        symbol.push('E');
    }
    // A function's name, as tools expect of a kernel (Nsight Compute shows a bare
    // nested name as `::advance`): no parameters, and for a template, a `void` result
    // first, as the mangling of a template function has it.
    symbol.push_str(if types.is_some() { "Evv" } else { "Ev" });
    Some(symbol)
}

/// `ptx` with its entry `entry` renamed `symbol`: only the `.entry` directive and the
/// `.globl` comment name it (parameters and shared arrays have names of their own, which
/// keep the old prefix, harmlessly).
pub(crate) fn rename_entry(ptx: &str, entry: &str, symbol: &str) -> String {
    ptx.replacen(&format!(".entry {entry}("), &format!(".entry {symbol}("), 1)
        .replacen(
            &format!(".globl\t{entry}\n"),
            &format!(".globl\t{symbol}\n"),
            1,
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each expected symbol was checked with `c++filt`, which prints the path shown.
    #[test]
    fn a_kernel_is_named_by_its_path() {
        // krate::physics::advance()
        assert_eq!(
            mangled("krate::physics", "advance").as_deref(),
            Some("_ZN5krate7physics7advanceEv")
        );
        // saxpy_app::saxpy()
        assert_eq!(
            mangled("saxpy_app", "saxpy").as_deref(),
            Some("_ZN9saxpy_app5saxpyEv")
        );
        assert_eq!(mangled("", "saxpy"), None);
        assert_eq!(mangled("krate::r#type", "saxpy"), None);
    }

    #[test]
    fn an_instance_carries_its_types_as_template_arguments() {
        // void krate::scale<f16, u32>()
        assert_eq!(
            mangled("krate", "scale::<f16, u32>").as_deref(),
            Some("_ZN5krate5scaleI3f163u32EEvv")
        );
    }

    #[test]
    fn only_the_entry_is_renamed() {
        let ptx = "\t// .globl\tsaxpy\n\n.visible .entry saxpy(\n\t.param .u64 saxpy_param_0\n)\n";
        assert_eq!(
            rename_entry(ptx, "saxpy", "_ZN1k5saxpyEv"),
            "\t// .globl\t_ZN1k5saxpyEv\n\n.visible .entry _ZN1k5saxpyEv(\n\t.param .u64 saxpy_param_0\n)\n"
        );
    }
}
