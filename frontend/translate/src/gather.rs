//! Gathering kernels from Rust sources: the marked functions of a set of parsed files
//! (in modules and function bodies too), every instance of each translated, and for each
//! kernel instance the device-function instances it reaches. The one way the build
//! script API (`offload-build`), `offload-opt` and the tests find kernels in source; the
//! runtime's equivalent starts from the descriptors the macros embed.
//!
//! A kernel is translated with the values of the integer `const` items its strategies and
//! body name, when the sources define each exactly once. A kernel whose calls or
//! constants the sources do not resolve (a device function defined twice or not at all,
//! a constant given by an expression) is [`Skipped`] with the reason, not an error: the
//! JIT, which rustc hands the real values, compiles it.

use crate::{
    ConstValue, TranslateError, device_call_paths, instances, kernel_consts, strategy_consts,
    translate_device, translate_instance_with,
};
use offload_mir::Body;
use std::collections::HashMap;
use syn::visit::Visit;

/// A parsed source file, and the name messages give it.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    pub name: &'a str,
    pub syntax: &'a syn::File,
}

/// A kernel instance, translated, with the device-function instances it reaches.
pub struct KernelInstance {
    /// `saxpy`, or `scale::<f32>` for an instance of a generic kernel.
    pub display: String,
    pub body: Body,
    /// Every instance of every device function the kernel reaches, to link it with.
    pub devices: Vec<Body>,
    /// Where the kernel is declared: its file, line and column (from 1).
    pub file: String,
    pub line: usize,
    pub column: usize,
}

/// A kernel the sources do not say enough to translate, and why.
pub struct Skipped {
    pub kernel: String,
    pub file: String,
    pub why: String,
}

/// What [`gather`] found.
#[derive(Default)]
pub struct Gathered {
    pub kernels: Vec<KernelInstance>,
    /// Every instance of every device function, in source order.
    pub devices: Vec<Body>,
    pub skipped: Vec<Skipped>,
}

/// A translation error, at its function.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: in `{function}`: {message}")]
pub struct GatherError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub function: String,
    pub message: String,
}

impl GatherError {
    fn at(file: &str, function: &str, e: TranslateError) -> GatherError {
        let at = e.span.start();
        GatherError {
            file: file.to_string(),
            line: at.line,
            column: at.column + 1,
            function: function.to_string(),
            message: e.message,
        }
    }
}

/// A function marked `#[offload_kernel]` or `#[offload_device]`, and where.
struct Marked<'a> {
    item: &'a syn::ItemFn,
    file: &'a str,
    kernel: bool,
}

/// Collects the marked functions of a file, in modules and function bodies too, and its
/// integer `const` items outside functions (what strategies such as `Chunked<COLS>` and
/// bodies may name; one declared in a function is that function's, as in Rust).
struct Collect<'a> {
    file: &'a str,
    found: Vec<Marked<'a>>,
    consts: Vec<(String, ConstValue)>,
    /// How many functions the visit is inside.
    in_functions: usize,
}

impl<'a> Visit<'a> for Collect<'a> {
    fn visit_item_const(&mut self, item: &'a syn::ItemConst) {
        if self.in_functions == 0
            && let Some(value) = crate::const_value(&item.expr)
        {
            self.consts.push((item.ident.to_string(), value));
        }
        syn::visit::visit_item_const(self, item);
    }

    fn visit_item_fn(&mut self, item: &'a syn::ItemFn) {
        let marker = |name: &str| {
            item.attrs
                .iter()
                .any(|a| a.path().segments.last().is_some_and(|s| s.ident == name))
        };
        if marker("offload_kernel") || marker("offload_device") {
            self.found.push(Marked {
                item,
                file: self.file,
                kernel: marker("offload_kernel"),
            });
        }
        self.in_functions += 1;
        syn::visit::visit_item_fn(self, item);
        self.in_functions -= 1;
    }
}

/// A device function's instances and the names of the functions it calls.
struct Device<'a> {
    bodies: Vec<Body>,
    calls: Vec<String>,
    marked: &'a Marked<'a>,
}

/// The last segment of each device function `block` calls.
fn called_names(block: &syn::Block) -> Vec<String> {
    device_call_paths(block)
        .iter()
        .filter_map(|p| p.segments.last().map(|s| s.ident.to_string()))
        .collect()
}

/// Every kernel instance of `sources`, translated, with what it reaches.
pub fn gather(sources: &[Source<'_>]) -> Result<Gathered, GatherError> {
    let mut marked = Vec::new();
    let mut consts: Vec<(String, ConstValue)> = Vec::new();
    for source in sources {
        let mut collect = Collect {
            file: source.name,
            found: Vec::new(),
            consts: Vec::new(),
            in_functions: 0,
        };
        collect.visit_file(source.syntax);
        marked.extend(collect.found);
        consts.extend(collect.consts);
    }
    let mut gathered = Gathered::default();
    let mut devices: HashMap<String, Vec<Device<'_>>> = HashMap::new();
    for m in marked.iter().filter(|m| !m.kernel) {
        let name = m.item.sig.ident.to_string();
        let error = |e| GatherError::at(m.file, &name, e);
        let mut bodies = Vec::new();
        for subst in instances(&m.item.sig).map_err(error)? {
            match translate_device(m.item, m.file, &subst) {
                Ok(parts) => bodies.extend(parts),
                Err(_) if crate::optional_instance(&subst) => {}
                Err(e) => return Err(error(e)),
            }
        }
        gathered.devices.extend(bodies.iter().cloned());
        let calls = called_names(&m.item.block);
        devices.entry(name).or_default().push(Device {
            bodies,
            calls,
            marked: m,
        });
    }
    for m in marked.iter().filter(|m| m.kernel) {
        let name = m.item.sig.ident.to_string();
        let skip = |why: String| Skipped {
            kernel: name.clone(),
            file: m.file.to_string(),
            why,
        };
        let reached = match reachable_devices(m, &devices) {
            Ok(reached) => reached,
            Err(why) => {
                gathered.skipped.push(skip(why));
                continue;
            }
        };
        let values = match const_values(m, &consts) {
            Ok(values) => values,
            Err(why) => {
                gathered.skipped.push(skip(why));
                continue;
            }
        };
        let error = |e| GatherError::at(m.file, &name, e);
        let at = m.item.sig.ident.span().start();
        let mut instances_of_it = Vec::new();
        let mut unresolved = None;
        for subst in instances(&m.item.sig).map_err(error)? {
            let body = match translate_instance_with(m.item, m.file, &subst, &values) {
                Ok(body) => body,
                // A constant the sources define by an expression, or in several places.
                Err(e) if e.message.starts_with("cannot find `") => {
                    unresolved = Some(e.message);
                    break;
                }
                // An `f16`/`bf16` instance the body does not support is not built.
                Err(_) if crate::optional_instance(&subst) => continue,
                Err(e) => return Err(error(e)),
            };
            let display = if subst.is_empty() {
                name.clone()
            } else {
                let types: Vec<&str> = subst.iter().map(|(_, t)| t.name()).collect();
                format!("{name}::<{}>", types.join(", "))
            };
            instances_of_it.push(KernelInstance {
                display,
                body,
                devices: reached.clone(),
                file: m.file.to_string(),
                line: at.line,
                column: at.column + 1,
            });
        }
        match unresolved {
            Some(why) => gathered.skipped.push(skip(why)),
            None => gathered.kernels.extend(instances_of_it),
        }
    }
    Ok(gathered)
}

/// The values of the integer `const` items the kernel's strategies name (each must be
/// one `const` of the sources) and of those its body names that the sources define once.
fn const_values(
    kernel: &Marked<'_>,
    consts: &[(String, ConstValue)],
) -> Result<Vec<(String, ConstValue)>, String> {
    let defined = |name: &str| -> Vec<ConstValue> {
        (consts.iter().filter(|(c, _)| c == name))
            .map(|(_, v)| *v)
            .collect()
    };
    let mut values = Vec::new();
    for name in strategy_consts(&kernel.item.sig) {
        match defined(&name)[..] {
            [value] => values.push((name, value)),
            _ => {
                return Err(format!(
                    "its strategy names `{name}`, which is not one integer `const` of these sources"
                ));
            }
        }
    }
    // A name the body declares itself needs none. A tile's `ROWS * COLS` needs none
    // either: with both values known, the translator multiplies them itself.
    for name in kernel_consts(kernel.item) {
        if let ([value], false) = (&defined(&name)[..], values.iter().any(|(c, _)| *c == name)) {
            values.push((name, *value));
        }
    }
    Ok(values)
}

/// Every instance of every device function the kernel reaches, or why a call does not
/// name exactly one device function of the sources.
fn reachable_devices(
    kernel: &Marked<'_>,
    devices: &HashMap<String, Vec<Device<'_>>>,
) -> Result<Vec<Body>, String> {
    let mut seen: Vec<String> = Vec::new();
    let mut stack = called_names(&kernel.item.block);
    let mut bodies = Vec::new();
    while let Some(callee) = stack.pop() {
        if seen.contains(&callee) {
            continue;
        }
        seen.push(callee.clone());
        match devices.get(&callee).map(Vec::as_slice) {
            Some([device]) => {
                bodies.extend(device.bodies.iter().cloned());
                stack.extend(device.calls.iter().cloned());
            }
            Some(many) => {
                let files: Vec<&str> = many.iter().map(|d| d.marked.file).collect();
                return Err(format!(
                    "more than one `#[offload_device] fn {callee}` ({})",
                    files.join(", ")
                ));
            }
            None => {
                return Err(format!(
                    "`{callee}` is not an `#[offload_device]` function of these sources"
                ));
            }
        }
    }
    Ok(bodies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gathered(text: &str) -> Gathered {
        let syntax = syn::parse_file(text).expect("parses");
        gather(&[Source {
            name: "k.rs",
            syntax: &syntax,
        }])
        .expect("gathers")
    }

    #[test]
    fn kernels_take_the_device_functions_they_reach_and_the_constants_they_name() {
        let g = gathered(
            "const N: usize = 4;
            #[offload_device] fn twice(x: f32) -> f32 { half(x) * 4.0 }
            #[offload_device] fn half(x: f32) -> f32 { x * 0.5 }
            #[offload_device] fn unused(x: f32) -> f32 { x }
            mod inner {
                #[offload_kernel] fn k(mut y: Region<f32, Chunked<N>>) {
                    if let Some(c) = y.get_mut() { c[0] = twice(1.0); }
                }
            }
            #[offload_kernel] fn s<T: Float>(mut y: Region<T, Linear1D>) {
                if let Some(v) = y.get_mut() { *v = T::ONE; }
            }
            #[offload_kernel] fn w<T: Float>(mut y: Region<T, Linear1D>, x: &[T]) {
                let t = subgroup_sum(x[0]);
                if let Some(v) = y.get_mut() { *v = t; }
            }",
        );
        let names: Vec<&str> = g.kernels.iter().map(|k| k.display.as_str()).collect();
        // `w` has no 16-bit instances: subgroup operations do not take them.
        assert_eq!(
            names,
            [
                "k",
                "s::<f32>",
                "s::<f64>",
                "s::<f16>",
                "s::<bf16>",
                "w::<f32>",
                "w::<f64>"
            ]
        );
        let reached: Vec<&str> = g.kernels[0]
            .devices
            .iter()
            .map(|b| b.name.as_str())
            .collect();
        assert_eq!(reached, ["twice", "half"]);
        assert!(g.kernels[1].devices.is_empty());
        assert_eq!(g.devices.len(), 3);
        assert!(g.skipped.is_empty());
    }

    #[test]
    fn a_kernel_whose_calls_do_not_resolve_is_skipped_with_why() {
        let g = gathered(
            "#[offload_device] fn f(x: f32) -> f32 { x }
            mod a { #[offload_device] fn f(x: f32) -> f32 { x } }
            #[offload_kernel] fn twice_defined(mut y: Region<f32, Linear1D>) {
                if let Some(v) = y.get_mut() { *v = f(1.0); }
            }
            #[offload_kernel] fn undefined(mut y: Region<f32, Linear1D>) {
                if let Some(v) = y.get_mut() { *v = g(1.0); }
            }",
        );
        assert!(g.kernels.is_empty());
        let why: Vec<String> = g
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.kernel, s.why))
            .collect();
        assert_eq!(
            why,
            [
                "twice_defined: more than one `#[offload_device] fn f` (k.rs, k.rs)",
                "undefined: `g` is not an `#[offload_device]` function of these sources",
            ]
        );
    }
}
