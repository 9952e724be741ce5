//! Integration tests of cfs-core: test vectors and properties.

mod properties;
mod vectors;
