//! Publishing summaries to consumers. The merger writes each `Summary` into a
//! latest-value slot without waiting; the formats here read from there.

pub mod jsonl;
