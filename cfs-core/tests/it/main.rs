//! Integration tests of cfs-core: test vectors and properties.

mod properties;
mod support;
mod tidy;
mod vectors;
