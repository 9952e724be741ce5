mod properties;
