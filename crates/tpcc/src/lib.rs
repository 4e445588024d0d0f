//! A TPC-C driver over the PostgreSQL protocol, for Kiln and for a stock PostgreSQL alike.
//!
//! - [`schema`]: the nine tables with their primary keys, and the two secondary indexes the
//!   transactions need (customer by last name, orders by customer).
//! - [`load`]: the initial population of clause 4.3.3.1, through `COPY … FROM STDIN`.
//! - [`driver`]: terminals, each on its own connection with prepared statements, running the
//!   five transactions in the specification's mix (45/43/4/4/4) with keying and think times
//!   off; per transaction type, whether it commits *fast* (`synchronous_commit = off`) or
//!   *safe*. Serialization failures and deadlocks are retried and counted.
//! - [`check`]: the consistency conditions of clause 3.3.2.1–3.3.2.12 as SQL.
//!
//! [`Scale`] is the specification's by default; smaller ones (fewer items and customers) keep
//! every rule and every condition and exist so that tests load in seconds.

pub mod check;
pub mod driver;
mod gen;
pub mod load;
pub mod schema;

pub use check::{check, Condition};
pub use driver::{run, Mode, RunConfig, RunResult, TxnStats, TxnType};
pub use gen::NuRandC;
pub use load::load;

/// The population's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    pub warehouses: u32,
    /// Rows of `item`, and of `stock` per warehouse (100,000 in the specification).
    pub items: u32,
    /// Customers per district, and initial orders per district (3,000 in the specification).
    pub customers: u32,
}

/// Districts per warehouse (fixed by the specification).
pub const DISTRICTS: u32 = 10;

impl Scale {
    /// The specification's population for `warehouses` warehouses.
    pub fn standard(warehouses: u32) -> Scale {
        Scale { warehouses, items: 100_000, customers: 3_000 }
    }

    /// A reduced population (1,000 items, 300 customers per district) for tests.
    pub fn small(warehouses: u32) -> Scale {
        Scale { warehouses, items: 1_000, customers: 300 }
    }

    /// Initial orders per district that have no new-order row (2,100 of 3,000).
    pub fn delivered_orders(&self) -> u32 {
        self.customers - self.new_orders()
    }

    /// Initial new-order rows per district (the last 900 of 3,000 orders).
    pub fn new_orders(&self) -> u32 {
        self.customers * 3 / 10
    }

    /// The largest last-name number in use (999, or fewer with fewer customers).
    pub fn last_names(&self) -> u32 {
        self.customers.min(1000) - 1
    }
}

#[cfg(test)]
mod tests {
    /// Every statement the driver prepares, and every consistency condition, has its access
    /// path pinned in the SQL layer's golden plan script, verbatim.
    #[test]
    fn every_statement_has_a_golden_plan() {
        let script = include_str!("../../sql/tests/scripts/tpcc");
        for (name, sql) in crate::driver::STATEMENTS {
            let line = format!("> PREPARE {name} AS {sql}\n");
            assert!(script.contains(&line), "no golden plan for {name}: {sql}");
        }
        let conditions = crate::check::CONDITIONS.iter().map(|c| c.2);
        for sql in conditions.chain([crate::check::CONDITION_11]) {
            assert!(script.contains(&format!("[plan]> {sql}\n")), "no golden plan for {sql}");
        }
    }
}
