//! What the store's tests share: the helpers of every crate's tests (`cfs-testkit`).

pub use cfs_testkit::{clean_root, exhaustive, scaled, settings, slow, write};
