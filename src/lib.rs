#![deny(unsafe_code)]
pub mod book;
pub mod fixed;
pub mod mailbox;
pub mod merge;
pub mod venue;
pub mod walker;
