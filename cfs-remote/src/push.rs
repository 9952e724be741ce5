//! Push: publish the store's state, sending only the buckets whose roots differ from the
//! branch's newest manifest.

use std::collections::BTreeMap;

use cfs_core::{MerkleRoot, StateRoot, Table, hex_encode};
use cfs_store::{ReadTxn, Store};

use crate::error::{RemoteError, Result};
use crate::fetch::Fetched;
use crate::format::{
    BucketEntry, Manifest, ManifestFields, ObjectName, PackWriter, Row, VECTOR_TAG, VectorRow,
    chunk_sizes, encode_rows, encode_vectors, object_path, vector_bucket, vector_root,
};
use crate::groups::{self, GROUP_BUCKETS, GROUPS};
use crate::refs::{self, DEFAULT_BRANCH};
use crate::remote::Remote;

/// How many times a push re-reads the branch after losing a race for its next ref.
const TRIES: u32 = 5;

/// What to push.
#[derive(Clone, Debug)]
pub struct PushOptions {
    /// The branch.
    pub branch: String,
    /// The git commit the store's tree is at, to publish a ref for.
    pub git_commit: Option<String>,
}

impl Default for PushOptions {
    fn default() -> Self {
        Self {
            branch: DEFAULT_BRANCH.to_owned(),
            git_commit: None,
        }
    }
}

/// What a push did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushReport {
    /// The state root pushed.
    pub root: StateRoot,
    /// The manifest the branch's newest ref names now.
    pub manifest: ObjectName,
    /// The ref written (`None`: the branch held this state already).
    pub published: Option<String>,
    /// Segments sent.
    pub segments_sent: usize,
    /// Non-empty buckets in the groups that changed (tables and vectors).
    pub buckets: usize,
    /// Bytes written to the remote (pack and manifest).
    pub bytes_sent: u64,
    /// Of them, the manifest's.
    pub manifest_bytes: u64,
    /// Races lost before this push published.
    pub retries: u32,
}

/// The roots of every bucket of a state, by tag: five tables', then the vectors'; and
/// the vectors of each vector bucket.
struct LocalRoots {
    roots: Vec<Vec<MerkleRoot>>,
    vectors: BTreeMap<u16, Vec<[u8; 32]>>,
}

impl LocalRoots {
    fn read(txn: &ReadTxn) -> Result<Self> {
        let mut roots = Table::ALL
            .iter()
            .map(|&t| txn.bucket_roots(t))
            .collect::<cfs_store::Result<Vec<_>>>()?;
        let mut vectors: BTreeMap<u16, Vec<[u8; 32]>> = BTreeMap::new();
        for hash in txn.vector_hashes()? {
            vectors.entry(vector_bucket(&hash)).or_default().push(hash);
        }
        let mut vector_roots = vec![MerkleRoot::empty(); cfs_core::N_BUCKETS];
        for (&bucket, hashes) in &vectors {
            vector_roots[usize::from(bucket)] = vector_root(hashes);
        }
        roots.push(vector_roots);
        Ok(Self { roots, vectors })
    }

    /// The 1,024 bucket roots of tag `tag` (a table's, or the vectors').
    fn roots(&self, tag: u8) -> &[MerkleRoot] {
        &self.roots[usize::from(tag)]
    }

    /// Every non-empty group's (tag, group) and node, in order.
    fn groups(&self) -> Vec<((u8, usize), MerkleRoot)> {
        let empty = groups::empty_node();
        let mut out = Vec::new();
        for tag in 0..=VECTOR_TAG {
            let roots = self.roots(tag);
            for g in 0..GROUPS {
                let node = groups::node(roots, g);
                if node != empty {
                    out.push(((tag, g), node));
                }
            }
        }
        out
    }
}

/// Publishes `store`'s committed state on `options.branch` of `remote`.
pub fn push(store: &Store, remote: &dyn Remote, options: &PushOptions) -> Result<PushReport> {
    refs::check_branch(&options.branch)?;
    if let Some(commit) = &options.git_commit {
        refs::check_commit(commit)?;
    }
    refs::mark(remote)?;
    let txn = store.begin_read()?;
    let local = LocalRoots::read(&txn)?;
    for retries in 0..TRIES {
        let newest = refs::newest(remote, &options.branch)?;
        let previous = match newest {
            Some((_, name)) => Some((name, refs::read_manifest(remote, &name)?)),
            None => None,
        };
        if let Some((_, m)) = &previous {
            crate::pull::check_settings(store, m, remote)?;
        }
        let attempt = Attempt {
            store,
            txn: &txn,
            remote,
            options,
            local: &local,
        };
        if let Some(report) = attempt.publish(newest.map_or(0, |n| n.0), previous, retries)? {
            return Ok(report);
        }
    }
    Err(RemoteError::Race {
        remote: remote.describe(),
        branch: options.branch.clone(),
        tries: TRIES,
    })
}

/// A manifest's group entries by (tag, group).
type Before = BTreeMap<(u8, usize), BucketEntry>;

/// One try at publishing on top of the branch's newest manifest.
struct Attempt<'a> {
    store: &'a Store,
    txn: &'a ReadTxn,
    remote: &'a dyn Remote,
    options: &'a PushOptions,
    local: &'a LocalRoots,
}

impl Attempt<'_> {
    /// Publishes as ref `newest + 1`; `None` if another push took that ref first.
    fn publish(
        &self,
        newest: u64,
        previous: Option<(ObjectName, Manifest)>,
        retries: u32,
    ) -> Result<Option<PushReport>> {
        let roots = self.txn.table_roots()?;
        let local = self.local.groups();
        let before: Before = previous
            .iter()
            .flat_map(|(_, m)| {
                m.groups
                    .iter()
                    .map(|e| ((e.tag, usize::from(e.bucket)), *e))
            })
            .collect();
        let mut report = PushReport {
            root: roots.state_root(),
            manifest: [0; 32],
            published: None,
            segments_sent: 0,
            buckets: 0,
            bytes_sent: 0,
            manifest_bytes: 0,
            retries,
        };
        let changed: Vec<((u8, usize), MerkleRoot)> = local
            .iter()
            .filter(|(slot, node)| before.get(slot).is_none_or(|e| e.root != node.0))
            .copied()
            .collect();
        if let Some((name, m)) = &previous
            && changed.is_empty()
            && m.groups.len() == local.len()
        {
            report.manifest = *name;
            self.publish_commit(name)?;
            return Ok(Some(report));
        }
        let groups = self.send_pack(&local, &changed, &before, &mut report)?;
        let manifest = Manifest::new(ManifestFields {
            chunk: chunk_sizes(&self.store.settings().chunk),
            model_id: self.store.settings().model_id.clone(),
            table_roots: roots,
            sequence: self.txn.sequence()?,
            previous: previous.as_ref().map(|(name, _)| *name),
            git_commit: self.options.git_commit.clone(),
            parsers: self.store.parsers()?.unwrap_or_default(),
            published_ms: now_ms(),
            groups,
        });
        self.publish_manifest(&manifest, newest + 1, report)
    }

    /// Writes one pack with the segments of the changed groups' changed buckets, then
    /// the changed groups' segments after them all (a pull reads the groups in one run,
    /// then the buckets, never a group's neighbours twice). Returns every group's
    /// manifest entry: the new ones, and the previous ones of the groups that did not
    /// change.
    fn send_pack(
        &self,
        local: &[((u8, usize), MerkleRoot)],
        changed: &[((u8, usize), MerkleRoot)],
        before: &Before,
        report: &mut PushReport,
    ) -> Result<Vec<BucketEntry>> {
        // The bucket entries of the previous state's groups that changed.
        let stale: Vec<BucketEntry> = changed
            .iter()
            .filter_map(|(slot, _)| before.get(slot).copied())
            .collect();
        let kept = groups::fetch(self.remote, &stale, &mut Fetched::default())?;
        let mut pack = PackWriter::new();
        let mut written = Vec::with_capacity(changed.len());
        for &(slot, node) in changed {
            written.push((slot, node, self.group(&mut pack, slot, &kept, report)?));
        }
        let mut made: Before = BTreeMap::new();
        for (slot, node, group) in written {
            made.insert(slot, pack.push_group(slot.0, slot.1 as u16, node, &group));
        }
        let mut entries: Vec<BucketEntry> = local
            .iter()
            .map(|(slot, _)| made.get(slot).copied().unwrap_or_else(|| before[slot]))
            .collect();
        if !pack.is_empty() {
            let (bytes, name) = pack.finish();
            self.remote.create(&object_path(&name), &bytes)?;
            report.bytes_sent += bytes.len() as u64;
            for e in entries.iter_mut().filter(|e| e.pack == [0; 32]) {
                e.pack = name;
            }
        }
        Ok(entries)
    }

    /// Writes `manifest`, then its ref `n` of the branch (`None` if another push took
    /// it first), the commit's ref, and last the branch's hint.
    fn publish_manifest(
        &self,
        manifest: &Manifest,
        n: u64,
        mut report: PushReport,
    ) -> Result<Option<PushReport>> {
        let bytes = manifest.encode();
        let name = crate::format::name_of(&bytes);
        self.remote.create(&object_path(&name), &bytes)?;
        report.bytes_sent += bytes.len() as u64;
        report.manifest_bytes = bytes.len() as u64;
        let ref_name = refs::ref_name(&self.options.branch, n);
        if !self.remote.create(&ref_name, &refs::ref_content(&name))? {
            return Ok(None);
        }
        self.publish_commit(&name)?;
        // Last, and only a hint: readers that cannot list start from it and check.
        self.remote.overwrite_hint(
            &refs::hint_name(&self.options.branch),
            &refs::hint_content(n),
        )?;
        report.manifest = name;
        report.published = Some(ref_name);
        Ok(Some(report))
    }

    /// Writes into `pack` the segments of group `slot`'s buckets whose roots differ from
    /// the previous state's (`kept`); returns the group segment naming them and the kept
    /// ones.
    fn group(
        &self,
        pack: &mut PackWriter,
        (tag, g): (u8, usize),
        kept: &BTreeMap<(u8, u16), BucketEntry>,
        report: &mut PushReport,
    ) -> Result<Vec<u8>> {
        let roots = self.local.roots(tag);
        let mut entries = Vec::new();
        let first = g * GROUP_BUCKETS;
        for (b, &root) in roots.iter().enumerate().skip(first).take(GROUP_BUCKETS) {
            let bucket = b as u16;
            if root == MerkleRoot::empty() {
                continue;
            }
            report.buckets += 1;
            match kept.get(&(tag, bucket)).filter(|e| e.root == root.0) {
                Some(e) => entries.push(*e),
                None => {
                    entries.push(pack.push(tag, bucket, root, &self.segment((tag, bucket))?));
                    report.segments_sent += 1;
                }
            }
        }
        Ok(groups::encode(&entries))
    }

    /// The ref of the pushed git commit, if one was given and none is there.
    fn publish_commit(&self, manifest: &ObjectName) -> Result<()> {
        if let Some(commit) = &self.options.git_commit {
            self.remote
                .create(&refs::commit_ref(commit), &refs::ref_content(manifest))?;
        }
        Ok(())
    }

    /// The segment of bucket `slot` of the store's state.
    fn segment(&self, (tag, bucket): (u8, u16)) -> Result<Vec<u8>> {
        if tag == VECTOR_TAG {
            let mut rows = Vec::new();
            for hash in &self.local.vectors[&bucket] {
                let encoding = self.txn.vector_encoding(hash)?.ok_or_else(|| {
                    cfs_store::StoreError::Corrupted(format!(
                        "vector {} named by an embedding is missing",
                        hex_encode(hash)
                    ))
                })?;
                rows.push(VectorRow {
                    hash: *hash,
                    encoding,
                });
            }
            return Ok(encode_vectors(&rows));
        }
        let table = Table::ALL[usize::from(tag)];
        let rows: Vec<Row> = self
            .txn
            .bucket_payloads(table, bucket)?
            .into_iter()
            .map(|r| Row {
                key: r.key,
                payload: r.payload,
            })
            .collect();
        Ok(encode_rows(&rows))
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
