//! Cost of the commitment at one million chunk leaves: the full state root (what
//! `verify` recomputes) and the update of one bucket (what a one-file commit pays).
//!
//! Run: `cargo bench -p cfs-core --bench commitment`. Each benchmark checks its result
//! against an independent computation before timing it.

use std::hint::black_box;

use cfs_core::{
    Bucket, BucketedTable, Chunk, ChunkKind, DocumentId, Edge, Entity, LeafHash, MerkleRoot,
    N_BUCKETS, TableRoots, TextHash, TopTree, merkle_root, merkle_roots, table_root_from_sorted,
};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use rayon::prelude::*;

const N_LEAVES: u32 = 1_000_000;

/// Sorted (bucket, leaf) pairs with uniformly spread 16-byte keys, as chunk ids are.
fn leaves(n: u32) -> Vec<([u8; 16], Bucket, [u8; 32])> {
    let mut out: Vec<([u8; 16], Bucket, [u8; 32])> = (0..n)
        .into_par_iter()
        .map(|i| {
            let h = blake3::hash(&i.to_le_bytes());
            let key: [u8; 16] = h.as_bytes()[..16].try_into().expect("16 bytes");
            let leaf = *blake3::hash(h.as_bytes()).as_bytes();
            (key, Bucket::of_key(&key), leaf)
        })
        .collect();
    out.par_sort_unstable_by_key(|(k, _, _)| *k);
    out
}

fn state_root_at_one_million(c: &mut Criterion) {
    let rows = leaves(N_LEAVES);
    let sorted: Vec<(Bucket, [u8; 32])> = rows.iter().map(|(_, b, l)| (*b, *l)).collect();
    let mut table = BucketedTable::new();
    for (key, bucket, leaf) in &rows {
        table.insert(*bucket, *key, *leaf);
    }
    let full = table_root_from_sorted(&sorted).expect("sorted");
    assert_eq!(table.root(), full, "incremental and full roots disagree");

    let mut group = c.benchmark_group("commitment_1M");
    group.sample_size(10);
    group.bench_function("state_root_full_1M_chunk_leaves", |b| {
        b.iter(|| {
            let chunks = table_root_from_sorted(black_box(&sorted)).expect("sorted");
            let mut roots = TableRoots::empty();
            roots.chunks = chunks;
            black_box(roots.state_root())
        })
    });

    // One-file edit: one chunk replaced, i.e. one leaf removed and one inserted (in
    // general in two buckets), then the root.
    let mut i = 0u32;
    group.sample_size(100);
    group.bench_function("one_chunk_update_1M", |b| {
        b.iter_batched(
            || {
                i += 1;
                let (key, bucket, _) = rows[(i as usize * 7919) % rows.len()];
                let fresh = blake3::hash(&(N_LEAVES + i).to_le_bytes());
                let new_key: [u8; 16] = fresh.as_bytes()[..16].try_into().expect("16 bytes");
                (key, bucket, new_key, *fresh.as_bytes())
            },
            |(key, bucket, new_key, leaf)| {
                table.remove(bucket, &key);
                table.insert(Bucket::of_key(&new_key), new_key, leaf);
                black_box(table.root())
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn chunk_leaf_hashing(c: &mut Criterion) {
    let doc = DocumentId([9; 16]);
    let chunks: Vec<Chunk> = (0..10_000u32)
        .map(|i| {
            let text = format!("fn item_{i}() {{ let x = {i}; x * 2 }}\n").repeat(20);
            Chunk::new(
                doc,
                i,
                u64::from(i) * 800,
                i + 1,
                i + 20,
                ChunkKind::Text,
                text,
            )
            .expect("valid chunk")
        })
        .collect();
    let mut group = c.benchmark_group("leaf_hashing");
    group.throughput(criterion::Throughput::Elements(chunks.len() as u64));
    group.bench_function("chunk_leaf_10k_chunks_of_800_bytes", |b| {
        b.iter(|| {
            chunks
                .iter()
                .map(|c| c.leaf_hash().0[0] as u64)
                .sum::<u64>()
        })
    });
    // The same leaves as a sync hashes them: a document's chunks (19 on average in the
    // TypeScript tree of docs/bench-log/02-store-cold-index.md) side by side, sixteen lanes at a time.
    let batched: Vec<[u8; 32]> = chunks
        .chunks(19)
        .flat_map(Chunk::leaf_hashes)
        .map(|l| l.0)
        .collect();
    let one_by_one: Vec<[u8; 32]> = chunks.iter().map(|c| c.leaf_hash().0).collect();
    assert_eq!(batched, one_by_one, "batched leaves differ");
    group.bench_function("chunk_leaf_10k_chunks_of_800_bytes_19_a_batch", |b| {
        b.iter(|| {
            chunks
                .chunks(19)
                .flat_map(Chunk::leaf_hashes)
                .map(|l| l.0[0] as u64)
                .sum::<u64>()
        })
    });
    group.finish();
}

/// The table root over its bucket roots, which every commit computes for each table it
/// touched (the bucket roots read back from the store).
fn top_tree(c: &mut Criterion) {
    let roots: Vec<MerkleRoot> = (0..N_BUCKETS as u32)
        .map(|i| MerkleRoot(*blake3::hash(&i.to_le_bytes()).as_bytes()))
        .collect();
    let flat: Vec<[u8; 32]> = roots.iter().map(|r| r.0).collect();
    let tree = TopTree::from_bucket_roots(&roots).expect("1024 roots");
    assert_eq!(
        tree.root(),
        merkle_root(&flat),
        "the top tree is the Merkle tree"
    );
    c.bench_function("top_tree_from_1024_bucket_roots", |b| {
        b.iter(|| {
            black_box(
                TopTree::from_bucket_roots(black_box(&roots))
                    .expect("roots")
                    .root(),
            )
        })
    });
}

/// Text hashes of many texts at once against one at a time by the `blake3` crate: 1,024
/// texts of 1 KiB (one BLAKE3 chunk each, sixteen blocks) and of 64 bytes (one block).
fn many_texts(c: &mut Criterion) {
    let mut group = c.benchmark_group("text_hashes");
    for len in [1024usize, 64] {
        let texts: Vec<String> = (0..1024)
            .map(|i| format!("{i:08}").repeat(len / 8))
            .collect();
        let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();
        let alone: Vec<TextHash> = borrowed.iter().map(|t| TextHash::of(t)).collect();
        assert_eq!(TextHash::of_many(&borrowed), alone, "batched hashes differ");
        group.throughput(criterion::Throughput::Bytes((len * texts.len()) as u64));
        group.bench_function(format!("1024_of_{len}_bytes_one_at_a_time"), |b| {
            b.iter(|| black_box(borrowed.iter().map(|t| TextHash::of(t)).collect::<Vec<_>>()))
        });
        group.bench_function(format!("1024_of_{len}_bytes_side_by_side"), |b| {
            b.iter(|| black_box(TextHash::of_many(black_box(&borrowed))))
        });
    }
    group.finish();
}

/// Small batches, where `hash_many` either hashes side by side or leaves the inputs to
/// the crate one by one: 8,640 edge leaves (38-byte encodings) in groups of 2 to 8, and
/// the roots of 1,080 trees of 8 leaves (a bucket's, in a 8,640-leaf table).
fn small_batches(c: &mut Criterion) {
    let encodings: Vec<Vec<u8>> = (0..8640u64)
        .map(|i| {
            let mut e = vec![0u8; 38];
            e[..8].copy_from_slice(&i.to_le_bytes());
            e
        })
        .collect();
    let refs: Vec<&[u8]> = encodings.iter().map(Vec::as_slice).collect();
    let alone: Vec<LeafHash> = refs.iter().map(|e| Edge::leaf_of_encoding(e)).collect();
    let mut group = c.benchmark_group("small_batches");
    for size in [2usize, 3, 4, 5, 8] {
        let batched: Vec<LeafHash> = refs
            .chunks(size)
            .flat_map(Edge::leaves_of_encodings)
            .collect();
        assert_eq!(batched, alone, "batched edge leaves differ");
        group.bench_function(format!("8640_edge_leaves_{size}_a_batch"), |b| {
            b.iter(|| {
                for batch in refs.chunks(size) {
                    black_box(Edge::leaves_of_encodings(black_box(batch)));
                }
            })
        });
    }
    let leaves: Vec<[u8; 32]> = alone.iter().map(|l| l.0).collect();
    group.bench_function("1080_roots_of_8_leaves", |b| {
        b.iter(|| {
            for tree in leaves.chunks(8) {
                black_box(merkle_root(black_box(tree)));
            }
        })
    });
    let trees: Vec<&[[u8; 32]]> = leaves.chunks(8).collect();
    let each: Vec<MerkleRoot> = trees.iter().map(|t| merkle_root(t)).collect();
    assert_eq!(merkle_roots(&trees), each, "roots of many trees differ");
    group.bench_function("1080_roots_of_8_leaves_together", |b| {
        b.iter(|| black_box(merkle_roots(black_box(&trees))))
    });
    group.finish();
}

criterion_group!(
    benches,
    state_root_at_one_million,
    chunk_leaf_hashing,
    top_tree,
    many_texts,
    small_batches
);
criterion_main!(benches);
