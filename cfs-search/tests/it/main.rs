//! Integration tests of search over a store's states: text, vector and hybrid answers
//! against a fresh index after every edit, the index file and its delta (saved,
//! reopened, damaged), ranking on small code trees, read-only stores, deferred vectors,
//! a model of random edits, and watching.

mod context;
mod deferred;
mod delta;
mod model;
mod ranking;
mod ranking_vectors;
mod readonly;
mod search;
mod support;
mod vectors;
mod watch;
