//! Step 4 of a statement: execution.

pub mod alter;
pub mod comments;
pub mod constraints;
pub mod copy;
pub mod ddl;
pub mod do_block;
pub mod domains;
pub mod extension;
pub mod grant;
pub mod indexes;
pub mod init;
pub mod join;
pub mod merge;
pub mod plpgsql;
pub mod routines;
pub mod scan;
pub mod schema;
pub mod select;
pub mod sequences;
pub mod statement;
pub mod temp;
pub mod triggers;
pub mod types;
pub mod views;
pub mod window;
pub mod write;
