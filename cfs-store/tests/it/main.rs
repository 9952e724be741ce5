//! Integration tests of the store: incremental sync against a clean index after every
//! edit, verify, proofs, reopen, and the refusals (schema, settings, empty deletes).

mod chunk_log;
mod crash;
mod git;
mod repair;
mod store;
mod support;
