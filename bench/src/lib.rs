//! Peer benchmarks of cfs; see `benches/`.
