mod fuzz_replay;
mod golden;
mod minilm;
mod pdf;
mod properties;
mod tree;
mod vectors;
mod walk;
