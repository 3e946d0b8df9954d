//! The LLVM C API, for what MLIR's C API does not offer: compiling an LLVM module to a
//! relocatable object file for a chosen CPU, the object that registers code built ahead
//! of time with the runtime, and linking an object into this process with ORC's JIT
//! linker. Every raw LLVM call of the crate is here.
//!
//! The functions are LLVM's own exported C API (`llvm-c/*.h` of the LLVM that MLIR is
//! built on); `mlir-sys` links all of LLVM's libraries but declares only part of it.

use crate::LowerError;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::{Mutex, Once, OnceLock};

type Context = *mut c_void;
type Module = *mut c_void;
type Value = *mut c_void;
type Type = *mut c_void;
type Builder = *mut c_void;
type Target = *mut c_void;
type TargetMachine = *mut c_void;
type TargetData = *mut c_void;
type MemoryBuffer = *mut c_void;
type Error = *mut c_void;
type PassOptions = *mut c_void;
type Jit = *mut c_void;
type JitBuilder = *mut c_void;
type Dylib = *mut c_void;
type Generator = *mut c_void;

const WEAK_ANY_LINKAGE: u32 = 5;
const APPENDING_LINKAGE: u32 = 7;
const INTERNAL_LINKAGE: u32 = 8;
const PRIVATE_LINKAGE: u32 = 9;
const OPT_AGGRESSIVE: u32 = 3;
const RELOC_PIC: u32 = 2;
const CODE_MODEL_DEFAULT: u32 = 0;
const OBJECT_FILE: u32 = 1;

unsafe extern "C" {
    fn mlirTranslateModuleToLLVMIR(module: mlir_sys::MlirOperation, context: Context) -> Module;

    fn LLVMContextCreate() -> Context;
    fn LLVMModuleCreateWithNameInContext(name: *const c_char, context: Context) -> Module;
    fn LLVMAddGlobal(module: Module, ty: Type, name: *const c_char) -> Value;
    fn LLVMSetInitializer(global: Value, value: Value);
    fn LLVMSetGlobalConstant(global: Value, constant: i32);
    fn LLVMTypeOf(value: Value) -> Type;
    fn LLVMArrayType2(element: Type, count: u64) -> Type;
    fn LLVMStructTypeInContext(
        context: Context,
        fields: *mut Type,
        count: u32,
        packed: i32,
    ) -> Type;
    fn LLVMConstStringInContext2(
        context: Context,
        text: *const c_char,
        length: usize,
        no_nul: i32,
    ) -> Value;
    fn LLVMConstStructInContext(
        context: Context,
        values: *mut Value,
        count: u32,
        packed: i32,
    ) -> Value;
    fn LLVMConstArray2(element: Type, values: *mut Value, count: u64) -> Value;
    fn LLVMConstNull(ty: Type) -> Value;
    fn LLVMSetSection(global: Value, section: *const c_char);
    fn LLVMSetAlignment(global: Value, bytes: u32);
    fn LLVMContextDispose(context: Context);
    fn LLVMDisposeModule(module: Module);
    fn LLVMDisposeMessage(message: *mut c_char);
    fn LLVMGetNamedFunction(module: Module, name: *const c_char) -> Value;
    fn LLVMGetFirstFunction(module: Module) -> Value;
    fn LLVMGetNextFunction(function: Value) -> Value;
    fn LLVMGetFirstGlobal(module: Module) -> Value;
    fn LLVMGetNextGlobal(global: Value) -> Value;
    fn LLVMIsDeclaration(global: Value) -> i32;
    fn LLVMSetLinkage(global: Value, linkage: u32);
    fn LLVMGetLinkage(global: Value) -> u32;
    fn LLVMGlobalGetValueType(global: Value) -> Type;
    fn LLVMCountParamTypes(function_type: Type) -> u32;
    fn LLVMGetParamTypes(function_type: Type, out: *mut Type);
    fn LLVMPointerTypeInContext(context: Context, address_space: u32) -> Type;
    fn LLVMInt64TypeInContext(context: Context) -> Type;
    fn LLVMVoidTypeInContext(context: Context) -> Type;
    fn LLVMFunctionType(ret: Type, params: *mut Type, count: u32, variadic: i32) -> Type;
    fn LLVMAddFunction(module: Module, name: *const c_char, function_type: Type) -> Value;
    fn LLVMGetParam(function: Value, index: u32) -> Value;
    fn LLVMConstInt(ty: Type, value: u64, sign_extend: i32) -> Value;
    fn LLVMAppendBasicBlockInContext(context: Context, f: Value, name: *const c_char) -> Value;
    fn LLVMCreateBuilderInContext(context: Context) -> Builder;
    fn LLVMPositionBuilderAtEnd(builder: Builder, block: Value);
    fn LLVMDisposeBuilder(builder: Builder);
    fn LLVMBuildGEP2(
        builder: Builder,
        ty: Type,
        pointer: Value,
        indices: *mut Value,
        count: u32,
        name: *const c_char,
    ) -> Value;
    fn LLVMBuildLoad2(builder: Builder, ty: Type, pointer: Value, name: *const c_char) -> Value;
    fn LLVMBuildCall2(
        builder: Builder,
        function_type: Type,
        function: Value,
        args: *mut Value,
        count: u32,
        name: *const c_char,
    ) -> Value;
    fn LLVMBuildRetVoid(builder: Builder) -> Value;
    fn LLVMSetTarget(module: Module, triple: *const c_char);
    fn LLVMSetModuleDataLayout(module: Module, layout: TargetData);

    fn LLVMGetDefaultTargetTriple() -> *mut c_char;
    fn LLVMGetHostCPUName() -> *mut c_char;
    fn LLVMGetHostCPUFeatures() -> *mut c_char;
    fn LLVMGetTargetFromTriple(
        triple: *const c_char,
        target: *mut Target,
        error: *mut *mut c_char,
    ) -> i32;
    fn LLVMCreateTargetMachine(
        target: Target,
        triple: *const c_char,
        cpu: *const c_char,
        features: *const c_char,
        level: u32,
        reloc: u32,
        code_model: u32,
    ) -> TargetMachine;
    fn LLVMDisposeTargetMachine(machine: TargetMachine);
    fn LLVMCreateTargetDataLayout(machine: TargetMachine) -> TargetData;
    fn LLVMDisposeTargetData(data: TargetData);
    fn LLVMTargetMachineEmitToMemoryBuffer(
        machine: TargetMachine,
        module: Module,
        file_type: u32,
        error: *mut *mut c_char,
        out: *mut MemoryBuffer,
    ) -> i32;
    fn LLVMCreatePassBuilderOptions() -> PassOptions;
    fn LLVMDisposePassBuilderOptions(options: PassOptions);
    fn LLVMRunPasses(
        module: Module,
        passes: *const c_char,
        machine: TargetMachine,
        options: PassOptions,
    ) -> Error;

    fn LLVMGetBufferStart(buffer: MemoryBuffer) -> *const c_char;
    fn LLVMGetBufferSize(buffer: MemoryBuffer) -> usize;
    fn LLVMDisposeMemoryBuffer(buffer: MemoryBuffer);
    fn LLVMCreateMemoryBufferWithMemoryRangeCopy(
        data: *const c_char,
        length: usize,
        name: *const c_char,
    ) -> MemoryBuffer;
    fn LLVMGetErrorMessage(error: Error) -> *mut c_char;
    fn LLVMDisposeErrorMessage(message: *mut c_char);

    fn LLVMOrcCreateLLJITBuilder() -> JitBuilder;
    fn LLVMOrcCreateLLJIT(jit: *mut Jit, builder: JitBuilder) -> Error;
    fn LLVMOrcLLJITGetMainJITDylib(jit: Jit) -> Dylib;
    fn LLVMOrcLLJITGetGlobalPrefix(jit: Jit) -> c_char;
    fn LLVMOrcLLJITAddObjectFile(jit: Jit, dylib: Dylib, object: MemoryBuffer) -> Error;
    fn LLVMOrcLLJITLookup(jit: Jit, address: *mut u64, name: *const c_char) -> Error;
    fn LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        generator: *mut Generator,
        global_prefix: c_char,
        filter: *const c_void,
        filter_context: *mut c_void,
    ) -> Error;
    fn LLVMOrcJITDylibAddGenerator(dylib: Dylib, generator: Generator);
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn LLVMInitializeX86TargetInfo();
    fn LLVMInitializeX86Target();
    fn LLVMInitializeX86TargetMC();
    fn LLVMInitializeX86AsmPrinter();
}

#[cfg(target_arch = "aarch64")]
unsafe extern "C" {
    fn LLVMInitializeAArch64TargetInfo();
    fn LLVMInitializeAArch64Target();
    fn LLVMInitializeAArch64TargetMC();
    fn LLVMInitializeAArch64AsmPrinter();
}

/// Registers the host's code generator with LLVM, once per process.
fn initialize_host_target() {
    static ONCE: Once = Once::new();
    // SAFETY: LLVM's target initialisers only register the target; `Once` runs them once.
    ONCE.call_once(|| unsafe {
        #[cfg(target_arch = "x86_64")]
        {
            LLVMInitializeX86TargetInfo();
            LLVMInitializeX86Target();
            LLVMInitializeX86TargetMC();
            LLVMInitializeX86AsmPrinter();
        }
        #[cfg(target_arch = "aarch64")]
        {
            LLVMInitializeAArch64TargetInfo();
            LLVMInitializeAArch64Target();
            LLVMInitializeAArch64TargetMC();
            LLVMInitializeAArch64AsmPrinter();
        }
    });
}

/// An LLVM-owned string as a Rust one, disposed of.
///
/// # Safety
///
/// `message` is null or a string LLVM allocated for `LLVMDisposeMessage`.
unsafe fn take_message(message: *mut c_char) -> String {
    if message.is_null() {
        return String::new();
    }
    // SAFETY: a non-null message is a NUL-terminated string owned by us.
    unsafe {
        let text = CStr::from_ptr(message).to_string_lossy().into_owned();
        LLVMDisposeMessage(message);
        text
    }
}

/// Why the CPU code generator or the JIT linker failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JitError {
    #[error("`{entry}` did not translate to LLVM IR")]
    NoLlvmIr { entry: String },
    #[error("the module has no function `{entry}`")]
    NoFunction { entry: String },
    #[error("no code generator for `{triple}`: {message}")]
    NoTarget { triple: String, message: String },
    #[error("LLVM has no target machine for `{triple}` ({cpu})")]
    NoMachine { triple: String, cpu: String },
    #[error("code generation failed: {0}")]
    Codegen(String),
    #[error("the compiled code has no entry point `{symbol}`: {message}")]
    NoEntry { symbol: String, message: String },
    /// A call into LLVM failed while doing `what`, with LLVM's message.
    #[error("{what}: {message}")]
    Llvm { what: &'static str, message: String },
}

/// `Ok` for a null `LLVMErrorRef`, else its message (the error consumed).
///
/// # Safety
///
/// `error` is null or an error LLVM returned and nothing else has consumed.
unsafe fn check(error: Error, what: &'static str) -> Result<(), JitError> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: taking the message consumes the error; the message is ours to dispose.
    let message = unsafe {
        let raw = LLVMGetErrorMessage(error);
        let text = CStr::from_ptr(raw).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(raw);
        text
    };
    Err(JitError::Llvm { what, message })
}

fn c_string(text: &str) -> CString {
    CString::new(text).expect("LLVM names and triples have no NUL bytes")
}

/// The machine code is generated for: a target triple, a CPU and its features, as LLVM
/// names them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CpuTarget {
    pub triple: String,
    pub cpu: String,
    pub features: String,
    /// The threads per workgroup of every launch the code will run, when compiled for
    /// one launch shape: the thread loops then have constant trip counts, and the
    /// thread's position is known to be below them. `None`: any shape.
    pub workgroup_size: Option<[u32; 3]>,
}

impl CpuTarget {
    /// This machine's CPU with every feature it has but the `bf16` conversions: for code
    /// that runs here, as the JIT's.
    pub fn host() -> CpuTarget {
        // SAFETY: each call returns a fresh LLVM string, which `take_message` frees.
        let (triple, cpu, mut features) = unsafe {
            (
                take_message(LLVMGetDefaultTargetTriple()),
                take_message(LLVMGetHostCPUName()),
                take_message(LLVMGetHostCPUFeatures()),
            )
        };
        // x86's `vcvtneps2bf16` flushes subnormals to zero, whatever MXCSR says; LLVM
        // would narrow with it where it expands an atomic add of `bf16` (every other
        // narrowing is integer arithmetic by then, see `bf16_to_integers`). Without it,
        // LLVM calls `__truncsfbf2`, which rounds as Rust does.
        if triple.starts_with("x86_64") {
            features.push_str(",-avx512bf16,-avxneconvert");
        }
        CpuTarget {
            triple,
            cpu,
            features,
            workgroup_size: None,
        }
    }

    /// The baseline CPU of this machine's architecture (what rustc assumes by default):
    /// for code built ahead of time, which may run on another machine of the kind.
    pub fn baseline() -> CpuTarget {
        let cpu = if cfg!(target_arch = "x86_64") {
            "x86-64"
        } else {
            "generic"
        };
        CpuTarget {
            cpu: cpu.to_string(),
            features: String::new(),
            ..CpuTarget::host()
        }
    }
}

/// Compiles an LLVM-dialect module to a relocatable object for `target`. The object
/// defines one symbol, `symbol`, a [`CpuEntry`](offload_mir::abi::CpuEntry) that calls
/// the module's function `entry` with the words its argument points at; every other
/// function and global is internal, so objects of different kernels link side by side.
/// The code is position-independent, as executables and shared libraries need, and
/// optimised at `-O3` after LLVM's inductive range-check elimination.
pub fn compile_object(
    module: &melior::ir::Module<'_>,
    entry: &str,
    symbol: &str,
    target: &CpuTarget,
) -> Result<Vec<u8>, LowerError> {
    initialize_host_target();
    // SAFETY: every handle below is created here, used while alive, and disposed of once;
    // the module is valid LLVM dialect (the pipeline verified it) with LLVM translations
    // registered in its context.
    unsafe {
        let context = LLVMContextCreate();
        let llvm = mlirTranslateModuleToLLVMIR(module.as_operation().to_raw(), context);
        if llvm.is_null() {
            LLVMContextDispose(context);
            return Err(JitError::NoLlvmIr {
                entry: entry.to_string(),
            }
            .into());
        }
        let result = build_object(context, llvm, entry, symbol, target);
        LLVMDisposeModule(llvm);
        LLVMContextDispose(context);
        result
    }
}

/// The body of [`compile_object`] once the module is LLVM IR.
///
/// # Safety
///
/// `module` is a live module of the live `context`.
unsafe fn build_object(
    context: Context,
    module: Module,
    entry: &str,
    symbol: &str,
    target: &CpuTarget,
) -> Result<Vec<u8>, LowerError> {
    unsafe {
        let entry_name = c_string(entry);
        let kernel = LLVMGetNamedFunction(module, entry_name.as_ptr());
        if kernel.is_null() {
            return Err(JitError::NoFunction {
                entry: entry.to_string(),
            }
            .into());
        }
        internalize(module);
        add_packed_entry(context, module, kernel, symbol);
        emit(module, target)
    }
}

/// Optimises `module` at `-O3` and generates position-independent code for `target`.
///
/// # Safety
///
/// `module` is live.
unsafe fn emit(module: Module, target: &CpuTarget) -> Result<Vec<u8>, LowerError> {
    unsafe {
        let triple = c_string(&target.triple);
        let mut llvm_target: Target = std::ptr::null_mut();
        let mut error: *mut c_char = std::ptr::null_mut();
        if LLVMGetTargetFromTriple(triple.as_ptr(), &mut llvm_target, &mut error) != 0 {
            return Err(JitError::NoTarget {
                triple: target.triple.clone(),
                message: take_message(error),
            }
            .into());
        }
        let (cpu, features) = (c_string(&target.cpu), c_string(&target.features));
        let machine = LLVMCreateTargetMachine(
            llvm_target,
            triple.as_ptr(),
            cpu.as_ptr(),
            features.as_ptr(),
            OPT_AGGRESSIVE,
            RELOC_PIC,
            CODE_MODEL_DEFAULT,
        );
        if machine.is_null() {
            return Err(JitError::NoMachine {
                triple: target.triple.clone(),
                cpu: target.cpu.clone(),
            }
            .into());
        }
        LLVMSetTarget(module, triple.as_ptr());
        let layout = LLVMCreateTargetDataLayout(machine);
        LLVMSetModuleDataLayout(module, layout);
        LLVMDisposeTargetData(layout);

        let options = LLVMCreatePassBuilderOptions();
        // `-O3`, after range-check elimination (`irce`): it splits a thread loop whose
        // bounds checks hold for a middle run of threads (a slice read at the thread's
        // index) into the threads before, the run without the checks, and the threads
        // after, in order, so each failing check still fails where it did; the run
        // without them is one the vectoriser takes. `-O3` has no `irce` of its own, and
        // `irce` needs the loop rotated and its exits simplified first.
        let passes = c_string(
            "function(instcombine<no-verify-fixpoint>,simplifycfg,loop-simplify,lcssa,\
             loop(loop-rotate),irce),\
             default<O3>",
        );
        let optimized = check(
            LLVMRunPasses(module, passes.as_ptr(), machine, options),
            "LLVM's optimiser failed",
        );
        LLVMDisposePassBuilderOptions(options);
        let result = optimized.and_then(|()| {
            let mut buffer: MemoryBuffer = std::ptr::null_mut();
            let mut error: *mut c_char = std::ptr::null_mut();
            if LLVMTargetMachineEmitToMemoryBuffer(
                machine,
                module,
                OBJECT_FILE,
                &mut error,
                &mut buffer,
            ) != 0
            {
                return Err(JitError::Codegen(take_message(error)));
            }
            let start = LLVMGetBufferStart(buffer).cast::<u8>();
            let bytes = std::slice::from_raw_parts(start, LLVMGetBufferSize(buffer)).to_vec();
            LLVMDisposeMemoryBuffer(buffer);
            Ok(bytes)
        });
        LLVMDisposeTargetMachine(machine);
        Ok(result?)
    }
}

/// One row of the table a [`registry_object`] registers: the code for one target of
/// the linked kernel with code key `key`.
#[derive(Clone, Debug)]
pub struct RegistryEntry {
    pub key: String,
    /// `sm_90`, `gfx942`, `cpu`.
    pub target: String,
    /// The device code, for a chip: PTX text for an NVIDIA chip, a code object (HSACO)
    /// for an AMD one.
    pub code: Option<Vec<u8>>,
    /// The entry point's symbol, for the CPU, defined by another object of the library.
    pub cpu_symbol: Option<String>,
}

/// An object whose constructor, run before `main`, registers `entries` with the runtime:
/// it calls the runtime's `offload_aot_register(table, count)` with a table in the
/// layout of the runtime's `AotEntry` (per row: the key, the target and the device code
/// as pointer and length, then the CPU entry point or null). It defines no symbol, so the
/// objects of several crates link side by side; nothing refers to it, so it must be
/// linked whole.
pub fn registry_object(
    entries: &[RegistryEntry],
    target: &CpuTarget,
) -> Result<Vec<u8>, LowerError> {
    initialize_host_target();
    // SAFETY: every handle is created here and used while alive; the module and context
    // are disposed of once, after code generation.
    unsafe {
        let context = LLVMContextCreate();
        let module = LLVMModuleCreateWithNameInContext(c"offload_aot".as_ptr(), context);
        build_registry(context, module, entries, &target.triple);
        let result = emit(module, target);
        LLVMDisposeModule(module);
        LLVMContextDispose(context);
        result
    }
}

/// Fills `module` with the registry of [`registry_object`].
///
/// # Safety
///
/// `module` is a live, empty module of the live `context`.
unsafe fn build_registry(
    context: Context,
    module: Module,
    entries: &[RegistryEntry],
    triple: &str,
) {
    unsafe {
        let ptr = LLVMPointerTypeInContext(context, 0);
        let i64_type = LLVMInt64TypeInContext(context);
        let void = LLVMVoidTypeInContext(context);
        let mut fields = [ptr, i64_type, ptr, i64_type, ptr, i64_type, ptr];
        let row_type = LLVMStructTypeInContext(context, fields.as_mut_ptr(), 7, 0);
        // A private constant holding `text`, and its length.
        let string = |text: &[u8]| -> [Value; 2] {
            let value = LLVMConstStringInContext2(context, text.as_ptr().cast(), text.len(), 1);
            let global = LLVMAddGlobal(module, LLVMTypeOf(value), c"".as_ptr());
            LLVMSetInitializer(global, value);
            LLVMSetGlobalConstant(global, 1);
            LLVMSetLinkage(global, PRIVATE_LINKAGE);
            [global, LLVMConstInt(i64_type, text.len() as u64, 0)]
        };
        let mut entry_params = [ptr];
        let entry_type = LLVMFunctionType(void, entry_params.as_mut_ptr(), 1, 0);
        let mut rows: Vec<Value> = Vec::with_capacity(entries.len());
        for e in entries {
            let [key, key_len] = string(e.key.as_bytes());
            let [target, target_len] = string(e.target.as_bytes());
            let [code, code_len] = match &e.code {
                Some(code) => string(code),
                None => [LLVMConstNull(ptr), LLVMConstInt(i64_type, 0, 0)],
            };
            let cpu = match &e.cpu_symbol {
                Some(symbol) => {
                    let name = c_string(symbol);
                    match LLVMGetNamedFunction(module, name.as_ptr()) {
                        f if f.is_null() => LLVMAddFunction(module, name.as_ptr(), entry_type),
                        f => f,
                    }
                }
                None => LLVMConstNull(ptr),
            };
            let mut values = [key, key_len, target, target_len, code, code_len, cpu];
            rows.push(LLVMConstStructInContext(context, values.as_mut_ptr(), 7, 0));
        }
        let table_type = LLVMArrayType2(row_type, rows.len() as u64);
        let table = LLVMAddGlobal(module, table_type, c"".as_ptr());
        LLVMSetInitializer(
            table,
            LLVMConstArray2(row_type, rows.as_mut_ptr(), rows.len() as u64),
        );
        LLVMSetGlobalConstant(table, 1);
        LLVMSetLinkage(table, PRIVATE_LINKAGE);

        // void constructor() { offload_aot_register(table, rows); }
        let mut register_params = [ptr, i64_type];
        let register_type = LLVMFunctionType(void, register_params.as_mut_ptr(), 2, 0);
        let register = LLVMAddFunction(module, c"offload_aot_register".as_ptr(), register_type);
        let constructor_type = LLVMFunctionType(void, std::ptr::null_mut(), 0, 0);
        let constructor = LLVMAddFunction(module, c"".as_ptr(), constructor_type);
        LLVMSetLinkage(constructor, INTERNAL_LINKAGE);
        let block = LLVMAppendBasicBlockInContext(context, constructor, c"entry".as_ptr());
        let builder = LLVMCreateBuilderInContext(context);
        LLVMPositionBuilderAtEnd(builder, block);
        let mut args = [table, LLVMConstInt(i64_type, rows.len() as u64, 0)];
        LLVMBuildCall2(
            builder,
            register_type,
            register,
            args.as_mut_ptr(),
            2,
            c"".as_ptr(),
        );
        LLVMBuildRetVoid(builder);
        LLVMDisposeBuilder(builder);

        // The constructor's address in the section the platform's loader runs before
        // `main` (LLVM's `llvm.global_ctors` would use `.ctors` through the C API, which
        // lld does not run), kept by `llvm.used`.
        let section = if triple.contains("apple") {
            c"__DATA,__mod_init_func,mod_init_funcs"
        } else if triple.contains("windows") {
            c".CRT$XCU"
        } else {
            c".init_array"
        };
        let init = LLVMAddGlobal(module, ptr, c"".as_ptr());
        LLVMSetInitializer(init, constructor);
        LLVMSetLinkage(init, PRIVATE_LINKAGE);
        LLVMSetSection(init, section.as_ptr());
        LLVMSetAlignment(init, 8);
        let mut used = [init];
        let used_list = LLVMAddGlobal(module, LLVMArrayType2(ptr, 1), c"llvm.used".as_ptr());
        LLVMSetInitializer(used_list, LLVMConstArray2(ptr, used.as_mut_ptr(), 1));
        LLVMSetLinkage(used_list, APPENDING_LINKAGE);
        LLVMSetSection(used_list, c"llvm.metadata".as_ptr());
    }
}

/// Gives every function and global the module defines internal linkage, except weak
/// functions: routines the code generator may call by name after optimisation
/// (`__truncsfbf2`, see `bf16_to_integers`), which must stay in the object and visible.
///
/// # Safety
///
/// `module` is live.
unsafe fn internalize(module: Module) {
    unsafe {
        let mut f = LLVMGetFirstFunction(module);
        while !f.is_null() {
            if LLVMIsDeclaration(f) == 0 && LLVMGetLinkage(f) != WEAK_ANY_LINKAGE {
                LLVMSetLinkage(f, INTERNAL_LINKAGE);
            }
            f = LLVMGetNextFunction(f);
        }
        let mut g = LLVMGetFirstGlobal(module);
        while !g.is_null() {
            if LLVMIsDeclaration(g) == 0 {
                LLVMSetLinkage(g, INTERNAL_LINKAGE);
            }
            g = LLVMGetNextGlobal(g);
        }
    }
}

/// Adds `void symbol(ptr words)`: loads argument `i` of `kernel` from the pointer in
/// `words[i]` and calls it.
///
/// # Safety
///
/// `kernel` is a function of the live `module` in `context`, returning nothing.
unsafe fn add_packed_entry(context: Context, module: Module, kernel: Value, symbol: &str) {
    unsafe {
        let kernel_type = LLVMGlobalGetValueType(kernel);
        let count = LLVMCountParamTypes(kernel_type);
        let mut params: Vec<Type> = vec![std::ptr::null_mut(); count as usize];
        LLVMGetParamTypes(kernel_type, params.as_mut_ptr());

        let ptr = LLVMPointerTypeInContext(context, 0);
        let i64_type = LLVMInt64TypeInContext(context);
        let mut entry_params = [ptr];
        let entry_type = LLVMFunctionType(
            LLVMVoidTypeInContext(context),
            entry_params.as_mut_ptr(),
            1,
            0,
        );
        let name = c_string(symbol);
        let entry = LLVMAddFunction(module, name.as_ptr(), entry_type);
        let block = LLVMAppendBasicBlockInContext(context, entry, c"entry".as_ptr());
        let builder = LLVMCreateBuilderInContext(context);
        LLVMPositionBuilderAtEnd(builder, block);
        let words = LLVMGetParam(entry, 0);
        let mut args = Vec::with_capacity(params.len());
        for (i, ty) in params.iter().enumerate() {
            let mut index = [LLVMConstInt(i64_type, i as u64, 0)];
            let slot = LLVMBuildGEP2(builder, ptr, words, index.as_mut_ptr(), 1, c"".as_ptr());
            let word = LLVMBuildLoad2(builder, ptr, slot, c"".as_ptr());
            args.push(LLVMBuildLoad2(builder, *ty, word, c"".as_ptr()));
        }
        LLVMBuildCall2(
            builder,
            kernel_type,
            kernel,
            args.as_mut_ptr(),
            args.len() as u32,
            c"".as_ptr(),
        );
        LLVMBuildRetVoid(builder);
        LLVMDisposeBuilder(builder);
    }
}

/// The process's JIT linker: objects are added to it once and stay for the process,
/// like the kernels they hold.
struct Linker {
    jit: Jit,
    dylib: Dylib,
    /// Entry points linked so far, by symbol.
    loaded: HashMap<String, u64>,
}

// SAFETY: ORC's LLJIT is thread-safe for adding objects and looking symbols up; the
// `Mutex` around it serialises those anyway.
unsafe impl Send for Linker {}

fn linker() -> Result<&'static Mutex<Linker>, LowerError> {
    static LINKER: OnceLock<Result<Mutex<Linker>, JitError>> = OnceLock::new();
    LINKER
        .get_or_init(|| new_linker().map(Mutex::new))
        .as_ref()
        .map_err(|e| LowerError::Jit(e.clone()))
}

fn new_linker() -> Result<Linker, JitError> {
    initialize_host_target();
    // SAFETY: the builder is consumed by `LLVMOrcCreateLLJIT`; the generator and the
    // absolute-symbol unit are handed to the dylib, which owns them from then on.
    unsafe {
        let mut jit: Jit = std::ptr::null_mut();
        check(
            LLVMOrcCreateLLJIT(&mut jit, LLVMOrcCreateLLJITBuilder()),
            "the JIT linker could not start",
        )?;
        let dylib = LLVMOrcLLJITGetMainJITDylib(jit);
        // Math (`expf`, ...) and `memcpy` come from the process's libraries.
        let mut generator: Generator = std::ptr::null_mut();
        check(
            LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                &mut generator,
                LLVMOrcLLJITGetGlobalPrefix(jit),
                std::ptr::null(),
                std::ptr::null_mut(),
            ),
            "the JIT linker cannot see the process's symbols",
        )?;
        LLVMOrcJITDylibAddGenerator(dylib, generator);
        Ok(Linker {
            jit,
            dylib,
            loaded: HashMap::new(),
        })
    }
}

/// Links an object from [`compile_object`] into this process and returns the address of
/// its `symbol`. An object whose symbol is already linked is not added again.
pub fn load_object(object: &[u8], symbol: &str) -> Result<u64, LowerError> {
    let mut linker = linker()?
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let name = c_string(symbol);
    // SAFETY: the linker is live for the process; the buffer is a copy the JIT takes
    // ownership of; lookups write one address.
    unsafe {
        if let Some(&address) = linker.loaded.get(symbol) {
            return Ok(address);
        }
        let mut address = 0u64;
        let buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(
            object.as_ptr().cast(),
            object.len(),
            name.as_ptr(),
        );
        check(
            LLVMOrcLLJITAddObjectFile(linker.jit, linker.dylib, buffer),
            "the JIT linker refused the object",
        )?;
        check(
            LLVMOrcLLJITLookup(linker.jit, &mut address, name.as_ptr()),
            "looking up an entry point",
        )
        .map_err(|e| match e {
            JitError::Llvm { message, .. } => JitError::NoEntry {
                symbol: symbol.to_string(),
                message,
            },
            other => other,
        })?;
        linker.loaded.insert(symbol.to_string(), address);
        Ok(address)
    }
}
