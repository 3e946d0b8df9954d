//! The kernel ABI both target conversions share, as `offload_mir::abi::params_of`
//! describes it (the runtime packs the words by the same description): slices and 1-D
//! regions become `memref<?xT>`; 2-D and 3-D regions a
//! `memref<?x?xT>` or `memref<?x?x?xT>` followed by their margin (an `index`); an
//! `Indexed` region its data's `memref<?xT>` followed by its indices' `memref<?xi64>`.
//! A hidden last argument `memref<?xi64>` receives panic reports, and the `offload`
//! memory ops become `memref` ops.
//!
//! The panic buffer holds [`PANIC_BUFFER_WORDS`] words: `[count, site, value0, value1,
//! scratch x3]`. A panicking thread adds one to `count` atomically; the thread that saw
//! zero writes its site and values into words 1..4, every later one into the scratch
//! words, so the first report is never overwritten and no thread branches on it.

use crate::rewrite::{self, Inserter, PassError, refuse};
use melior::dialect::arith::{self, CmpiPredicate};
use melior::{
    Context,
    ir::{OperationRef, r#type::TypeLike},
};
use mlir_sys::*;
use offload_dialect::{AtomicKind, OffloadType, ops};
use offload_mir::abi;
use std::collections::HashMap;

pub use offload_mir::abi::PANIC_BUFFER_WORDS;

/// Rewrites one kernel function's signature and memory operations, one pattern per
/// `offload` op. Returns the hidden panic-buffer argument.
///
/// # Safety
///
/// `func` must be a live `func.func` in the module being converted.
pub unsafe fn lower(context: &Context, func: MlirOperation) -> Result<MlirValue, PassError> {
    unsafe {
        let root = OperationRef::from_raw(func);
        // The partition's ops read regions as they are before this retyping.
        for name in [ops::REGION_INDEX, ops::REGION_COORD] {
            if let Some(&op) = rewrite::collect(root, name).first() {
                let message = format!("`{name}` is left: run `offload-partition` first");
                return Err(refuse(op, message));
            }
        }
        let entry = rewrite::entry_block(func);
        let collapsed = retype_arguments(context, func, entry)?;
        let b = Inserter::before(context, rewrite::first_operation(entry));
        let panic_ty = b.memref(b.int(64), 1, None);
        let panic_buffer = rewrite::add_argument(entry, panic_ty, func);
        rewrite::set_function_type(context, func, entry);

        lower_lengths(context, root, &collapsed);
        lower_extents(context, root, &collapsed)?;
        lower_margins(context, root, &collapsed);
        lower_loads_and_stores(context, root, &collapsed);
        lower_atomics(context, root)?;
        lower_panics(context, root, panic_buffer)?;
        Ok(panic_buffer)
    }
}

/// What each region argument became, by the argument's handle.
struct Collapsed(HashMap<usize, RegionArgument>);

/// A region argument in the ABI.
#[derive(Copy, Clone)]
struct RegionArgument {
    /// The memref it arrives as: `rank` dimensions, slowest first.
    shaped: MlirValue,
    rank: usize,
    /// The 1-D view its elements are addressed through (the memref itself when 1-D).
    flat: MlirValue,
    /// The margin of a 2-D or 3-D region.
    margin: Option<MlirValue>,
    /// An `Indexed` region's indices: its element `t` is `flat[indices[t]]`.
    indices: Option<MlirValue>,
}

impl Collapsed {
    fn get(&self, v: MlirValue) -> Option<RegionArgument> {
        self.0.get(&(v.ptr as usize)).copied()
    }

    /// The view to address `v`'s elements through: its flat view if it is a region,
    /// else itself.
    fn view(&self, v: MlirValue) -> MlirValue {
        self.get(v).map_or(v, |r| r.flat)
    }
}

/// Region, slice and atomic arguments become memrefs (and the words that come with
/// them, inserted after). 2-D and 3-D regions are read and written through a collapsed
/// 1-D view made once at entry.
///
/// # Safety
///
/// `func` must be a live function whose entry block is `entry`.
unsafe fn retype_arguments(
    context: &Context,
    func: MlirOperation,
    entry: MlirBlock,
) -> Result<Collapsed, PassError> {
    unsafe {
        let mut collapsed = HashMap::new();
        let first_op = rewrite::first_operation(entry);
        let index = melior::ir::Type::index(context);
        let mut pos = 0;
        for arg in rewrite::arguments(entry) {
            pos += 1;
            let ty = OffloadType::of(context, rewrite::value_type(arg))
                .map_err(|e| refuse(func, e.to_string()))?;
            let (elem, strategy) = match ty {
                Some(OffloadType::Region { elem, strategy }) => (elem, Some(strategy)),
                Some(OffloadType::Slice { elem } | OffloadType::Atomic { elem }) => (elem, None),
                Some(OffloadType::Shared { .. }) | None => continue,
            };
            // The parameters the argument becomes, as `offload_mir::abi` describes them
            // for the runtime's packing too: its data, then a margin or the indices.
            let params = match strategy {
                Some(s) => abi::region_params(s),
                None => abi::params_of(&offload_mir::Ty::Slice(offload_mir::ScalarTy::U8)),
            };
            let [abi::Param::Data { rank }, extra @ ..] = params else {
                return Err(refuse(func, "the ABI gives every container its data first"));
            };
            let rank = *rank as usize;
            let b = Inserter::before(context, first_op);
            if !(elem.is_integer() || elem.is_float() || elem.is_index()) {
                return Err(refuse(func, format!("cannot form a memref of `{elem}`")));
            }
            let memref = b.memref(elem, rank, None);
            rewrite::set_argument_type(arg, memref);
            if strategy.is_none() {
                continue;
            }
            let mut region = RegionArgument {
                shaped: arg,
                rank,
                flat: arg,
                margin: None,
                indices: None,
            };
            if rank > 1 {
                let b = Inserter::before(context, first_op);
                // One group of every dimension: `[[0, 1, ...]]`.
                use melior::ir::attribute::ArrayAttribute;
                let all: Vec<_> = (0..rank as i64).map(|d| b.i64_attr(d)).collect();
                let groups = [ArrayAttribute::new(context, &all).into()];
                region.flat = b.op(
                    "memref.collapse_shape",
                    &[arg],
                    &[b.memref(elem, 1, None)],
                    &[(
                        "reassociation",
                        ArrayAttribute::new(context, &groups).into(),
                    )],
                )?[0];
            }
            for param in extra {
                let (ty, slot) = match param {
                    abi::Param::Margin => (index, &mut region.margin),
                    abi::Param::Indices => (b.memref(b.int(64), 1, None), &mut region.indices),
                    abi::Param::Data { .. } | abi::Param::Scalar => {
                        return Err(refuse(func, "the ABI gives a region one data memref"));
                    }
                };
                *slot = Some(rewrite::insert_argument(entry, pos, ty, func));
                pos += 1;
            }
            collapsed.insert(arg.ptr as usize, region);
        }
        Ok(Collapsed(collapsed))
    }
}

/// `offload.len` → the element count; a multi-dimensional region's collapsed view has
/// all its elements, an `Indexed` region's length is its index count.
///
/// # Safety
///
/// `root` and everything under it must be live.
unsafe fn lower_lengths(context: &Context, root: OperationRef<'_, '_>, collapsed: &Collapsed) {
    unsafe {
        for op in rewrite::collect(root, ops::LEN) {
            let b = Inserter::before(context, op);
            let zero = b.index_constant(0);
            let container = rewrite::operand(op, 0);
            let counted = match collapsed.get(container) {
                Some(RegionArgument {
                    indices: Some(indices),
                    ..
                }) => indices,
                _ => collapsed.view(container),
            };
            let dim = [b.dim(counted, zero)];
            rewrite::replace(op, &dim);
        }
    }
}

/// `offload.extent` → a memref dimension: the row length is the last dimension, rows per
/// plane the one before it, planes the first of a 3-D region. Past a region's rank the
/// extent is 1.
///
/// # Safety
///
/// `root` and everything under it must be live.
unsafe fn lower_extents(
    context: &Context,
    root: OperationRef<'_, '_>,
    collapsed: &Collapsed,
) -> Result<(), PassError> {
    unsafe {
        for op in rewrite::collect(root, ops::EXTENT) {
            let dim = rewrite::int_attribute(op, "dim")
                .ok_or_else(|| refuse(op, "`offload.extent` needs a `dim`"))?;
            let operand = rewrite::operand(op, 0);
            let region = collapsed
                .get(operand)
                .ok_or_else(|| refuse(op, "`offload.extent` needs a region argument"))?;
            let b = Inserter::before(context, op);
            let v = match usize::try_from(dim) {
                Ok(d) if d < region.rank => {
                    let memref_dim = b.index_constant((region.rank - 1 - d) as i64);
                    b.dim(region.shaped, memref_dim)
                }
                Ok(_) => b.index_constant(1),
                Err(_) => return Err(refuse(op, "`offload.extent` needs a `dim` of 0, 1 or 2")),
            };
            rewrite::replace(op, &[v]);
        }
        Ok(())
    }
}

/// `offload.margin` → the margin argument of a 2-D or 3-D region; 0 for others.
///
/// # Safety
///
/// `root` and everything under it must be live.
unsafe fn lower_margins(context: &Context, root: OperationRef<'_, '_>, collapsed: &Collapsed) {
    unsafe {
        for op in rewrite::collect(root, ops::MARGIN) {
            let margin = collapsed
                .get(rewrite::operand(op, 0))
                .and_then(|r| r.margin);
            let v = margin.unwrap_or_else(|| Inserter::before(context, op).index_constant(0));
            rewrite::replace(op, &[v]);
        }
    }
}

/// `offload.load` and `offload.store` → `memref.load` and `memref.store`; element `t`
/// of an `Indexed` region is its data's element `indices[t]`.
///
/// # Safety
///
/// `root` and everything under it must be live.
unsafe fn lower_loads_and_stores(
    context: &Context,
    root: OperationRef<'_, '_>,
    collapsed: &Collapsed,
) {
    unsafe {
        // The memref and index an element of `container` is at.
        let element = |b: &Inserter<'_>, container: MlirValue, index: MlirValue| match collapsed
            .get(container)
        {
            Some(RegionArgument {
                indices: Some(indices),
                flat,
                ..
            }) => {
                let at = b.load(indices, &[index], b.int(64));
                (flat, b.convert(arith::index_cast, at, b.index()))
            }
            _ => (collapsed.view(container), index),
        };
        for op in rewrite::collect(root, ops::LOAD) {
            let b = Inserter::before(context, op);
            let (memref, index) = element(&b, rewrite::operand(op, 0), rewrite::operand(op, 1));
            let elem = rewrite::result_type(op);
            let v = [b.load(memref, &[index], elem)];
            rewrite::replace(op, &v);
        }
        for op in rewrite::collect(root, ops::STORE) {
            let b = Inserter::before(context, op);
            let value = rewrite::operand(op, 0);
            let (memref, index) = element(&b, rewrite::operand(op, 1), rewrite::operand(op, 2));
            b.store(value, memref, &[index]);
            rewrite::replace(op, &[]);
        }
    }
}

/// `offload.atomic_rmw` → `memref.atomic_rmw` of the same kind; `offload.atomic_cas` →
/// a compare-and-swap loop.
///
/// # Safety
///
/// `root` and everything under it must be live.
unsafe fn lower_atomics(context: &Context, root: OperationRef<'_, '_>) -> Result<(), PassError> {
    unsafe {
        for op in rewrite::collect(root, ops::ATOMIC_RMW) {
            let kind = rewrite::int_attribute(op, "kind")
                .and_then(offload_dialect::AtomicKind::from_code)
                .ok_or_else(|| {
                    refuse(
                        op,
                        "`offload.atomic_rmw` needs a `kind` that names an atomic operation",
                    )
                })?;
            let b = Inserter::before(context, op);
            let ty = rewrite::result_type(op);
            let (atomic, index, value) = (
                rewrite::operand(op, 0),
                rewrite::operand(op, 1),
                rewrite::operand(op, 2),
            );
            let v = b.atomic_rmw(kind, value, atomic, index, ty);
            rewrite::replace(op, &[v]);
        }
        for op in rewrite::collect(root, ops::ATOMIC_CAS) {
            let b = Inserter::before(context, op);
            let ty = rewrite::result_type(op);
            let operands = rewrite::operands(op);
            let v = b.compare_and_swap(operands[0], operands[1], operands[2], operands[3], ty);
            rewrite::replace(op, &[v]);
        }
        Ok(())
    }
}

/// `offload.panic` → the report into the panic buffer (see the module docs).
///
/// # Safety
///
/// `root` and everything under it must be live; `panic_buffer` is the kernel's.
unsafe fn lower_panics(
    context: &Context,
    root: OperationRef<'_, '_>,
    panic_buffer: MlirValue,
) -> Result<(), PassError> {
    unsafe {
        for op in rewrite::collect(root, ops::PANIC) {
            let site = rewrite::int_attribute(op, "site")
                .ok_or_else(|| refuse(op, "`offload.panic` needs an integer `site`"))?;
            let values = rewrite::operands(op);
            let b = Inserter::before(context, op);
            let i64 = b.int(64);
            let zero = b.index_constant(0);
            let one = b.i64_constant(1);
            let seen = b.atomic_rmw(AtomicKind::AddI, one, panic_buffer, zero, i64);
            let none_before = b.i64_constant(0);
            let first = b.cmpi(CmpiPredicate::Eq, seen, none_before);
            let report = b.index_constant(1);
            let scratch = b.index_constant(4);
            let mut slot = b.select(first, report, scratch);
            let step = b.index_constant(1);
            let site = b.i64_constant(site);
            for word in std::iter::once(site).chain(values) {
                b.store(word, panic_buffer, &[slot]);
                slot = b.arith(arith::addi, slot, step);
            }
            rewrite::replace(op, &[]);
        }
        Ok(())
    }
}

/// The kernel functions of a module: `func.func`s carrying the `offload.kernel` attribute.
pub fn kernels(root: OperationRef<'_, '_>) -> Vec<MlirOperation> {
    rewrite::collect(root, "func.func")
        .into_iter()
        // SAFETY: the functions were just collected from the live module.
        .filter(|f| unsafe { rewrite::has_attribute(*f, offload_dialect::KERNEL_ATTR) })
        .collect()
}

/// A kernel function's symbol name.
pub fn name(func: OperationRef<'_, '_>) -> Result<String, PassError> {
    // SAFETY: `func` is a live operation.
    unsafe { rewrite::string_attribute(func.to_raw(), "sym_name") }
        .ok_or_else(|| refuse(func.to_raw(), "a kernel function needs a `sym_name`"))
}

/// What an `offload.alloc_shared` op declares.
pub struct SharedArray<'c> {
    /// The element type, e.g. `f32`.
    pub elem: melior::ir::Type<'c>,
    pub element_bytes: usize,
    /// Elements of a static array; `None` for dynamic shared memory.
    pub len: Option<u64>,
    /// Byte offset of a static array in the workgroup's static shared memory; where
    /// dynamic shared memory starts for targets that lay both out in one block.
    pub offset: u64,
}

impl<'c> SharedArray<'c> {
    /// # Safety
    ///
    /// `op` must be a live `offload.alloc_shared`.
    pub unsafe fn of(
        context: &'c Context,
        op: MlirOperation,
    ) -> Result<SharedArray<'c>, PassError> {
        unsafe {
            let ty = rewrite::result_type(op);
            let Ok(Some(OffloadType::Shared { elem })) = OffloadType::of(context, ty) else {
                return Err(refuse(
                    op,
                    format!("`offload.alloc_shared` must yield `!offload.shared<T>`, not `{ty}`"),
                ));
            };
            let bits = match melior::ir::r#type::IntegerType::try_from(elem) {
                Ok(int) => Some(int.width()),
                Err(_) if elem.is_f16() || elem.is_bf16() => Some(16),
                Err(_) if elem.is_f32() => Some(32),
                Err(_) if elem.is_f64() => Some(64),
                Err(_) => None,
            };
            let element_bytes = match bits {
                Some(bits @ (8 | 16 | 32 | 64)) => bits as usize / 8,
                _ => return Err(refuse(op, format!("shared memory cannot hold `{elem}`"))),
            };
            let len = rewrite::int_attribute(op, "len")
                .ok_or_else(|| refuse(op, "`offload.alloc_shared` needs a `len`"))?;
            let offset = rewrite::int_attribute(op, "offset")
                .ok_or_else(|| refuse(op, "`offload.alloc_shared` needs an `offset`"))?;
            Ok(SharedArray {
                elem,
                element_bytes,
                len: u64::try_from(len).ok(),
                offset: u64::try_from(offset).map_err(|_| "a shared offset is negative")?,
            })
        }
    }
}

/// The module attribute giving the threads per workgroup (`array<i64: x, y, z>`) of
/// every launch the code is for (`CpuTarget::workgroup_size`, `GpuTarget::block_size`); without it, any.
pub const WORKGROUP_SIZE_ATTR: &str = "offload.workgroup_size";

/// The workgroup size the module attribute [`WORKGROUP_SIZE_ATTR`] gives, if any.
///
/// # Safety
///
/// `root` is the live module operation.
pub unsafe fn workgroup_size(root: MlirOperation) -> Result<Option<[i64; 3]>, PassError> {
    // SAFETY: per the contract.
    unsafe {
        if !rewrite::has_attribute(root, WORKGROUP_SIZE_ATTR) {
            return Ok(None);
        }
        match rewrite::i64_array_attribute(root, WORKGROUP_SIZE_ATTR).as_deref() {
            Some(&[x, y, z]) if x > 0 && y > 0 && z > 0 => Ok(Some([x, y, z])),
            _ => Err(refuse(
                root,
                format!("`{WORKGROUP_SIZE_ATTR}` must be `array<i64: x, y, z>` of sizes above 0"),
            )),
        }
    }
}
