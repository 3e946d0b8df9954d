//! A small rewriting toolkit over MLIR's C API, for the offload passes: the one module
//! of the crate that calls MLIR's C API directly (LLVM's is `llvm.rs`).
//!
//! melior covers building operations well but not every in-place edit a conversion
//! needs (retyping block arguments, moving a region's body, erasing block arguments), so
//! the passes work on raw handles through these helpers. Every handle passed in must
//! belong to the live module the pass is running on; that is the one safety contract of
//! this module, and the passes keep it by collecting handles with [`collect`] from the
//! operation they were given and using them before the pass returns.

use melior::{
    Context,
    ir::{
        Attribute, Location, OperationRef, Type, attribute::AttributeLike,
        operation::OperationLike, r#type::TypeLike,
    },
};
use mlir_sys::*;

mod inserter;
pub use inserter::{Inserter, dynamic_memref};

/// Collects, in pre-order, every operation nested in `root` whose name is `name`.
pub fn collect(root: OperationRef<'_, '_>, name: &str) -> Vec<MlirOperation> {
    let mut found = Vec::new();
    root.walk(melior::ir::operation::WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok(name) {
            found.push(op.to_raw());
        }
        melior::ir::operation::WalkResult::Advance
    });
    found
}

/// Whether any value in `root` (an operation's operand or result, or a block's argument)
/// has a type `is`.
pub fn any_value_type(root: OperationRef<'_, '_>, is: impl Fn(Type<'_>) -> bool) -> bool {
    use melior::ir::{BlockLike, RegionLike, ValueLike};
    let mut found = false;
    root.walk(melior::ir::operation::WalkOrder::PreOrder, |op| {
        let values = (0..op.operand_count())
            .filter_map(|i| op.operand(i).ok().map(|v| v.r#type()))
            .chain((0..op.result_count()).filter_map(|i| op.result(i).ok().map(|v| v.r#type())));
        let mut arguments = Vec::new();
        for region in (0..op.region_count()).filter_map(|i| op.region(i).ok()) {
            let mut block = region.first_block();
            while let Some(b) = block {
                arguments.extend(
                    (0..b.argument_count())
                        .filter_map(|i| b.argument(i).ok())
                        .map(|a| a.r#type()),
                );
                block = b.next_in_region();
            }
        }
        found = values.chain(arguments).any(&is);
        if found {
            melior::ir::operation::WalkResult::Interrupt
        } else {
            melior::ir::operation::WalkResult::Advance
        }
    });
    found
}

/// Replaces every use of the anchor's results with `values`, then erases it.
///
/// # Safety
///
/// `op` must be live, and have as many results as `values` has entries.
pub unsafe fn replace(op: MlirOperation, values: &[MlirValue]) {
    unsafe {
        for (i, v) in values.iter().enumerate() {
            mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, i as isize), *v);
        }
        mlirOperationDestroy(op);
    }
}

/// Operand `i` of a live operation.
///
/// # Safety
///
/// `op` must be live and have more than `i` operands.
pub unsafe fn operand(op: MlirOperation, i: isize) -> MlirValue {
    unsafe { mlirOperationGetOperand(op, i) }
}

/// All operands of a live operation.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn operands(op: MlirOperation) -> Vec<MlirValue> {
    unsafe {
        (0..mlirOperationGetNumOperands(op))
            .map(|i| mlirOperationGetOperand(op, i))
            .collect()
    }
}

/// The type of a live value.
///
/// # Safety
///
/// `value` must be live.
pub unsafe fn value_type<'c>(value: MlirValue) -> Type<'c> {
    unsafe { Type::from_raw(mlirValueGetType(value)) }
}

/// Result `i` of a live operation.
///
/// # Safety
///
/// `op` must be live and have more than `i` results.
pub unsafe fn result(op: MlirOperation, i: isize) -> MlirValue {
    unsafe { mlirOperationGetResult(op, i) }
}

/// The type of a live operation's first result.
///
/// # Safety
///
/// `op` must be live and have a result.
pub unsafe fn result_type<'c>(op: MlirOperation) -> Type<'c> {
    unsafe { value_type(result(op, 0)) }
}

/// The first block of a live operation's first region: a function's entry block.
///
/// # Safety
///
/// `op` must be live and have a region with a block.
pub unsafe fn entry_block(op: MlirOperation) -> MlirBlock {
    unsafe { mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)) }
}

/// The first operation of a live block.
///
/// # Safety
///
/// `block` must be live and not empty.
pub unsafe fn first_operation(block: MlirBlock) -> MlirOperation {
    unsafe { mlirBlockGetFirstOperation(block) }
}

/// The arguments of a live block, in order.
///
/// # Safety
///
/// `block` must be live.
pub unsafe fn arguments(block: MlirBlock) -> Vec<MlirValue> {
    unsafe {
        (0..mlirBlockGetNumArguments(block))
            .map(|i| mlirBlockGetArgument(block, i))
            .collect()
    }
}

/// Appends an argument of type `ty` to a live block, located at `at`.
///
/// # Safety
///
/// `block` and `at` must be live.
pub unsafe fn add_argument(block: MlirBlock, ty: Type<'_>, at: MlirOperation) -> MlirValue {
    unsafe { mlirBlockAddArgument(block, ty.to_raw(), mlirOperationGetLocation(at)) }
}

/// Inserts an argument of type `ty` into a live block at position `pos`, located at `at`.
///
/// # Safety
///
/// `block` and `at` must be live, and `pos` at most the block's argument count.
pub unsafe fn insert_argument(
    block: MlirBlock,
    pos: usize,
    ty: Type<'_>,
    at: MlirOperation,
) -> MlirValue {
    unsafe {
        mlirBlockInsertArgument(
            block,
            pos as isize,
            ty.to_raw(),
            mlirOperationGetLocation(at),
        )
    }
}

/// Gives a live block argument type `ty`.
///
/// # Safety
///
/// `argument` must be a live block argument.
pub unsafe fn set_argument_type(argument: MlirValue, ty: Type<'_>) {
    unsafe { mlirBlockArgumentSetType(argument, ty.to_raw()) }
}

/// Points every use of each argument of `block` at the matching value of `to`, then
/// removes the arguments.
///
/// # Safety
///
/// `block` and the values must be live, with as many values as arguments.
pub unsafe fn forward_arguments(block: MlirBlock, to: &[MlirValue]) {
    unsafe {
        for (argument, value) in arguments(block).into_iter().zip(to) {
            mlirValueReplaceAllUsesOfWith(argument, *value);
        }
        for i in (0..mlirBlockGetNumArguments(block)).rev() {
            mlirBlockEraseArgument(block, i as u32);
        }
    }
}

/// Inserts `op` (owned by no block) before the live operation `anchor`.
///
/// # Safety
///
/// Both must be live; `op` must have no parent.
pub unsafe fn insert_before(anchor: MlirOperation, op: MlirOperation) {
    unsafe { mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(anchor), anchor, op) }
}

/// Moves a live operation to just before `anchor` (in any block of the same context).
///
/// # Safety
///
/// Both must be live, and `op` must not contain `anchor`.
pub unsafe fn move_before(op: MlirOperation, anchor: MlirOperation) {
    unsafe { mlirOperationMoveBefore(op, anchor) }
}

/// The operations of a live block, in order.
///
/// # Safety
///
/// `block` must be live.
pub unsafe fn operations(block: MlirBlock) -> Vec<MlirOperation> {
    unsafe {
        let mut out = Vec::new();
        let mut op = mlirBlockGetFirstOperation(block);
        while !op.ptr.is_null() {
            out.push(op);
            op = mlirOperationGetNextInBlock(op);
        }
        out
    }
}

/// The blocks of a live operation's first region, in order.
///
/// # Safety
///
/// `op` must be live and have a region.
pub unsafe fn blocks(op: MlirOperation) -> Vec<MlirBlock> {
    unsafe {
        let mut out = Vec::new();
        let mut block = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
        while !block.ptr.is_null() {
            out.push(block);
            block = mlirBlockGetNextInRegion(block);
        }
        out
    }
}

/// Erases the blocks of `op`'s first region that no path from its entry reaches. MLIR's
/// canonicalizer folds ops before it erases such blocks, and a loop among them can hold
/// an op that uses its own result (legal where no path reaches), which its folders
/// rewrite forever; code that makes blocks unreachable erases them itself.
///
/// # Safety
///
/// `op` must be live, its first region a control flow graph that verifies.
pub unsafe fn erase_unreachable_blocks(op: MlirOperation) {
    unsafe {
        let all = blocks(op);
        let mut reached = vec![false; all.len()];
        let index = |b: MlirBlock| all.iter().position(|a| mlirBlockEqual(*a, b));
        let mut stack = vec![0];
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut reached[i], true) {
                continue;
            }
            stack.extend(successors(all[i]).into_iter().filter_map(index));
        }
        let dead: Vec<MlirBlock> = (all.iter().zip(&reached))
            .filter(|(_, r)| !**r)
            .map(|(b, _)| *b)
            .collect();
        // What the dead blocks define is used only in dead blocks (a definition there
        // dominates no reachable block): drop every operand and successor in them
        // first, so that nothing is used when it is destroyed.
        for &block in &dead {
            for top in operations(block) {
                drop_operands(top);
            }
        }
        for &block in &dead {
            mlirOperationDestroy(mlirBlockGetTerminator(block));
        }
        for &block in &dead {
            mlirBlockDetach(block);
            mlirBlockDestroy(block);
        }
    }
}

/// Drops the operands of a live operation and of every operation nested in it.
///
/// # Safety
///
/// `op` must be live; it is left to be destroyed.
unsafe fn drop_operands(op: MlirOperation) {
    unsafe {
        mlirOperationSetOperands(op, 0, std::ptr::null());
        for r in 0..mlirOperationGetNumRegions(op) {
            let mut block = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
            while !block.ptr.is_null() {
                for inner in operations(block) {
                    drop_operands(inner);
                }
                block = mlirBlockGetNextInRegion(block);
            }
        }
    }
}

/// The blocks a live block's terminator may branch to.
///
/// # Safety
///
/// `block` must be live and end in a terminator.
pub unsafe fn successors(block: MlirBlock) -> Vec<MlirBlock> {
    unsafe {
        let terminator = mlirBlockGetTerminator(block);
        if terminator.ptr.is_null() {
            return Vec::new();
        }
        (0..mlirOperationGetNumSuccessors(terminator))
            .map(|i| mlirOperationGetSuccessor(terminator, i))
            .collect()
    }
}

/// Every use of a live value: the using operation and the operand's position.
///
/// # Safety
///
/// `value` must be live.
pub unsafe fn uses(value: MlirValue) -> Vec<(MlirOperation, u32)> {
    unsafe {
        let mut out = Vec::new();
        let mut operand = mlirValueGetFirstUse(value);
        while !operand.ptr.is_null() {
            out.push((
                mlirOpOperandGetOwner(operand),
                mlirOpOperandGetOperandNumber(operand),
            ));
            operand = mlirOpOperandGetNextUse(operand);
        }
        out
    }
}

/// Makes operand `i` of a live operation `value`.
///
/// # Safety
///
/// Both must be live; `op` must have more than `i` operands.
pub unsafe fn set_operand(op: MlirOperation, i: u32, value: MlirValue) {
    unsafe { mlirOperationSetOperand(op, i as isize, value) }
}

/// A new block without arguments, right after the live `block` in its region.
///
/// # Safety
///
/// `block` must be live and in a region.
pub unsafe fn block_after(block: MlirBlock) -> MlirBlock {
    unsafe {
        let new = mlirBlockCreate(0, std::ptr::null(), std::ptr::null());
        mlirRegionInsertOwnedBlockAfter(mlirBlockGetParentRegion(block), block, new);
        new
    }
}

/// Moves a live operation to the end of the live `block`.
///
/// # Safety
///
/// Both must be live, and `op` must not contain `block`.
pub unsafe fn move_to_end(op: MlirOperation, block: MlirBlock) {
    unsafe {
        mlirOperationRemoveFromParent(op);
        mlirBlockAppendOwnedOperation(block, op);
    }
}

/// The operation after a live one in its block (null after the last).
///
/// # Safety
///
/// `op` must be live and in a block.
pub unsafe fn next_operation(op: MlirOperation) -> MlirOperation {
    unsafe { mlirOperationGetNextInBlock(op) }
}

/// The operation a live operation is nested in.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn parent_operation(op: MlirOperation) -> MlirOperation {
    unsafe { mlirOperationGetParentOperation(op) }
}

/// The operation that holds a live block.
///
/// # Safety
///
/// `block` must be live.
pub unsafe fn block_owner(block: MlirBlock) -> MlirOperation {
    unsafe { mlirBlockGetParentOperation(block) }
}

/// A live operation's location.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn location<'c>(op: MlirOperation) -> Location<'c> {
    unsafe { Location::from_raw(mlirOperationGetLocation(op)) }
}

/// The terminator of a live block.
///
/// # Safety
///
/// `block` must be live and terminated.
pub unsafe fn terminator(block: MlirBlock) -> MlirOperation {
    unsafe { mlirBlockGetTerminator(block) }
}

/// Appends `op`, which no block owns yet, to the end of `block`, which takes it over.
///
/// # Safety
///
/// `block` must be live and `op` a live operation outside any block.
pub unsafe fn append_owned(block: MlirBlock, op: MlirOperation) {
    unsafe { mlirBlockAppendOwnedOperation(block, op) }
}

/// A copy of a live operation and everything nested in it, in no block.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn clone(op: MlirOperation) -> MlirOperation {
    unsafe { mlirOperationClone(op) }
}

/// How many results a live operation has.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn result_count(op: MlirOperation) -> isize {
    unsafe { mlirOperationGetNumResults(op) }
}

/// Whether two handles name the same operation.
pub fn same_operation(a: MlirOperation, b: MlirOperation) -> bool {
    // SAFETY: comparing handles reads no IR.
    unsafe { mlirOperationEqual(a, b) }
}

/// Whether two handles name the same block.
pub fn same_block(a: MlirBlock, b: MlirBlock) -> bool {
    // SAFETY: comparing handles reads no IR.
    unsafe { mlirBlockEqual(a, b) }
}

/// Whether two handles name the same value.
pub fn same_value(a: MlirValue, b: MlirValue) -> bool {
    // SAFETY: comparing handles reads no IR.
    unsafe { mlirValueEqual(a, b) }
}

/// The block a live operation is in.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn block_of(op: MlirOperation) -> MlirBlock {
    unsafe { mlirOperationGetBlock(op) }
}

/// The operation defining a live value: `None` for a block argument.
///
/// # Safety
///
/// `value` must be live.
pub unsafe fn defining_op(value: MlirValue) -> Option<MlirOperation> {
    unsafe { mlirValueIsAOpResult(value).then(|| mlirOpResultGetOwner(value)) }
}

/// The block a live value is defined in (its own block for an argument).
///
/// # Safety
///
/// `value` must be live.
pub unsafe fn defining_block(value: MlirValue) -> MlirBlock {
    unsafe {
        match defining_op(value) {
            Some(op) => mlirOperationGetBlock(op),
            None => mlirBlockArgumentGetOwner(value),
        }
    }
}

/// The operation directly in `owner`'s first region that is `op` or holds it; `None`
/// when `op` is not inside `owner`.
///
/// # Safety
///
/// Both must be live.
pub unsafe fn ancestor_in(op: MlirOperation, owner: MlirOperation) -> Option<MlirOperation> {
    unsafe {
        let mut op = op;
        loop {
            let parent = mlirOperationGetParentOperation(op);
            if parent.ptr.is_null() {
                return None;
            }
            if mlirOperationEqual(parent, owner) {
                return Some(op);
            }
            op = parent;
        }
    }
}

/// The name of a live operation (`arith.addi`).
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn name(op: MlirOperation) -> String {
    unsafe {
        let id = mlirOperationGetName(op);
        let text = mlirIdentifierStr(id);
        String::from_utf8_lossy(std::slice::from_raw_parts(text.data.cast(), text.length))
            .into_owned()
    }
}

/// Whether a live operation has regions.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn has_regions(op: MlirOperation) -> bool {
    unsafe { mlirOperationGetNumRegions(op) > 0 }
}

/// The symbol a live operation defines (its `sym_name`), if any.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn symbol_name(op: MlirOperation) -> Option<String> {
    unsafe { string_attribute(op, "sym_name") }
}

/// Whether a live operation's first region has no block: a function declaration.
///
/// # Safety
///
/// `op` must be live and have a region.
pub unsafe fn is_declaration(op: MlirOperation) -> bool {
    unsafe {
        mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0))
            .ptr
            .is_null()
    }
}

/// Moves the body of `from`'s first region into `to`'s first region.
///
/// # Safety
///
/// Both must be live operations with a region; `to`'s is emptied first.
pub unsafe fn move_body(from: MlirOperation, to: MlirOperation) {
    unsafe {
        mlirRegionTakeBody(
            mlirOperationGetRegion(to, 0),
            mlirOperationGetRegion(from, 0),
        )
    }
}

/// Erases a live operation that nothing uses.
///
/// # Safety
///
/// `op` must be live, its results unused; it must not be used afterwards.
pub unsafe fn erase(op: MlirOperation) {
    unsafe { mlirOperationDestroy(op) }
}

/// Sets attribute `name` of a live operation.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn set_attribute(op: MlirOperation, name: &str, value: Attribute<'_>) {
    unsafe {
        let name = melior::StringRef::new(name);
        mlirOperationSetAttributeByName(op, name.to_raw(), value.to_raw())
    }
}

/// Whether a live operation has attribute `name`.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn has_attribute(op: MlirOperation, name: &str) -> bool {
    unsafe {
        let name = melior::StringRef::new(name);
        !mlirOperationGetAttributeByName(op, name.to_raw())
            .ptr
            .is_null()
    }
}

/// Sets a function's `function_type` from its entry block's arguments (no results).
///
/// # Safety
///
/// `func` must be a live function-like op whose entry block is `entry`.
pub unsafe fn set_function_type(context: &Context, func: MlirOperation, entry: MlirBlock) {
    unsafe {
        let inputs: Vec<Type<'_>> = arguments(entry)
            .into_iter()
            .map(|a| value_type(a))
            .collect();
        let function = melior::ir::r#type::FunctionType::new(context, &inputs, &[]);
        let attribute = melior::ir::attribute::TypeAttribute::new(function.into());
        set_attribute(func, "function_type", attribute.into());
    }
}

/// Removes an attribute from a live operation, if it has it.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn remove_attribute(op: MlirOperation, name: &str) {
    unsafe {
        mlirOperationRemoveAttributeByName(op, melior::StringRef::new(name).to_raw());
    }
}

/// The attribute `name` of a live operation, if it has one.
///
/// # Safety
///
/// `op` must be live; the attribute lives as long as its context.
pub unsafe fn attribute<'c>(op: MlirOperation, name: &str) -> Option<Attribute<'c>> {
    unsafe {
        let name = melior::StringRef::new(name);
        let a = mlirOperationGetAttributeByName(op, name.to_raw());
        (!a.ptr.is_null()).then(|| Attribute::from_raw(a))
    }
}

/// An integer attribute's value, read from a live operation.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn int_attribute(op: MlirOperation, name: &str) -> Option<i64> {
    unsafe {
        let name = melior::StringRef::new(name);
        let a = mlirOperationGetAttributeByName(op, name.to_raw());
        if a.ptr.is_null() || !mlirAttributeIsAInteger(a) {
            return None;
        }
        Some(mlirIntegerAttrGetValueInt(a))
    }
}

/// A dense `i64` array attribute's elements, read from a live operation; `None` if it
/// has no such attribute.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn i64_array_attribute(op: MlirOperation, name: &str) -> Option<Vec<i64>> {
    unsafe {
        let name = melior::StringRef::new(name);
        let a = mlirOperationGetAttributeByName(op, name.to_raw());
        if a.ptr.is_null() || !mlirAttributeIsADenseI64Array(a) {
            return None;
        }
        let n = mlirDenseArrayGetNumElements(a);
        Some((0..n).map(|i| mlirDenseI64ArrayGetElement(a, i)).collect())
    }
}

/// A string attribute's value, read from a live operation.
///
/// # Safety
///
/// `op` must be live.
pub unsafe fn string_attribute(op: MlirOperation, name: &str) -> Option<String> {
    unsafe {
        let name = melior::StringRef::new(name);
        let a = mlirOperationGetAttributeByName(op, name.to_raw());
        if a.ptr.is_null() || !mlirAttributeIsAString(a) {
            return None;
        }
        let s = mlirStringAttrGetValue(a);
        let bytes = std::slice::from_raw_parts(s.data.cast::<u8>(), s.length);
        Some(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// The bytes of the first `#gpu.object` of a `gpu.binary`'s `objects` array.
///
/// # Safety
///
/// `objects` must be a live array attribute whose first element is a `#gpu.object`.
pub unsafe fn first_gpu_object(objects: Attribute<'_>) -> Vec<u8> {
    unsafe {
        let object = mlirArrayAttrGetElement(objects.to_raw(), 0);
        let text = mlirGPUObjectAttrGetObject(object);
        std::slice::from_raw_parts(text.data as *const u8, text.length).to_vec()
    }
}

/// Parses the MLIR file at `path` into a module of `context`; `None` when it cannot be
/// read or parsed (with diagnostics emitted).
pub fn parse_module_file<'c>(
    context: &'c Context,
    path: &std::ffi::CStr,
) -> Option<melior::ir::Module<'c>> {
    let name = MlirStringRef {
        data: path.as_ptr(),
        length: path.to_bytes().len(),
    };
    // SAFETY: the context is live and `name` points at the path's bytes, which outlive
    // the call; a null module is the parser's failure.
    let raw = unsafe { mlirModuleCreateParseFromFile(context.to_raw(), name) };
    // SAFETY: a non-null `raw` is a live module just created in `context`.
    (!raw.ptr.is_null()).then(|| unsafe { melior::ir::Module::from_raw(raw) })
}

/// Makes `manager` print how long each pass took, to stderr, when it is destroyed.
pub fn enable_timing(manager: &melior::pass::PassManager<'_>) {
    // SAFETY: the manager is live.
    unsafe { mlirPassManagerEnableTiming(manager.to_raw()) }
}

/// Emits an error diagnostic `message` at `at`.
///
/// # Safety
///
/// `at` must be a location of a live context.
pub unsafe fn emit_error(at: MlirLocation, message: &str) {
    let message = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    unsafe { mlirEmitError(at, message.as_ptr()) }
}

/// Why a pass refused its input: the message, and the operation it refused when there
/// is one (the diagnostic is placed there, else at the module).
#[derive(Debug)]
pub struct PassError {
    pub at: Option<MlirLocation>,
    pub message: String,
}

impl From<String> for PassError {
    fn from(message: String) -> Self {
        PassError { at: None, message }
    }
}

impl From<&str> for PassError {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

/// A refusal of `op`, placed at its location.
pub fn refuse(op: MlirOperation, message: impl Into<String>) -> PassError {
    // SAFETY: `op` is a live operation of the module being rewritten.
    let at = unsafe { mlirOperationGetLocation(op) };
    PassError {
        at: Some(at),
        message: message.into(),
    }
}
