//! PostgreSQL compatibility: settings, the system catalogs clients read (pg_catalog,
//! information_schema, kiln_stat), and pg_stat_activity with cancel and terminate.

pub mod activity;
pub(crate) mod defaults;
pub(crate) mod keywords;
pub mod settings;
pub mod system;
pub mod views;
