//! Integration tests of the store: incremental sync against a clean index after every
//! edit, verify, proofs, reopen, and the refusals (schema, settings, empty deletes).

mod chunk_log;
mod crash;
mod deferred;
mod delta;
mod git;
mod model;
mod ranking;
mod ranking_vectors;
mod readonly;
mod repair;
mod search;
mod store;
mod support;
mod vectors;
mod watch;
