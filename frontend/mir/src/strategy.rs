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
    Chunked(u32),
    /// A read-only 2-D region: the thread at (x, y) reads the neighbourhood of radius `R`
    /// around (row y, column x).
    Stencil2D(u32),
    /// A 3-D region, x fastest: the thread at (x, y, z) owns element (plane z, row y,
    /// column x).
    Linear3D,
    /// Thread `t` (along x) owns element `indices[t]` of the data, where the indices are a
    /// second array the host checked to be in bounds and pairwise distinct. The region's
    /// `Len` is the number of indices, and its element `t` is the data's `indices[t]`.
    Indexed,
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
                .map(Strategy::Chunked)
                .or_else(|| param("Stencil2D<").map(Strategy::Stencil2D)),
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
