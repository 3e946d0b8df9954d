//! `offload.tile_mma`, `acc += a × b` by a whole workgroup over row-major shared tiles,
//! made into code the target runs:
//!
//! - [`in_loops`]: each thread computes the accumulator's elements `rank`,
//!   `rank + threads`, ..., each a loop over `k` that adds the products to it in the
//!   accumulator's type (the CPU backend, AMD GPUs for now, and `f32`/`f64` tiles);
//! - [`on_tensor_cores`]: `f16`/`bf16` tiles on NVIDIA GPUs. Warp `w` of the workgroup
//!   takes the accumulator's 16 × 16 blocks `w`, `w + warps`, ...; it holds a block in
//!   registers as two `m16n8` accumulators and, for each 16 of `k`, loads its rows of `a`
//!   with `ldmatrix` and its columns of `b` with `ldmatrix.trans` (the layout
//!   `mma.sync` asks for, from row-major tiles) and issues two `mma.sync.m16n8k16`.
//!
//! Both run between the barriers `mir_to_offload` puts around the op, so no thread
//! touches the tiles meanwhile; warps take disjoint blocks and threads disjoint
//! elements, so the op itself writes no slot twice. The tiles are whole `Shared` arrays,
//! at 16-byte boundaries (`offload_mir::SHARED_ALIGN`), and every extent is a multiple
//! of 16 (validated): each `ldmatrix` row address is 16-byte aligned.

use crate::rewrite::{self, Inserter, PassError, refuse};
use melior::Context;
use melior::dialect::arith;
use melior::ir::r#type::{MemRefType, ShapedTypeLike};
use melior::ir::{OperationRef, Type};
use mlir_sys::*;
use offload_dialect::{OffloadType, build, ops};
use offload_mir::Position;

/// The shape `[m, n, k]` of a tile multiplication.
///
/// # Safety
///
/// `op` is a live `offload.tile_mma`.
unsafe fn shape(op: MlirOperation) -> Result<[i64; 3], PassError> {
    let mut shape = [0; 3];
    for (extent, name) in shape.iter_mut().zip(["m", "n", "k"]) {
        // SAFETY: per the contract.
        *extent = match unsafe { rewrite::int_attribute(op, name) } {
            Some(e) if e > 0 && e % 16 == 0 => e,
            _ => {
                return Err(refuse(
                    op,
                    "`offload.tile_mma` needs `m`, `n` and `k`, each a positive multiple of 16",
                ));
            }
        };
    }
    Ok(shape)
}

/// The thread's linear index in its workgroup, and the workgroup's thread count.
fn rank_and_threads(b: &Inserter<'_>) -> (MlirValue, MlirValue) {
    let at = |p: Position, d: u8| b.place(build::position(b.context, p, d, b.location))[0];
    let [x, y, z] = [0, 1, 2].map(|d| at(Position::Thread, d));
    let [dx, dy, dz] = [0, 1, 2].map(|d| at(Position::WorkgroupSize, d));
    let plane = b.arith(arith::muli, dy, z);
    let row = b.arith(arith::addi, y, plane);
    let rows = b.arith(arith::muli, dx, row);
    let rank = b.arith(arith::addi, x, rows);
    let area = b.arith(arith::muli, dx, dy);
    (rank, b.arith(arith::muli, area, dz))
}

/// Expands each `offload.tile_mma` of `func` whose tiles' element type `on_tensor_cores`
/// does not take into per-thread loops of `offload.load`/`offload.store`, before the
/// conversion that lowers those.
///
/// # Safety
///
/// `func` is a live kernel whose tiles are still `!offload.shared` values.
pub unsafe fn in_loops(
    context: &Context,
    func: OperationRef<'_, '_>,
    tensor_cores: impl Fn(Type<'_>) -> bool,
) -> Result<(), PassError> {
    for op in rewrite::collect(func, ops::TILE_MMA) {
        // SAFETY: `op` was just collected from the live kernel and is replaced once.
        unsafe {
            let [acc, a, b] = [0, 1, 2].map(|i| rewrite::operand(op, i));
            let elem_of = |v: MlirValue| match OffloadType::of(context, rewrite::value_type(v)) {
                Ok(Some(OffloadType::Shared { elem })) => Ok(elem),
                _ => Err(refuse(
                    op,
                    "`offload.tile_mma` multiplies `!offload.shared` tiles",
                )),
            };
            let (elem, acc_elem) = (elem_of(a)?, elem_of(acc)?);
            if tensor_cores(elem) {
                continue;
            }
            let [m, n, k] = shape(op)?;
            let ins = Inserter::before(context, op);
            let (rank, threads) = rank_and_threads(&ins);
            let [end, cols, depth, zero, one] = [m * n, n, k, 0, 1].map(|v| ins.index_constant(v));
            let location = ins.location;
            ins.for_loop([rank, end, threads], &[], |ins, slot, _| {
                let load = |ins: &Inserter<'_>, tile: MlirValue, i: MlirValue, ty: Type<'_>| {
                    let op = build::load(context, ins.value(tile), ins.value(i), ty, location);
                    ins.place(op)[0]
                };
                let i = ins.arith(arith::divui, slot, cols);
                let j = ins.arith(arith::remui, slot, cols);
                let row = ins.arith(arith::muli, i, depth);
                let start = load(ins, acc, slot, acc_elem);
                let sum = ins.for_loop([zero, depth, one], &[start], |ins, kk, sum| {
                    let at_a = ins.arith(arith::addi, row, kk);
                    let down = ins.arith(arith::muli, kk, cols);
                    let at_b = ins.arith(arith::addi, down, j);
                    let [x, y] = [(a, at_a), (b, at_b)].map(|(tile, at)| {
                        let v = load(ins, tile, at, elem);
                        if elem == acc_elem {
                            v
                        } else {
                            ins.convert(arith::extf, v, acc_elem)
                        }
                    });
                    let product = ins.arith(arith::mulf, x, y);
                    vec![ins.arith(arith::addf, sum[0], product)]
                });
                let op = build::store(
                    context,
                    ins.value(sum[0]),
                    ins.value(acc),
                    ins.value(slot),
                    location,
                );
                ins.place(op);
                Vec::new()
            });
            rewrite::replace(op, &[]);
        }
    }
    Ok(())
}

/// Whether NVIDIA's tensor cores take tiles of `elem` (`f16`, `bf16`) in
/// [`on_tensor_cores`].
pub fn nvidia_tensor_cores(elem: Type<'_>) -> bool {
    let text = elem.to_string();
    text == "f16" || text == "bf16"
}

/// Builds `name`, which takes the operands and attributes given, and gives its one result.
fn one<'c>(
    b: &Inserter<'c>,
    name: &str,
    operands: &[MlirValue],
    result: Type<'c>,
    attributes: &[(&str, &str)],
) -> MlirValue {
    let attributes: Vec<_> = attributes
        .iter()
        .map(|(n, text)| (*n, b.attr(text)))
        .collect();
    b.op(name, operands, &[result], &attributes)
        .unwrap_or_else(|e| {
            panic!(
                "`{name}` is built as the NVVM dialect defines it: {}",
                e.message
            )
        })[0]
}

/// Expands each `offload.tile_mma` of `func` left by [`in_loops`] into `ldmatrix` and
/// `mma.sync` (see the module docs), once its tiles are workgroup-memory memrefs and
/// before the thread positions are lowered.
///
/// # Safety
///
/// `func` is a live kernel whose tiles are views of static workgroup arrays.
pub unsafe fn on_tensor_cores(
    context: &Context,
    func: OperationRef<'_, '_>,
) -> Result<(), PassError> {
    for op in rewrite::collect(func, ops::TILE_MMA) {
        // SAFETY: `op` was just collected from the live kernel and is replaced once.
        unsafe {
            let [acc, a, b] = [0, 1, 2].map(|i| rewrite::operand(op, i));
            let elem = MemRefType::try_from(rewrite::value_type(a))
                .map_err(|_| refuse(op, "`offload.tile_mma` multiplies memrefs here"))?
                .element()
                .to_string();
            let [m, n, k] = shape(op)?;
            let ins = Inserter::before(context, op);
            let ty = |text: &str| Type::parse(context, text).expect("a type the dialects spell");
            let c = |v: i64| ins.index_constant(v);
            let (rank, threads) = rank_and_threads(&ins);
            let warp = ins.arith(arith::divui, rank, c(32));
            let warps = ins.arith(arith::divui, threads, c(32));
            let lane = ins.arith(arith::remui, rank, c(32));
            // `mma.sync`'s fragments: lane `4g + t` holds rows `g` and `g + 8`, columns
            // `2t` and `2t + 1` of each 8 columns of the accumulator.
            let group = ins.arith(arith::divui, lane, c(4));
            let pair = ins.arith(arith::muli, ins.arith(arith::remui, lane, c(4)), c(2));
            // `ldmatrix` of a 16 × 16 block: lanes 8j..8j+7 give the row addresses of
            // 8 × 8 matrix j, the top-left, bottom-left, top-right, bottom-right quarter.
            let load_row = ins.arith(arith::remui, lane, c(16));
            let load_col = ins.arith(arith::muli, ins.arith(arith::divui, lane, c(16)), c(8));
            let base = |tile| {
                one(
                    &ins,
                    "memref.extract_aligned_pointer_as_index",
                    &[tile],
                    ins.index(),
                    &[],
                )
            };
            let (base_a, base_b) = (base(a), base(b));
            let (cols, depth, column_blocks) = (c(n), c(k), c(n / 16));
            let blocks = c((m / 16) * (n / 16));
            ins.for_loop([warp, blocks, warps], &[], |ins, block, _| {
                let c = |v: i64| ins.index_constant(v);
                let add = |x, y| ins.arith(arith::addi, x, y);
                let mul = |x, y| ins.arith(arith::muli, x, y);
                let top = mul(ins.arith(arith::divui, block, column_blocks), c(16));
                let left = mul(ins.arith(arith::remui, block, column_blocks), c(16));
                let slots: Vec<MlirValue> = (0..8)
                    .map(|e| {
                        let (h, e) = (e / 4, e % 4);
                        let row = add(top, add(group, c(8 * (e / 2))));
                        let col = add(left, add(pair, c(8 * h + e % 2)));
                        add(mul(row, cols), col)
                    })
                    .collect();
                let start: Vec<MlirValue> = slots
                    .iter()
                    .map(|&s| ins.load(acc, &[s], ty("f32")))
                    .collect();
                let sums = ins.for_loop([c(0), depth, c(16)], &start, |ins, kk, sums| {
                    let add = |x, y| ins.arith(arith::addi, x, y);
                    let mul = |x, y| ins.arith(arith::muli, x, y);
                    // The four 8 × 8 quarters of the 16 × 16 block from (row, col) of a
                    // tile `stride` wide, as `mma.sync` operands.
                    let quarters = |base, row, col, stride, layout: &str| -> Vec<MlirValue> {
                        let slot = add(mul(row, stride), col);
                        let byte = add(base, mul(slot, ins.index_constant(2)));
                        let word = ins.convert(arith::index_cast, byte, ins.int(64));
                        let at = one(ins, "llvm.inttoptr", &[word], ty("!llvm.ptr<3>"), &[]);
                        let layout = format!("#nvvm.mma_layout<{layout}>");
                        let quad = one(
                            ins,
                            "nvvm.ldmatrix",
                            &[at],
                            ty("!llvm.struct<(i32, i32, i32, i32)>"),
                            &[
                                ("eltType", "#nvvm.ld_st_matrix_elt_type<b16>"),
                                ("layout", &layout),
                                ("num", "4 : i32"),
                                ("shape", "#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                            ],
                        );
                        (0..4)
                            .map(|i| {
                                let position = format!("array<i64: {i}>");
                                let word = one(
                                    ins,
                                    "llvm.extractvalue",
                                    &[quad],
                                    ins.int(32),
                                    &[("position", &position)],
                                );
                                // `f16` operands are pairs; `bf16` ones 32-bit words.
                                if elem == "f16" {
                                    one(ins, "llvm.bitcast", &[word], ty("vector<2xf16>"), &[])
                                } else {
                                    word
                                }
                            })
                            .collect()
                    };
                    let a_regs =
                        quarters(base_a, add(top, load_row), add(kk, load_col), depth, "row");
                    // Transposed: each lane gets two rows' elements of one column.
                    let b_regs =
                        quarters(base_b, add(kk, load_row), add(left, load_col), cols, "col");
                    let ptx = format!("#nvvm.mma_type<{elem}>");
                    let mut next = Vec::new();
                    for h in 0..2 {
                        let mut operands = a_regs.clone();
                        operands.extend_from_slice(&b_regs[2 * h..2 * h + 2]);
                        operands.extend_from_slice(&sums[4 * h..4 * h + 4]);
                        let d = one(
                            ins,
                            "nvvm.mma.sync",
                            &operands,
                            ty("!llvm.struct<(f32, f32, f32, f32)>"),
                            &[
                                ("layoutA", "#nvvm.mma_layout<row>"),
                                ("layoutB", "#nvvm.mma_layout<col>"),
                                ("multiplicandAPtxType", &ptx),
                                ("multiplicandBPtxType", &ptx),
                                ("operandSegmentSizes", "array<i32: 4, 2, 4>"),
                                ("shape", "#nvvm.shape<m = 16, n = 8, k = 16>"),
                            ],
                        );
                        for i in 0..4 {
                            let position = format!("array<i64: {i}>");
                            next.push(one(
                                ins,
                                "llvm.extractvalue",
                                &[d],
                                ty("f32"),
                                &[("position", &position)],
                            ));
                        }
                    }
                    next
                });
                for (value, slot) in sums.into_iter().zip(slots) {
                    ins.store(value, acc, &[slot]);
                }
                Vec::new()
            });
            rewrite::replace(op, &[]);
        }
    }
    Ok(())
}
