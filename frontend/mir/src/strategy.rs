//! Partitioning strategies: how a region's elements are shared out among threads, as the
//! MIR names them (`Region<f32, Chunked<4>>`), and the dimensions each has.

use std::fmt;

/// How a region's elements are shared out among threads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Thread `t` of the launch (along x) owns element `t`.
    Linear1D,
    /// A row-major 2-D region: the thread at (x, y) owns element (row y, column x).
    Linear2D,
    /// Thread `t` owns the `N` contiguous elements from `t * N` (fewer at the end).
    Chunked(Param),
    /// A read-only 2-D region: the thread at (x, y) reads the neighbourhood of radius `R`
    /// around (row y, column x).
    Stencil2D(Param),
    /// A 3-D region, x fastest: the thread at (x, y, z) owns element (plane z, row y,
    /// column x).
    Linear3D,
    /// Thread `t` (along x) owns element `indices[t]` of the data, where the indices are a
    /// second array the host checked to be in bounds and pairwise distinct. The region's
    /// `Len` is the number of indices, and its element `t` is the data's `indices[t]`.
    Indexed,
}

/// A strategy's number (`N` of `Chunked<N>`, `R` of `Stencil2D<R>`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    Value(u32),
    /// A `const` item outside the kernel (`Chunked<COLS>`), as [`crate::Const::Item`]: only
    /// the macro's translation holds one, and it fills the value in.
    Item(u32),
}

impl Param {
    /// The number; `None` for an item not yet filled in.
    pub fn value(self) -> Option<u32> {
        match self {
            Param::Value(n) => Some(n),
            Param::Item(_) => None,
        }
    }

    /// The number of a strategy of a body parsed from text or validated, which holds no
    /// items ([`crate::validate`] refuses them).
    pub fn number(self) -> u32 {
        self.value().expect(crate::ir::LINKED_HOLD_NO_ITEMS)
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Param::Value(n) => write!(f, "{n}"),
            Param::Item(k) => crate::print::item(f, *k, None),
        }
    }
}

impl Strategy {
    /// Whether the region is laid out in rows (and passed to kernels as a 2-D memref).
    pub fn is_2d(self) -> bool {
        matches!(self, Strategy::Linear2D | Strategy::Stencil2D(_))
    }

    /// Dimensions of the region's coordinates and extents: 1, 2 or 3.
    pub fn rank(self) -> u8 {
        match self {
            Strategy::Linear1D | Strategy::Chunked(_) | Strategy::Indexed => 1,
            Strategy::Linear2D | Strategy::Stencil2D(_) => 2,
            Strategy::Linear3D => 3,
        }
    }

    /// Whether threads may write the region.
    pub fn is_writable(self) -> bool {
        !matches!(self, Strategy::Stencil2D(_))
    }

    pub fn from_name(name: &str) -> Option<Strategy> {
        let param = |prefix: &str| {
            name.strip_prefix(prefix)?
                .strip_suffix('>')?
                .trim()
                .parse::<u32>()
                .ok()
        };
        match name {
            "Linear1D" => Some(Strategy::Linear1D),
            "Linear2D" => Some(Strategy::Linear2D),
            "Linear3D" => Some(Strategy::Linear3D),
            "Indexed" => Some(Strategy::Indexed),
            _ => param("Chunked<")
                .map(|n| Strategy::Chunked(Param::Value(n)))
                .or_else(|| param("Stencil2D<").map(|r| Strategy::Stencil2D(Param::Value(r)))),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Linear1D => f.write_str("Linear1D"),
            Strategy::Linear2D => f.write_str("Linear2D"),
            Strategy::Chunked(n) => write!(f, "Chunked<{n}>"),
            Strategy::Stencil2D(r) => write!(f, "Stencil2D<{r}>"),
            Strategy::Linear3D => f.write_str("Linear3D"),
            Strategy::Indexed => f.write_str("Indexed"),
        }
    }
}
