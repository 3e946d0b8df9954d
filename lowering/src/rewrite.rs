//! A small rewriting toolkit over MLIR's C API, for the offload passes.
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
        Attribute, Identifier, Location, Operation, OperationRef, Type, Value,
        operation::{OperationBuilder, OperationLike},
    },
};
use mlir_sys::*;

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

/// A rewriter positioned before one anchor operation.
pub struct Builder<'c> {
    pub context: &'c Context,
    anchor: MlirOperation,
    pub location: Location<'c>,
}

impl<'c> Builder<'c> {
    /// # Safety
    ///
    /// `anchor` must be a live operation inside a block.
    pub unsafe fn before(context: &'c Context, anchor: MlirOperation) -> Self {
        let location = unsafe { Location::from_raw(mlirOperationGetLocation(anchor)) };
        Builder {
            context,
            anchor,
            location,
        }
    }

    pub fn ty(&self, text: &str) -> Type<'c> {
        Type::parse(self.context, text)
            .unwrap_or_else(|| panic!("internal type `{text}` does not parse"))
    }

    pub fn attr(&self, text: &str) -> Attribute<'c> {
        Attribute::parse(self.context, text)
            .unwrap_or_else(|| panic!("internal attribute `{text}` does not parse"))
    }

    /// Builds an operation, inserts it before the anchor and returns its results.
    pub fn op(
        &self,
        name: &str,
        operands: &[MlirValue],
        results: &[Type<'c>],
        attributes: &[(&str, Attribute<'c>)],
    ) -> Vec<MlirValue> {
        let operands: Vec<Value> = operands
            .iter()
            .map(|v| unsafe { Value::from_raw(*v) })
            .collect();
        let attributes: Vec<(Identifier, Attribute)> = attributes
            .iter()
            .map(|(n, a)| (Identifier::new(self.context, n), *a))
            .collect();
        let op: Operation = OperationBuilder::new(name, self.location)
            .add_operands(&operands)
            .add_results(results)
            .add_attributes(&attributes)
            .build()
            .unwrap_or_else(|e| panic!("internal operation `{name}` is malformed: {e}"));
        let raw = op.into_raw();
        unsafe {
            mlirBlockInsertOwnedOperationBefore(
                mlirOperationGetBlock(self.anchor),
                self.anchor,
                raw,
            );
            (0..mlirOperationGetNumResults(raw))
                .map(|i| mlirOperationGetResult(raw, i))
                .collect()
        }
    }

    /// `memref.generic_atomic_rmw` that stores `new` where the element equals `current`;
    /// returns the previous element.
    pub fn compare_and_swap(
        &self,
        memref: MlirValue,
        index: MlirValue,
        current: MlirValue,
        new: MlirValue,
        ty: Type<'c>,
    ) -> MlirValue {
        use melior::ir::{Block, BlockLike, Region, RegionLike};
        let block = Block::new(&[(ty, self.location)]);
        let previous = block.argument(0).expect("the block has one argument");
        use melior::ir::r#type::TypeLike;
        use offload_dialect::predicate::{CMPF_OEQ, CMPI_EQ};
        let (predicate, eq) = if ty.is_float() {
            ("arith.cmpf", self.attr(&format!("{CMPF_OEQ} : i64")))
        } else {
            ("arith.cmpi", self.attr(&format!("{CMPI_EQ} : i64")))
        };
        let same = block.append_operation(
            OperationBuilder::new(predicate, self.location)
                .add_operands(&[previous.into(), unsafe { Value::from_raw(current) }])
                .add_results(&[self.ty("i1")])
                .add_attributes(&[(Identifier::new(self.context, "predicate"), eq)])
                .build()
                .expect("a comparison is well formed"),
        );
        let chosen = block.append_operation(
            OperationBuilder::new("arith.select", self.location)
                .add_operands(&[
                    same.result(0).expect("one result").into(),
                    unsafe { Value::from_raw(new) },
                    previous.into(),
                ])
                .add_results(&[ty])
                .build()
                .expect("a select is well formed"),
        );
        block.append_operation(
            OperationBuilder::new("memref.atomic_yield", self.location)
                .add_operands(&[chosen.result(0).expect("one result").into()])
                .build()
                .expect("a yield is well formed"),
        );
        let region = Region::new();
        region.append_block(block);
        let op: Operation = OperationBuilder::new("memref.generic_atomic_rmw", self.location)
            .add_operands(&[unsafe { Value::from_raw(memref) }, unsafe {
                Value::from_raw(index)
            }])
            .add_results(&[ty])
            .add_regions([region])
            .build()
            .expect("an atomic update is well formed");
        let raw = op.into_raw();
        unsafe {
            mlirBlockInsertOwnedOperationBefore(
                mlirOperationGetBlock(self.anchor),
                self.anchor,
                raw,
            );
            mlirOperationGetResult(raw, 0)
        }
    }

    /// `arith.constant` of an `index`.
    pub fn index_constant(&self, v: i64) -> MlirValue {
        let index = self.ty("index");
        self.op(
            "arith.constant",
            &[],
            &[index],
            &[("value", self.attr(&format!("{v} : index")))],
        )[0]
    }

    pub fn i64_constant(&self, v: i64) -> MlirValue {
        let i64 = self.ty("i64");
        self.op(
            "arith.constant",
            &[],
            &[i64],
            &[("value", self.attr(&format!("{v} : i64")))],
        )[0]
    }
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

/// The printed form of a type, for matching on dialect types the C API cannot inspect.
pub fn type_text(t: MlirType) -> String {
    unsafe { Type::from_raw(t) }.to_string()
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

/// Parses one operation from `text` (a skeleton a conversion builds), unattached.
pub fn parse_operation(
    context: &Context,
    text: &str,
    origin: &str,
) -> Result<MlirOperation, String> {
    let source = melior::StringRef::new(text);
    let origin_name = melior::StringRef::new(origin);
    // SAFETY: the context is live; a parse failure is reported as a null operation.
    let op = unsafe {
        mlirOperationCreateParse(context.to_raw(), source.to_raw(), origin_name.to_raw())
    };
    if op.ptr.is_null() {
        return Err(format!(
            "internal: {origin}'s skeleton does not parse:\n{text}"
        ));
    }
    Ok(op)
}
