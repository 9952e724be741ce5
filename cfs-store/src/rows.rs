//! Rows as one buffer: each row's key and value bytes side by side in one `Vec<u8>`, in
//! the order pushed.
//!
//! The rows a write stages for its commit (`bulk.rs`) were two `Vec`s each, a key and a
//! value, and so were the edge rows each new document builds: 42,000 allocations in the
//! TypeScript tree's cold index, freed again in the commit's tail. Here a table's staged
//! rows, or one document's, are two allocations that grow.

/// (key, value) rows in one buffer, in the order pushed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rows {
    bytes: Vec<u8>,
    /// Per row: where its key starts in `bytes`, the key's length and the value's (the
    /// value follows the key).
    spans: Vec<(usize, u32, u32)>,
}

/// A row's key or value length. Keys are ids of a few dozen bytes and values encodings
/// within the spec's bounds, far below 4 GiB.
fn len32(len: usize) -> u32 {
    u32::try_from(len).expect("a row's key or value under 4 GiB")
}

impl Rows {
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        self.push_with(key, |out| out.extend_from_slice(value));
    }

    /// A row under `key` whose value `value` appends to the buffer it is handed.
    pub(crate) fn push_with(&mut self, key: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        let value_start = self.bytes.len();
        value(&mut self.bytes);
        let value_len = self.bytes.len() - value_start;
        self.spans.push((start, len32(key.len()), len32(value_len)));
    }

    /// Every row of `other` after these, in its order.
    pub(crate) fn extend_from(&mut self, other: &Rows) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.spans.extend(
            other
                .spans
                .iter()
                .map(|&(start, key, value)| (base + start, key, value)),
        );
    }

    /// Row `i`: its key and value.
    pub(crate) fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let (start, key, value) = self.spans[i];
        let value_start = start + key as usize;
        (
            &self.bytes[start..value_start],
            &self.bytes[value_start..value_start + value as usize],
        )
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        self.get(i).0
    }

    pub(crate) fn value(&self, i: usize) -> &[u8] {
        self.get(i).1
    }

    /// Row `i`'s value, to be written in place.
    pub(crate) fn value_mut(&mut self, i: usize) -> &mut [u8] {
        let (start, key, value) = self.spans[i];
        let value_start = start + key as usize;
        &mut self.bytes[value_start..value_start + value as usize]
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(K, V)> for Rows {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(rows: I) -> Self {
        let mut out = Rows::default();
        for (key, value) in rows {
            out.push(key.as_ref(), value.as_ref());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn rows_keep_their_bytes_and_order() {
        let mut rows = Rows::default();
        rows.push(b"k1", b"value one");
        rows.push(b"", b"");
        rows.push_with(b"key three", |out| out.extend_from_slice(b"3"));
        rows.value_mut(0)[..5].copy_from_slice(b"VALUE");
        let mut more: Rows = [(b"x".to_vec(), b"y".to_vec())].into_iter().collect();
        more.extend_from(&rows);
        let got: Vec<(&[u8], &[u8])> = more.iter().collect();
        assert_eq!(
            got,
            [
                (&b"x"[..], &b"y"[..]),
                (b"k1", b"VALUE one"),
                (b"", b""),
                (b"key three", b"3")
            ]
        );
        assert_eq!(
            (more.len(), more.key(3), more.value(1)),
            (4, &b"key three"[..], &b"VALUE one"[..])
        );
        assert!(Rows::default().is_empty() && !more.is_empty());
    }
}
