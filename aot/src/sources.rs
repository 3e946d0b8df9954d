//! Finding a crate's kernels in its sources and linking each instance, as the macros and
//! the runtime would.

use crate::Error;
use offload_frontend::{
    ConstValue, TranslateError, device_call_paths, instances, kernel_consts, strategy_consts,
    translate_device, translate_instance_with,
};
use offload_mir::{Body, Linked};
use std::collections::HashMap;
use std::path::Path;
use syn::visit::Visit;

/// A source file of the crate, parsed.
pub(crate) struct SourceFile {
    /// The path relative to the crate's manifest, as messages name it.
    name: String,
    syntax: syn::File,
}

/// Every `.rs` file under `dir`, in path order. A file `syn` cannot parse is skipped with
/// a warning: rustc reports it if it is part of the crate.
pub(crate) fn read(dir: &Path, manifest: &Path) -> Result<Vec<SourceFile>, Error> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| Error::Io {
            path: e.path().unwrap_or(dir).to_path_buf(),
            source: e.into(),
        })?;
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .strip_prefix(manifest)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        match syn::parse_file(&text) {
            Ok(syntax) => files.push(SourceFile { name, syntax }),
            Err(e) => {
                let at = e.span().start();
                println!(
                    "cargo:warning={name}:{}:{}: not read for kernels: {e}",
                    at.line,
                    at.column + 1
                );
            }
        }
    }
    Ok(files)
}

/// A kernel instance linked with the device functions it calls, ready to compile.
pub(crate) struct Kernel {
    /// `saxpy`, or `scale::<f32>` for an instance of a generic kernel.
    pub display: String,
    pub linked: Linked,
    file: String,
    line: usize,
    column: usize,
}

impl Kernel {
    /// A build error at the kernel.
    pub(crate) fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::Kernel {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            kernel: self.display.clone(),
            message: message.to_string(),
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
/// integer `const` items (what strategies such as `Chunked<COLS>` may name).
struct Collect<'a> {
    file: &'a str,
    found: Vec<Marked<'a>>,
    consts: Vec<(String, ConstValue)>,
}

impl<'a> Visit<'a> for Collect<'a> {
    fn visit_item_const(&mut self, item: &'a syn::ItemConst) {
        if let Some(value) = offload_frontend::const_value(&item.expr) {
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
        syn::visit::visit_item_fn(self, item);
    }
}

/// A device function's MIR instances and the names of the functions it calls.
struct Device<'a> {
    bodies: Vec<Body>,
    calls: Vec<String>,
    marked: &'a Marked<'a>,
}

fn translate_error(file: &str, kernel: &str, e: TranslateError) -> Error {
    let at = e.span.start();
    Error::Kernel {
        file: file.to_string(),
        line: at.line,
        column: at.column + 1,
        kernel: kernel.to_string(),
        message: e.message,
    }
}

/// The last segment of each device function `block` calls.
fn called_names(block: &syn::Block) -> Vec<String> {
    device_call_paths(block)
        .iter()
        .filter_map(|p| p.segments.last().map(|s| s.ident.to_string()))
        .collect()
}

/// Every kernel instance of `files`, linked.
pub(crate) fn link_kernels(files: &[SourceFile]) -> Result<Vec<Kernel>, Error> {
    let mut marked = Vec::new();
    let mut consts: Vec<(String, ConstValue)> = Vec::new();
    for file in files {
        let mut collect = Collect {
            file: &file.name,
            found: Vec::new(),
            consts: Vec::new(),
        };
        collect.visit_file(&file.syntax);
        marked.extend(collect.found);
        consts.extend(collect.consts);
    }

    let mut devices: HashMap<String, Vec<Device<'_>>> = HashMap::new();
    for m in marked.iter().filter(|m| !m.kernel) {
        let name = m.item.sig.ident.to_string();
        let error = |e| translate_error(m.file, &name, e);
        let mut bodies = Vec::new();
        for subst in instances(&m.item.sig).map_err(error)? {
            bodies.push(translate_device(m.item, m.file, &subst).map_err(error)?);
        }
        let calls = called_names(&m.item.block);
        devices.entry(name).or_default().push(Device {
            bodies,
            calls,
            marked: m,
        });
    }

    let mut kernels = Vec::new();
    for m in marked.iter().filter(|m| m.kernel) {
        let name = m.item.sig.ident.to_string();
        let error = |e| translate_error(m.file, &name, e);
        let Some(device) = reachable_devices(m, &devices) else {
            continue;
        };
        let Some(values) = strategy_values(m, &consts) else {
            continue;
        };
        // The body's constants that are integer `const` items of this crate, each with one
        // value; a name the body declares itself needs none.
        let mut values = values;
        for name in kernel_consts(m.item) {
            let found: Vec<ConstValue> = (consts.iter().filter(|(c, _)| *c == name))
                .map(|(_, v)| *v)
                .collect();
            if let ([value], false) = (&found[..], values.iter().any(|(c, _)| *c == name)) {
                values.push((name, *value));
            }
        }
        let unresolved = |e: &TranslateError| e.message.starts_with("cannot find `");
        let mut skipped = false;
        for subst in instances(&m.item.sig).map_err(error)? {
            let body = match translate_instance_with(m.item, m.file, &subst, &values) {
                Ok(body) => body,
                // A constant the crate defines by an expression, or in several places:
                // the JIT has rustc's value.
                Err(e) if unresolved(&e) => {
                    println!(
                        "cargo:warning={}: kernel `{name}` is not built ahead of time: {}",
                        m.file, e.message
                    );
                    skipped = true;
                    break;
                }
                Err(e) => return Err(error(e)),
            };
            let display = if subst.is_empty() {
                name.clone()
            } else {
                let types: Vec<&str> = subst.iter().map(|(_, t)| t.name()).collect();
                format!("{name}::<{}>", types.join(", "))
            };
            let at = m.item.sig.ident.span().start();
            let linked = offload_mir::link(&body, &device).map_err(|e| Error::Kernel {
                file: m.file.to_string(),
                line: at.line,
                column: at.column + 1,
                kernel: display.clone(),
                message: e.to_string(),
            })?;
            let kernel = Kernel {
                display,
                linked,
                file: m.file.to_string(),
                line: at.line,
                column: at.column + 1,
            };
            kernels.push(kernel);
        }
        if skipped {
            let instance = format!("{name}::<");
            kernels.retain(|k| k.display != name && !k.display.starts_with(&instance));
        }
    }
    Ok(kernels)
}

/// The values of the `const` items the kernel's strategies name, or `None` (with a
/// warning) when one is not an integer `const` of this crate with a single value: such a
/// kernel is left to the JIT.
fn strategy_values(
    kernel: &Marked<'_>,
    consts: &[(String, ConstValue)],
) -> Option<Vec<(String, ConstValue)>> {
    let mut values = Vec::new();
    for name in strategy_consts(&kernel.item.sig) {
        let found: Vec<ConstValue> = consts
            .iter()
            .filter(|(c, _)| *c == name)
            .map(|(_, v)| *v)
            .collect();
        match found[..] {
            [value] => values.push((name, value)),
            _ => {
                println!(
                    "cargo:warning={}: kernel `{}` is not built ahead of time: its strategy names `{name}`, which is not one integer `const` of this crate",
                    kernel.file, kernel.item.sig.ident
                );
                return None;
            }
        }
    }
    Some(values)
}

/// The MIR of every device function the kernel reaches, or `None` (with a warning) when
/// a call does not name exactly one device function of this crate: such a kernel is
/// left to the JIT, which resolves its calls as Rust does.
fn reachable_devices<'a>(
    kernel: &Marked<'_>,
    devices: &'a HashMap<String, Vec<Device<'a>>>,
) -> Option<Vec<&'a Body>> {
    let name = &kernel.item.sig.ident;
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
                bodies.extend(&device.bodies);
                stack.extend(device.calls.iter().cloned());
            }
            found => {
                let why = match found {
                    Some(many) => format!(
                        "more than one `#[offload_device] fn {callee}` ({})",
                        many.iter()
                            .map(|d| d.marked.file)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None => {
                        format!("`{callee}` is not an `#[offload_device]` function of this crate")
                    }
                };
                println!(
                    "cargo:warning={}: kernel `{name}` is not built ahead of time: {why}",
                    kernel.file
                );
                return None;
            }
        }
    }
    Some(bodies)
}
