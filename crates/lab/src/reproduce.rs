//! Built-in campaigns (in progress).
