//! Push: publish the store's state, sending only the rows of the buckets whose roots
//! differ from the branch's newest manifest that the remote lacks, with new row tables
//! for those buckets and new segments for their groups.

use std::collections::BTreeMap;

use cfs_core::{MerkleRoot, StateRoot, Table, hex_encode};
use cfs_store::{ReadTxn, Store};

use crate::error::{RemoteError, Result};
use crate::fetch::Fetched;
use crate::format::{
    BucketEntry, GROUP_KIND, Manifest, ManifestFields, ObjectName, PackWriter, ROWS_KIND, Row,
    TABLE_KIND, VECTOR_TAG, VectorRow, chunk_sizes, encode_row, object_path, vector_bucket,
    vector_root,
};
use crate::groups::{self, GROUP_BUCKETS, GROUPS};
use crate::refs::{self, DEFAULT_BRANCH};
use crate::remote::Remote;
use crate::rows::{self, NEW_PACK, RowAt};

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
    /// Row tables sent: one per bucket whose root changed.
    pub tables_sent: usize,
    /// Rows sent (table rows and vectors): those the remote lacked.
    pub rows_sent: usize,
    /// Non-empty buckets in the groups that changed (tables and vectors).
    pub buckets: usize,
    /// Bytes written to the remote (pack and manifest).
    pub bytes_sent: u64,
    /// Bytes read from the remote: the previous state's manifest, and the group segments
    /// and row tables of what changed.
    pub bytes_fetched: u64,
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
            tables_sent: 0,
            rows_sent: 0,
            buckets: 0,
            bytes_sent: 0,
            bytes_fetched: previous
                .as_ref()
                .map_or(0, |(_, m)| m.encode().len() as u64),
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
        let next = newest
            .checked_add(1)
            .filter(|&n| n < u64::MAX)
            .ok_or_else(|| {
                RemoteError::Invalid(format!(
                    "{}: branch {}: its newest ref is number {newest}, after which none can \
                 be published",
                    self.remote.describe(),
                    self.options.branch
                ))
            })?;
        self.publish_manifest(&manifest, next, report)
    }

    /// Writes one pack: the rows of the changed buckets that the remote lacks, then
    /// those buckets' row tables, then the changed groups' segments (a pull reads the
    /// groups in one run, then the tables, then the rows). Returns every group's manifest
    /// entry: the new ones, and the previous ones of the groups that did not change.
    fn send_pack(
        &self,
        local: &[((u8, usize), MerkleRoot)],
        changed: &[((u8, usize), MerkleRoot)],
        before: &Before,
        report: &mut PushReport,
    ) -> Result<Vec<BucketEntry>> {
        let stale: Vec<BucketEntry> = changed
            .iter()
            .filter_map(|(slot, _)| before.get(slot).copied())
            .collect();
        let mut fetched = Fetched::default();
        let kept = groups::fetch(self.remote, &stale, &mut fetched)?;
        let buckets = self.changed_buckets(changed, &kept, report);
        let tables = self.previous_tables(&buckets, &kept, &mut fetched)?;
        report.bytes_fetched += fetched.bytes;
        let mut pack = PackWriter::new();
        let mut written = Vec::with_capacity(buckets.len());
        for &(slot, root) in &buckets {
            let previous = tables.get(&slot).map_or(&[][..], Vec::as_slice);
            let rows = self.send_rows(&mut pack, slot, root, previous, report)?;
            written.push((slot, root, rows::encode(&rows)));
        }
        let mut made = kept;
        for (slot, root, table) in written {
            let entry = pack.push((TABLE_KIND, slot.0), slot.1, root, &table);
            made.insert(slot, entry);
            report.tables_sent += 1;
        }
        let mut new_groups: Before = BTreeMap::new();
        for &((tag, g), node) in changed {
            let segment = groups::encode(&self.group_entries((tag, g), &made));
            let entry = pack.push((GROUP_KIND, tag), g as u16, node, &segment);
            new_groups.insert((tag, g), entry);
        }
        let mut entries: Vec<BucketEntry> = local
            .iter()
            .map(|(slot, _)| {
                new_groups
                    .get(slot)
                    .copied()
                    .unwrap_or_else(|| before[slot])
            })
            .collect();
        if !pack.is_empty() {
            let (bytes, name) = pack.finish();
            self.remote.create(&object_path(&name), &bytes)?;
            report.bytes_sent += bytes.len() as u64;
            for e in entries.iter_mut().filter(|e| e.pack == NEW_PACK) {
                e.pack = name;
            }
        }
        Ok(entries)
    }

    /// The non-empty buckets of the changed groups whose roots differ from the previous
    /// state's (`kept`: its entries of those groups), with their roots.
    fn changed_buckets(
        &self,
        changed: &[((u8, usize), MerkleRoot)],
        kept: &BTreeMap<(u8, u16), BucketEntry>,
        report: &mut PushReport,
    ) -> Vec<((u8, u16), MerkleRoot)> {
        let mut out = Vec::new();
        for &((tag, g), _) in changed {
            let roots = self.local.roots(tag);
            let first = g * GROUP_BUCKETS;
            for (b, &root) in roots.iter().enumerate().skip(first).take(GROUP_BUCKETS) {
                if root == MerkleRoot::empty() {
                    continue;
                }
                report.buckets += 1;
                let slot = (tag, b as u16);
                if kept.get(&slot).is_none_or(|e| e.root != root.0) {
                    out.push((slot, root));
                }
            }
        }
        out
    }

    /// The rows of the previous state's row tables of `buckets`, where it had them.
    fn previous_tables(
        &self,
        buckets: &[((u8, u16), MerkleRoot)],
        kept: &BTreeMap<(u8, u16), BucketEntry>,
        fetched: &mut Fetched<'_>,
    ) -> Result<BTreeMap<(u8, u16), Vec<RowAt>>> {
        let entries: Vec<BucketEntry> = buckets
            .iter()
            .filter_map(|(slot, _)| kept.get(slot).copied())
            .collect();
        let tables = rows::fetch_tables(self.remote, &entries, fetched)?;
        Ok(entries.iter().map(|e| e.slot()).zip(tables).collect())
    }

    /// Writes into `pack` the rows of bucket `slot` that `previous` (the rows of its
    /// previous table) does not hold, or holds in too many packs; returns where each of
    /// the bucket's rows lies.
    fn send_rows(
        &self,
        pack: &mut PackWriter,
        (tag, bucket): (u8, u16),
        root: MerkleRoot,
        previous: &[RowAt],
        report: &mut PushReport,
    ) -> Result<Vec<RowAt>> {
        let local = self.bucket_rows((tag, bucket))?;
        let leaves: Vec<rows::ShortLeaf> = local.iter().map(|r| rows::short(&r.leaf)).collect();
        let start = pack.len();
        let mut region = Vec::new();
        let mut out = Vec::with_capacity(local.len());
        for (at, row) in rows::reuse(&leaves, previous).into_iter().zip(&local) {
            if let Some(at) = at {
                out.push(at);
                continue;
            }
            let bytes = self.row_bytes(tag, row)?;
            let length = u32::try_from(bytes.len()).map_err(|_| {
                RemoteError::Invalid(format!("a row of bucket {bucket} is over 4 GiB"))
            })?;
            out.push(RowAt {
                leaf: rows::short(&row.leaf),
                pack: NEW_PACK,
                offset: start + region.len() as u64,
                length,
            });
            region.extend(bytes);
            report.rows_sent += 1;
        }
        if !region.is_empty() {
            pack.push((ROWS_KIND, tag), bucket, root, &region);
        }
        Ok(out)
    }

    /// The entries of group `slot`'s non-empty buckets: `made`'s (the new tables, and
    /// the previous state's entries of the group).
    fn group_entries(
        &self,
        (tag, g): (u8, usize),
        made: &BTreeMap<(u8, u16), BucketEntry>,
    ) -> Vec<BucketEntry> {
        let roots = self.local.roots(tag);
        let first = g * GROUP_BUCKETS;
        (first..first + GROUP_BUCKETS)
            .filter(|&b| roots[b] != MerkleRoot::empty())
            .map(|b| made[&(tag, b as u16)])
            .collect()
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

    /// The ref of the pushed git commit, if one was given and none is there.
    fn publish_commit(&self, manifest: &ObjectName) -> Result<()> {
        if let Some(commit) = &self.options.git_commit {
            self.remote
                .create(&refs::commit_ref(commit), &refs::ref_content(manifest))?;
        }
        Ok(())
    }

    /// The rows of bucket `slot` of the store's state, in key order, with their leaves
    /// (a vector's leaf is its hash; its encoding is read when it is sent).
    fn bucket_rows(&self, (tag, bucket): (u8, u16)) -> Result<Vec<LocalRow>> {
        if tag == VECTOR_TAG {
            return Ok(self.local.vectors[&bucket]
                .iter()
                .map(|hash| LocalRow {
                    key: Vec::new(),
                    payload: Vec::new(),
                    leaf: *hash,
                })
                .collect());
        }
        let table = Table::ALL[usize::from(tag)];
        Ok(self.txn.bucket_payloads(table, bucket)?)
    }

    /// A row's bytes in a pack.
    fn row_bytes(&self, tag: u8, row: &LocalRow) -> Result<Vec<u8>> {
        if tag != VECTOR_TAG {
            return Ok(encode_row(&Row {
                key: row.key.clone(),
                payload: row.payload.clone(),
            }));
        }
        let encoding = self.txn.vector_encoding(&row.leaf)?.ok_or_else(|| {
            cfs_store::StoreError::Corrupted(format!(
                "vector {} named by an embedding is missing",
                hex_encode(&row.leaf)
            ))
        })?;
        Ok(encode_row(&VectorRow {
            hash: row.leaf,
            encoding,
        }))
    }
}

/// A row of the store's state as a push reads it.
type LocalRow = cfs_store::RowPayload;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
