mod golden;
mod pdf;
mod properties;
mod tree;
mod vectors;
