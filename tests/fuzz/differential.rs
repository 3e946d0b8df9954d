//! Differential fuzzing of the whole pipeline: generated kernels ([`offload_fuzz`]: MIR,
//! every other one mutated, and Rust source through the translator) go through `link` and, when it accepts them, through the
//! lowering and a backend; the MIR interpreter ([`offload_mir::interp`]) is the oracle.
//! Shared by the integration tests (the CPU backend) and `offload-bench fuzz` (a GPU).
//!
//! Each program ends in one class ([`Class`]); these are failures:
//!
//! - `link` accepted a program on which the interpreter finds undefined behaviour (an
//!   index out of bounds, a division by zero or overflow): the verifier let it through;
//! - `link` refused a program the generator made safe and canonical (a false positive);
//! - the lowering or the CPU backend failed on a linked program, or its results differ
//!   from the interpreter's (data, or which panic).
//!
//! `OFFLOAD_FUZZ_PRINT=1` prints each program (its MIR, launch and arguments) before
//! running it. On a GPU, programs with subgroup operations are skipped (the
//! interpreter's subgroups are one lane wide, as on the CPU).

use offload::{DeviceBuffer, DynamicArg, Error, KernelArg, KernelDescriptor, LaunchOptions};
use offload_fuzz::{Program, compare, program};
use offload_mir::interp::{self, ArgValue, InterpError, Options, Outcome};
use offload_mir::{Body, ScalarTy, Ty};
use std::fmt;

/// What became of one program.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Refused by `link`, and deliberately unsafe or mutated: a clean error.
    Refused,
    /// Accepted, and undefined or too long in the interpreter (a mutant that loops, or
    /// reaches `unreachable`): nothing to compare.
    Skipped,
    /// Ran on the CPU backend with the interpreter's results, without a panic.
    Agreed,
    /// Ran on the CPU backend and panicked as the interpreter did.
    AgreedPanic,
    /// Ran without a panic, with results that depend on the order threads ran in (a
    /// contended atomic's previous value is used), and differed from the interpreter's
    /// order: nothing to compare.
    OrderDependent,
    /// A failure, described.
    Failed(String),
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Class::Failed(why) => write!(f, "FAILED: {why}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Runs one program through every stage and classifies it.
pub fn check(seed: u64, gpu: bool) -> Class {
    let (p, mutated) = match program(seed) {
        Ok(p) => p,
        Err(e) => return Class::Failed(e),
    };
    if std::env::var_os("OFFLOAD_FUZZ_PRINT").is_some() {
        eprintln!("{}\n{:?}\n{:?}", p.body, p.launch, p.args);
    }
    let trusted = !mutated && p.broken.is_none();
    let linked = match offload_mir::link(&p.body, &[]) {
        Ok(linked) => linked,
        Err(e) if trusted => return Class::Failed(format!("link refused a safe program: {e}")),
        Err(_) => return Class::Refused,
    };
    if gpu && uses_subgroups(&p.body) {
        return Class::Skipped;
    }
    let mut expected = p.args.clone();
    let options = Options {
        max_steps: 2_000_000,
        f32_atomic_add_flushes_subnormals: gpu,
    };
    let outcome = match interp::run(&p.body, &p.launch, &mut expected, &options) {
        Ok(outcome) => outcome,
        Err(
            e @ (InterpError::IndexOutOfBounds { .. }
            | InterpError::DivisionByZero { .. }
            | InterpError::DivisionOverflow { .. }),
        ) => {
            return Class::Failed(format!(
                "link accepted a program with undefined behaviour: {e}"
            ));
        }
        Err(_) => return Class::Skipped,
    };
    // The linked body, printed, is what the runtime parses and links again.
    let mir: &'static str = Box::leak(linked.body().to_string().into_boxed_str());
    let name: &'static str = Box::leak(p.body.name.clone().into_boxed_str());
    let raw = (p.body.blocks.iter()).any(|b| b.statements.iter().any(|s| s.raw));
    let descriptor = if raw {
        // SAFETY: the generator writes raw reads only at indices below the slice's
        // length (`get_unchecked(x.len() - 1)` of a non-empty slice).
        unsafe { KernelDescriptor::new_unsafe(name, mir, &[]) }
    } else {
        KernelDescriptor::new(name, mir, &[])
    };
    let descriptor: &'static KernelDescriptor = Box::leak(Box::new(descriptor));
    let mut actual = p.args.clone();
    let result = launch(descriptor, &p, &mut actual, gpu);
    let mut before = p.args.clone();
    if p.atomics_on_device && outcome.panic.is_some() {
        // Device buffers are updated where they live, also by a launch that panics: only
        // host data is all or nothing.
        for ((_, decl), (b, a)) in p.body.args().zip(before.iter_mut().zip(&actual)) {
            if matches!(decl.ty, Ty::Atomic(_)) {
                *b = a.clone();
            }
        }
    }
    judge(&p.body, &before, &expected, &actual, &outcome, result)
}

/// Compares the CPU backend's run with the interpreter's.
fn judge(
    body: &Body,
    before: &[ArgValue],
    expected: &[ArgValue],
    actual: &[ArgValue],
    outcome: &Outcome,
    result: Result<(), Error>,
) -> Class {
    match (&outcome.panic, result) {
        (None, Ok(())) => match compare(expected, actual) {
            Ok(()) => Class::Agreed,
            Err(_) if outcome.order_dependent => Class::OrderDependent,
            Err(m) => Class::Failed(format!("results differ from the interpreter's: {m:?}")),
        },
        (Some(_), Err(Error::KernelPanic { message, .. })) => {
            let known: Vec<String> = outcome.panics.iter().map(|p| p.message(body)).collect();
            if !known.contains(&message) {
                return Class::Failed(format!(
                    "the backend panicked with {message:?}; the interpreter's threads with {known:?}"
                ));
            }
            match compare(before, actual) {
                Ok(()) => Class::AgreedPanic,
                Err(m) => Class::Failed(format!("a panicking launch changed the data: {m:?}")),
            }
        }
        (None, Err(e)) => {
            Class::Failed(format!("the backend failed where the interpreter ran: {e}"))
        }
        (Some(p), Ok(())) => Class::Failed(format!(
            "the interpreter panicked ({}) and the backend did not",
            p.message(body)
        )),
        (Some(_), Err(e)) => Class::Failed(format!("the backend failed: {e}")),
    }
}

/// Launches `p` on the CPU backend over `args`, which it updates in place.
fn launch(
    descriptor: &'static KernelDescriptor,
    p: &Program,
    args: &mut [ArgValue],
    gpu: bool,
) -> Result<(), Error> {
    let device = offload::devices().iter().position(|d| {
        if gpu {
            matches!(d, offload::Device::Cuda { .. })
        } else {
            *d == offload::Device::Cpu
        }
    });
    let Some(device) = device else {
        return Err(Error::InvalidLaunch(
            "OFFLOAD_FUZZ_DEVICE=cuda, but there is no CUDA GPU".into(),
        ));
    };
    let options = LaunchOptions {
        workgroup_dim: Some(p.launch.workgroups),
        thread_dim: Some(p.launch.threads),
        dyn_cache: p.launch.dyn_shared_bytes,
        device: Some(device),
        ..LaunchOptions::DEFAULT
    };
    let types: Vec<Ty> = p.body.args().map(|(_, d)| d.ty).collect();
    let mut bytes: Vec<Vec<u8>> = args.iter().map(to_bytes).collect();
    // Atomics the program keeps on the device, as buffers made from their bytes.
    let on = &offload::devices()[device];
    let mut buffers: Vec<Option<DeviceAtomic>> = Vec::new();
    for (ty, data) in types.iter().zip(&bytes) {
        buffers.push(match ty {
            Ty::Atomic(elem) if p.atomics_on_device => Some(DeviceAtomic::upload(on, *elem, data)?),
            _ => None,
        });
    }
    let mut kernel_args = Vec::new();
    let all = types.iter().zip(args.iter()).zip(bytes.iter_mut());
    for (((ty, arg), data), buffer) in all.zip(buffers.iter_mut()) {
        if let Some(buffer) = buffer {
            kernel_args.push(buffer.arg());
            continue;
        }
        let dynamic = match (*ty, arg) {
            (Ty::Region(elem, strategy), ArgValue::Buffer { layout, .. }) => DynamicArg::Region {
                elem,
                strategy,
                data,
                layout,
            },
            (Ty::Slice(elem), ArgValue::Buffer { .. }) => DynamicArg::Slice { elem, data },
            (Ty::Atomic(elem), ArgValue::Buffer { .. }) => DynamicArg::Atomic { elem, data },
            (Ty::Scalar(ty), ArgValue::Scalar(c)) => DynamicArg::Scalar {
                ty,
                bits: interp::const_bits(*c),
            },
            _ => {
                return Err(Error::InvalidLaunch(
                    "the generated arguments do not match the kernel".into(),
                ));
            }
        };
        kernel_args.push(KernelArg::dynamic(dynamic)?);
    }
    let result = offload::launch(descriptor, options, &mut kernel_args);
    drop(kernel_args);
    for (data, buffer) in bytes.iter_mut().zip(&buffers) {
        if let Some(buffer) = buffer {
            *data = buffer.download()?;
        }
    }
    for (arg, data) in args.iter_mut().zip(&bytes) {
        from_bytes(arg, data);
    }
    result
}

/// An atomic argument kept on the device: a `DeviceBuffer` of its element type.
enum DeviceAtomic {
    I32(DeviceBuffer<i32>),
    U32(DeviceBuffer<u32>),
    I64(DeviceBuffer<i64>),
    U64(DeviceBuffer<u64>),
    F32(DeviceBuffer<f32>),
    F64(DeviceBuffer<f64>),
    F16(DeviceBuffer<offload::f16>),
    Bf16(DeviceBuffer<offload::bf16>),
}

/// `$body` with `$b` bound to the buffer of whichever element type `$atomic` holds.
macro_rules! each_atomic {
    ($atomic:expr, $b:ident => $body:expr) => {
        match $atomic {
            DeviceAtomic::I32($b) => $body,
            DeviceAtomic::U32($b) => $body,
            DeviceAtomic::I64($b) => $body,
            DeviceAtomic::U64($b) => $body,
            DeviceAtomic::F32($b) => $body,
            DeviceAtomic::F64($b) => $body,
            DeviceAtomic::F16($b) => $body,
            DeviceAtomic::Bf16($b) => $body,
        }
    };
}

impl DeviceAtomic {
    /// A buffer on `device` holding `bytes`, little-endian elements of type `elem`.
    fn upload(device: &offload::Device, elem: ScalarTy, bytes: &[u8]) -> Result<Self, Error> {
        fn values<T, const N: usize>(bytes: &[u8], from: fn([u8; N]) -> T) -> Vec<T> {
            let word = |c: &[u8]| from(c.try_into().expect("whole elements"));
            bytes.chunks_exact(N).map(word).collect()
        }
        Ok(match elem {
            ScalarTy::I32 => Self::I32(DeviceBuffer::from_slice(
                device,
                &values(bytes, i32::from_le_bytes),
            )?),
            ScalarTy::U32 => Self::U32(DeviceBuffer::from_slice(
                device,
                &values(bytes, u32::from_le_bytes),
            )?),
            ScalarTy::I64 => Self::I64(DeviceBuffer::from_slice(
                device,
                &values(bytes, i64::from_le_bytes),
            )?),
            ScalarTy::U64 => Self::U64(DeviceBuffer::from_slice(
                device,
                &values(bytes, u64::from_le_bytes),
            )?),
            ScalarTy::F32 => Self::F32(DeviceBuffer::from_slice(
                device,
                &values(bytes, f32::from_le_bytes),
            )?),
            ScalarTy::F64 => Self::F64(DeviceBuffer::from_slice(
                device,
                &values(bytes, f64::from_le_bytes),
            )?),
            ScalarTy::F16 => Self::F16(DeviceBuffer::from_slice(
                device,
                &values(bytes, offload::f16::from_le_bytes),
            )?),
            ScalarTy::Bf16 => Self::Bf16(DeviceBuffer::from_slice(
                device,
                &values(bytes, offload::bf16::from_le_bytes),
            )?),
            other => {
                return Err(Error::InvalidLaunch(format!(
                    "no atomics of `{other}` on a device"
                )));
            }
        })
    }

    fn arg(&mut self) -> KernelArg<'_> {
        each_atomic!(self, b => KernelArg::atomic(b))
    }

    /// The buffer's elements as little-endian bytes.
    fn download(&self) -> Result<Vec<u8>, Error> {
        each_atomic!(self, b => Ok(b.to_vec()?.iter().flat_map(|v| v.to_le_bytes()).collect()))
    }
}

/// Whether the body asks anything of its subgroup (its size and lane included).
fn uses_subgroups(body: &Body) -> bool {
    body.blocks
        .iter()
        .flat_map(|b| &b.statements)
        .any(|s| matches!(s.rvalue, offload_mir::Rvalue::Subgroup(..)))
}

/// Each element's bits as bytes, little end first, at the element's size.
fn to_bytes(arg: &ArgValue) -> Vec<u8> {
    match arg {
        ArgValue::Buffer { elem, data, .. } => data
            .iter()
            .flat_map(|bits| bits.to_le_bytes().into_iter().take(elem.size_bytes()))
            .collect(),
        ArgValue::Scalar(_) => Vec::new(),
    }
}

fn from_bytes(arg: &mut ArgValue, bytes: &[u8]) {
    if let ArgValue::Buffer { elem, data, .. } = arg {
        let size = elem.size_bytes();
        for (value, chunk) in data.iter_mut().zip(bytes.chunks(size)) {
            let mut word = [0u8; 8];
            word[..size].copy_from_slice(chunk);
            *value = u64::from_le_bytes(word) & interp::mask(*elem);
            if *elem == ScalarTy::Bool {
                *value &= 1;
            }
        }
    }
}

/// Runs the programs of `seeds`; returns how many ended in each class (by name) and a
/// line per failure.
pub fn run(
    seeds: std::ops::Range<u64>,
    gpu: bool,
) -> (std::collections::BTreeMap<String, u64>, Vec<String>) {
    let mut tally: std::collections::BTreeMap<String, u64> = Default::default();
    let mut failures = Vec::new();
    for seed in seeds {
        let class = check(seed, gpu);
        let key = match &class {
            Class::Failed(_) => "Failed".to_string(),
            other => format!("{other:?}"),
        };
        *tally.entry(key).or_default() += 1;
        if let Class::Failed(why) = class {
            failures.push(format!("seed {seed}: {why}"));
        }
    }
    (tally, failures)
}
