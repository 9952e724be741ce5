//! cfs-core: the data model of cfs and everything that decides its bytes.
//!
//! Ids, hashes, the canonical encoding of every entity, the Merkle commitment over the
//! five tables, inclusion proofs and state diffs. This crate does no I/O: the same
//! inputs give the same bytes on every machine, which `docs/spec.md` pins down and the
//! test vectors check. (It reads one environment variable, `CFS_SIMD` in [`cpu`], which
//! chooses the instructions that compute those bytes, never the bytes.)

mod bucket;
mod chunk;
pub mod cpu;
mod diff;
mod document;
mod edge;
mod embedding;
mod encode;
mod error;
mod hash;
mod hash_many;
mod id;
mod lookup;
mod merkle;
mod path;
mod proof;
mod record;
mod rules;
mod state;
mod table;

pub use bucket::{
    BUCKET_BITS, Bucket, BucketedTable, N_BUCKETS, TopTree, bucket_roots_from_sorted,
    table_root_from_sorted,
};
pub use chunk::{
    Chunk, ChunkDraft, ChunkEncodings, ChunkKind, Symbol, SymbolKind, Window, hierarchical_hash,
};
pub use diff::{StateDiff, TableDiff};
pub use document::{Document, MetaEntry, ParseProfile};
pub use edge::{Edge, EdgeKind, EntityId};
pub use embedding::{Embedding, decode_vector, encode_vector};
pub use encode::Canonical;
pub use error::{CoreError, ProofError};
pub use hash::{
    ContentHash, HASH_LEN, LeafHash, MerkleRoot, ModelHash, ProfileHash, StateRoot, TextHash,
    context, hex_decode, hex_encode,
};
pub use id::{ChunkId, DocumentId, EmbeddingId, PathId, namespace};
pub use lookup::PrefixIndex;
pub use merkle::{MerklePath, PathStep, merkle_path, merkle_root, merkle_roots, root_from_path};
pub use path::{MAX_PATH_BYTES, PathEntry, validate_rel_path};
pub use proof::{ChunkProof, InclusionProof};
pub use record::{ChangeSummary, StateRecord, TableChange};
pub use rules::{Rows, check_rows};
pub use state::{CanonicalState, DocumentParts, document_edges, document_edges_of};
pub use table::{Entity, Table, TableRoots};

/// The version of `docs/spec.md` this crate implements. Any change to an encoding, an id
/// rule or the commitment scheme bumps it.
pub const SPEC_VERSION: u32 = 1;
