//! A whole index file written from a snapshot's several segments (a mapped base with
//! its tombstones and the segments beside it), merged as it is written: the chunk
//! columns copied in id order from the segment holding each chunk, the vectors and
//! codes streamed in parts, the postings renamed and merged; nothing tokenized again
//! and no merged segment built in memory. The bytes are those of `Segment::merge`
//! followed by a write of the merged segment.

use std::collections::HashMap;
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId, N_BUCKETS, PathEntry};

use super::codes::sign_code;
use super::format::Counts;
use super::meta::DocInfo;
use super::sections::{ChunkColumns, SectionSink, doc_sections, le, stream, tail_sections, terms};
use super::segment::{Live, live_order, merged_postings, unmapped};
use cfs_store::{Result, StoreError};

/// Gives `out` the sections of a whole index file holding the live chunks of `parts`
/// with `docs` and `paths`; its counts.
pub(crate) fn merged_sections(
    parts: &[Live],
    docs: &[&Arc<DocInfo>],
    paths: &[(&[u8; 16], &PathEntry)],
    out: &mut dyn SectionSink,
) -> Result<Counts> {
    let order = live_order(parts);
    let ids: Vec<ChunkId> = order.iter().map(|e| e.0).collect();
    let ordinal = doc_sections(docs, paths, &ids, out)?;
    let mut remap = unmapped(parts);
    for (new, &(_, p, i)) in order.iter().enumerate() {
        remap[p as usize][i as usize] = new as u32;
    }
    let columns = columns(parts, &order, &ordinal)?;
    let total_len = columns.total_len;
    let strings = columns.write(out)?;
    let vector = |&(_, p, i): &(ChunkId, u32, u32)| parts[p as usize].segment.vector(i as usize);
    stream(&order, out, |at, buf| {
        buf.extend(le(vector(at), i16::to_le_bytes))
    })?;
    stream(&order, out, |at, buf| {
        buf.extend(le(&sign_code(vector(at)), u64::to_le_bytes))
    })?;
    terms(&merged_postings(parts, &remap), out)?;
    let none = [0; N_BUCKETS / 64];
    tail_sections(strings, &[], (&none, &none), out)?;
    Ok(Counts {
        n_chunks: order.len() as u64,
        total_len,
        base: [0; 32],
    })
}

/// The chunk columns before the vectors, in `order`.
fn columns(
    parts: &[Live],
    order: &[(ChunkId, u32, u32)],
    ordinal: &HashMap<DocumentId, u32>,
) -> Result<ChunkColumns> {
    let mut columns = ChunkColumns::with_capacity(order.len());
    for &(id, p, i) in order {
        let (seg, i) = (&parts[p as usize].segment, i as usize);
        let meta = seg.meta(i).ok_or_else(|| {
            StoreError::Corrupted(format!("chunk {id} cannot be read from the index file"))
        })?;
        let doc = ordinal.get(&meta.doc.id).ok_or_else(|| {
            StoreError::Internal(format!("chunk {id} names a document not in its snapshot"))
        })?;
        columns.push(
            &meta,
            *doc,
            seg.token_len(i),
            seg.norm2(i),
            !seg.has_vector(i),
        );
    }
    Ok(columns)
}
