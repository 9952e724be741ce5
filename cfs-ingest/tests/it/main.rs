mod fuzz_replay;
mod golden;
mod pdf;
mod properties;
mod tree;
mod vectors;
