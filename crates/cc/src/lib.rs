//! satquic-cc
