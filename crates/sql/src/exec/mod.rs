//! Step 4 of a statement: execution.

pub mod select;
