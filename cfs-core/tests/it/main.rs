//! Integration tests of cfs-core: test vectors and properties.

mod properties;
mod tidy;
mod vectors;
