mod properties;
mod vectors;
