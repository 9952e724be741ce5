//! Vector search: exact integer dot products (the reference) and an HNSW graph
//! (instant-distance) over a segment, whose candidates are re-scored exactly.

use std::sync::Arc;

use instant_distance::{Builder, Point, Search};

use super::segment::Vectors;

/// Seed of every HNSW build, so that a build is reproducible (on one thread).
pub const HNSW_SEED: u64 = 0x6366_7320_686e_7377;
/// `ef_construction` of the shipped parameters.
pub const EF_CONSTRUCTION: usize = 100;
/// `ef_search` of the shipped parameters: candidates taken from the graph per query.
pub const EF_SEARCH: usize = 128;

/// The exact dot product of two vectors of one length.
///
/// Products of `i16`s fit an `i32`, and wrapping `i32` addition is exact whenever the
/// true sum fits an `i32`, in any order of addition. By Cauchy-Schwarz that holds when
/// `|a|^2 |b|^2 < 2^62`, which is the case for the default embedder's unit vectors
/// (`|v| <= 2^15`), so the fast path (which compilers turn into multiply-add
/// instructions) is taken with `norms` under that bound and `i64` otherwise.
pub fn dot(a: &[i16], b: &[i16], norm2_a: u64, norm2_b: u64) -> i64 {
    if u128::from(norm2_a) * u128::from(norm2_b) < 1 << 62 {
        let mut acc = 0i32;
        for (x, y) in a.iter().zip(b) {
            acc = acc.wrapping_add(i32::from(*x) * i32::from(*y));
        }
        i64::from(acc)
    } else {
        a.iter()
            .zip(b)
            .map(|(x, y)| i64::from(*x) * i64::from(*y))
            .sum()
    }
}

/// The squared norm of a vector.
pub fn norm2(v: &[i16]) -> u64 {
    v.iter()
        .map(|&x| (i64::from(x) * i64::from(x)) as u64)
        .sum()
}

/// A point of the graph: one vector of a segment's vectors.
#[derive(Clone, Debug)]
pub(crate) struct VPoint {
    vectors: Arc<Vectors>,
    index: u32,
}

impl Point for VPoint {
    fn distance(&self, other: &Self) -> f32 {
        let i = self.index as usize;
        let j = other.index as usize;
        let d = dot(
            self.vectors.get(i),
            other.vectors.get(j),
            self.vectors.norms2[i],
            other.vectors.norms2[j],
        );
        // Monotone in the dot product; ties and rounding are settled by re-scoring.
        ((1i64 << 31) - d) as f32
    }
}

/// An HNSW graph over the vectors of one segment.
pub(crate) struct Hnsw {
    graph: instant_distance::Hnsw<VPoint>,
}

impl std::fmt::Debug for Hnsw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hnsw")
            .field("points", &self.graph.iter().count())
            .finish()
    }
}

impl Hnsw {
    /// Builds the graph of a segment's vectors on one thread with [`HNSW_SEED`].
    pub fn build(vectors: &Arc<Vectors>) -> Self {
        let points: Vec<VPoint> = (0..vectors.norms2.len())
            .map(|i| VPoint {
                vectors: Arc::clone(vectors),
                index: i as u32,
            })
            .collect();
        let build = || {
            Builder::default()
                .seed(HNSW_SEED)
                .ef_construction(EF_CONSTRUCTION)
                .ef_search(EF_SEARCH)
                .build_hnsw(points)
        };
        // instant-distance inserts in parallel with rayon: one thread keeps it reproducible.
        let (graph, _) = match rayon::ThreadPoolBuilder::new().num_threads(1).build() {
            Ok(pool) => pool.install(build),
            Err(_) => build(),
        };
        Self { graph }
    }

    /// Local indexes of up to [`EF_SEARCH`] approximate nearest neighbours of `query`.
    pub fn candidates(&self, query: &[i16]) -> Vec<usize> {
        let mut vectors = Vectors::with_capacity(query.len(), 1);
        vectors.push(query);
        let vectors = Arc::new(vectors);
        let point = VPoint { vectors, index: 0 };
        let mut search = Search::default();
        self.graph
            .search(&point, &mut search)
            .map(|item| item.point.index as usize)
            .collect()
    }
}
