//! `offload-partition`: turns `offload.region_index` and `offload.region_coord` into
//! index arithmetic over the thread's position, by the region's partitioning strategy.
//! The result still uses the target-neutral `offload.thread_id`/`workgroup_id`/
//! `workgroup_dim` ops, so GPU and CPU conversions share this pass.
//!
//! With `gid(d) = workgroup_id(d) * workgroup_dim(d) + thread_id(d)`:
//!
//! | strategy | element index | coordinates (column, row, plane) |
//! |---|---|---|
//! | `Linear1D`, `Indexed` | `gid(0)` | `(gid(0), 0, 0)` |
//! | `Chunked<N>` | `gid(0) * N` (the chunk's first element) | `(gid(0), 0, 0)` |
//! | `Linear2D`, `Stencil2D<R>` | `row * row_length + column` | `(gid(0) + m, gid(1) + m, 0)` |
//! | `Linear3D` | `(plane * rows + row) * row_length + column` | `(gid(0) + m, gid(1) + m, gid(2) + m)` |
//!
//! `m` is the region's margin (`offload.margin`): 0, or an interior region's. An
//! `Indexed` region's element `t` is found through its indices when memory ops are
//! lowered (`kernel_abi`).

use crate::rewrite::{self, Inserter, PassError, refuse};
use melior::{Context, dialect::arith, ir::OperationRef};
use mlir_sys::MlirValue;
use offload_dialect::{OffloadType, build, ops};
use offload_mir::{Position, Strategy};

pub const NAME: &str = "offload-partition";

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), PassError> {
    for name in [ops::REGION_INDEX, ops::REGION_COORD] {
        for op in rewrite::collect(root, name) {
            // SAFETY: `op` was just collected from the live module and is rewritten once.
            unsafe {
                let region = rewrite::operand(op, 0);
                let ty = rewrite::value_type(region);
                let Some(OffloadType::Region { strategy, .. }) =
                    OffloadType::of(context, ty).map_err(|e| refuse(op, e.to_string()))?
                else {
                    return Err(refuse(
                        op,
                        format!("`{name}` needs a region operand, found `{ty}`"),
                    ));
                };
                let b = Inserter::before(context, op);
                let value = if name == ops::REGION_INDEX {
                    element_index(&b, region, strategy)
                } else {
                    let dim = rewrite::int_attribute(op, "dim")
                        .ok_or_else(|| refuse(op, "`offload.region_coord` needs a `dim`"))?;
                    if !(0..3).contains(&dim) {
                        return Err(refuse(
                            op,
                            format!("region dimension {dim} is out of range"),
                        ));
                    }
                    coordinate(&b, region, strategy, dim as u8)
                };
                rewrite::replace(op, &[value]);
            }
        }
    }
    Ok(())
}

/// The thread's coordinate along `dim` in a region of `strategy`.
fn coordinate(b: &Inserter<'_>, region: MlirValue, strategy: Strategy, dim: u8) -> MlirValue {
    match strategy.rank() {
        rank if dim >= rank => b.index_constant(0),
        1 => global_id(b, 0),
        _ => {
            let margin = b.place(build::margin(b.context, b.value(region), b.location))[0];
            let id = global_id(b, dim);
            b.arith(arith::addi, id, margin)
        }
    }
}

/// The thread's position in the whole launch along `dim`.
fn global_id(b: &Inserter<'_>, dim: u8) -> MlirValue {
    let position = |p| b.place(build::position(b.context, p, dim, b.location))[0];
    let thread = position(Position::Thread);
    let group = position(Position::Workgroup);
    let size = position(Position::WorkgroupSize);
    let base = b.arith(arith::muli, group, size);
    b.arith(arith::addi, base, thread)
}

fn element_index(b: &Inserter<'_>, region: MlirValue, strategy: Strategy) -> MlirValue {
    match strategy {
        Strategy::Linear1D | Strategy::Indexed => global_id(b, 0),
        Strategy::Chunked(n) => {
            let n = b.index_constant(n.number() as i64);
            let chunk = global_id(b, 0);
            b.arith(arith::muli, chunk, n)
        }
        Strategy::Linear2D | Strategy::Stencil2D(_) | Strategy::Linear3D => {
            // Slowest coordinate first: `(plane * rows + row) * row_length + column`.
            let rank = strategy.rank();
            let mut at = coordinate(b, region, strategy, rank - 1);
            for d in (0..rank - 1).rev() {
                let extent = build::extent(b.context, b.value(region), d, b.location);
                let extent = b.place(extent)[0];
                let scaled = b.arith(arith::muli, at, extent);
                let c = coordinate(b, region, strategy, d);
                at = b.arith(arith::addi, scaled, c);
            }
            at
        }
    }
}
