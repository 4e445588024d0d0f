//! Terminals running the five transactions (clause 2) with prepared statements.
//!
//! Each terminal has its own connection and home warehouse, and picks the next transaction
//! by the specification's mix: 45% New-Order, 43% Payment, 4% each Order-Status, Delivery
//! and Stock-Level. Keying and think times are off, and Delivery runs in the terminal rather
//! than deferred. A transaction's latency runs from its `BEGIN` to its `COMMIT`'s answer,
//! retries included: a serialization failure (40001) or deadlock (40P01) rolls back and
//! retries the whole transaction, up to [`MAX_TRIES`] times. Any other error stops the run.

use std::time::{Duration, Instant};

use futures::future::join_all;
use futures::join;
use hdrhistogram::Histogram;
use postgres_types::ToSql;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_decimal::Decimal;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Row, Statement};

use crate::gen::{self, NuRandC};
use crate::{Scale, DISTRICTS};

/// Tries per transaction before it counts as failed.
pub const MAX_TRIES: u32 = 10;

/// The five transaction types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnType {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl TxnType {
    pub const ALL: [TxnType; 5] = [
        TxnType::NewOrder,
        TxnType::Payment,
        TxnType::OrderStatus,
        TxnType::Delivery,
        TxnType::StockLevel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TxnType::NewOrder => "New-Order",
            TxnType::Payment => "Payment",
            TxnType::OrderStatus => "Order-Status",
            TxnType::Delivery => "Delivery",
            TxnType::StockLevel => "Stock-Level",
        }
    }

    /// Picks a type by the specification's minimum mix.
    fn pick(rng: &mut impl Rng) -> TxnType {
        match rng.gen_range(1..=100) {
            1..=45 => TxnType::NewOrder,
            46..=88 => TxnType::Payment,
            89..=92 => TxnType::OrderStatus,
            93..=96 => TxnType::Delivery,
            _ => TxnType::StockLevel,
        }
    }
}

/// Which transaction types commit fast (acknowledged at commit, `synchronous_commit = off`)
/// and which safe (acknowledged once durable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub name: &'static str,
    pub fast: [bool; 5],
}

impl Mode {
    pub fn all_safe() -> Mode {
        Mode { name: "all safe", fast: [false; 5] }
    }

    /// The ED paper's scenario: New-Order fast, the other four safe.
    pub fn new_order_fast() -> Mode {
        Mode { name: "New-Order fast", fast: [true, false, false, false, false] }
    }

    pub fn all_fast() -> Mode {
        Mode { name: "all fast", fast: [true; 5] }
    }

    fn is_fast(&self, t: TxnType) -> bool {
        self.fast[t as usize]
    }

    /// The session default: what most types use; the others set it per transaction.
    fn default_fast(&self) -> bool {
        self.fast.iter().filter(|f| **f).count() * 2 > self.fast.len()
    }
}

/// One run's settings.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// libpq-style connection string.
    pub conninfo: String,
    pub scale: Scale,
    /// The NURand constants of the load; the run draws its own against them.
    pub load_c: NuRandC,
    pub terminals: u32,
    pub duration: Duration,
    pub mode: Mode,
    pub seed: u64,
}

/// One transaction type's outcome in a run.
#[derive(Clone, Debug)]
pub struct TxnStats {
    pub committed: u64,
    /// New-Orders rolled back on purpose (clause 2.4.1.4: an unused item number, 1%).
    pub rolled_back: u64,
    /// Tries that ended in a serialization failure or deadlock and were retried.
    pub retries: u64,
    /// Transactions that still failed after [`MAX_TRIES`] tries.
    pub failed: u64,
    /// Latency in microseconds of committed and intentionally rolled back transactions.
    pub latency_us: Histogram<u64>,
}

impl Default for TxnStats {
    fn default() -> TxnStats {
        TxnStats {
            committed: 0,
            rolled_back: 0,
            retries: 0,
            failed: 0,
            latency_us: Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram bounds"),
        }
    }
}

impl TxnStats {
    fn merge(&mut self, o: &TxnStats) {
        self.committed += o.committed;
        self.rolled_back += o.rolled_back;
        self.retries += o.retries;
        self.failed += o.failed;
        self.latency_us.add(&o.latency_us).expect("same bounds");
    }

    pub fn mean_ms(&self) -> f64 {
        self.latency_us.mean() / 1000.0
    }

    pub fn quantile_ms(&self, q: f64) -> f64 {
        self.latency_us.value_at_quantile(q) as f64 / 1000.0
    }
}

/// A run's outcome.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub elapsed: Duration,
    /// Indexed by `TxnType as usize`.
    pub per_type: Vec<TxnStats>,
    /// Orders delivered by committed Delivery transactions, per district: index
    /// `(w − 1) · 10 + (d − 1)`.
    pub delivered: Vec<u64>,
}

impl RunResult {
    /// New-Order transactions committed per minute.
    pub fn tpmc(&self) -> f64 {
        self.per_type[TxnType::NewOrder as usize].committed as f64 * 60.0
            / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn stats(&self, t: TxnType) -> &TxnStats {
        &self.per_type[t as usize]
    }
}

/// Connects a client and drives its connection on the runtime.
pub async fn connect(conninfo: &str) -> Result<Client, String> {
    let (client, conn) = tokio_postgres::connect(conninfo, NoTls)
        .await
        .map_err(|e| format!("cannot connect ({conninfo}): {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Runs `cfg.terminals` terminals for `cfg.duration` and merges their results.
pub async fn run(cfg: &RunConfig) -> Result<RunResult, String> {
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let c = NuRandC::for_run(&cfg.load_c, &mut rng);
    let mut terminals = Vec::new();
    for t in 0..cfg.terminals {
        let client = connect(&cfg.conninfo).await?;
        let term = Terminal::new(client, cfg, c, t).await?;
        terminals.push(term);
    }
    let started = Instant::now();
    let deadline = started + cfg.duration;
    let handles: Vec<_> =
        terminals.into_iter().map(|t| tokio::spawn(t.run_until(deadline))).collect();
    let mut result = RunResult {
        elapsed: Duration::ZERO,
        per_type: (0..5).map(|_| TxnStats::default()).collect(),
        delivered: vec![0; (cfg.scale.warehouses * DISTRICTS) as usize],
    };
    let mut first_error = None;
    for h in handles {
        match h.await.map_err(|e| format!("terminal panicked: {e}"))? {
            Ok(t) => {
                for (a, b) in result.per_type.iter_mut().zip(&t.stats) {
                    a.merge(b);
                }
                for (a, b) in result.delivered.iter_mut().zip(&t.delivered) {
                    *a += b;
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    result.elapsed = started.elapsed();
    match first_error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// The prepared statements of one connection.
struct Stmts {
    // New-Order
    no_cust_wh: Statement,
    no_district: Statement,
    no_order: Statement,
    no_new_order: Statement,
    no_item: Statement,
    no_stock: Statement,
    no_stock_update: Statement,
    no_line: Statement,
    // Payment
    p_warehouse: Statement,
    p_district: Statement,
    cust_by_name: Statement,
    p_customer: Statement,
    p_customer_data: Statement,
    p_customer_update: Statement,
    p_customer_update_bc: Statement,
    p_history: Statement,
    // Order-Status
    os_customer: Statement,
    os_last_order: Statement,
    os_lines: Statement,
    // Delivery
    d_oldest: Statement,
    d_delete: Statement,
    d_order: Statement,
    d_lines: Statement,
    d_sum: Statement,
    d_customer: Statement,
    // Stock-Level
    sl_next: Statement,
    sl_count: Statement,
}

/// The text of every statement the terminals prepare, by name (the name is the transaction's
/// initials and what the statement does). Golden plan scripts pin each one's access path.
pub const STATEMENTS: &[(&str, &str)] = &[
    (
        "no_cust_wh",
        "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "no_district",
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_next_o_id, d_tax",
    ),
    (
        "no_order",
        "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)",
    ),
    (
        "no_new_order",
        "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)",
    ),
    (
        "no_item",
        "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1",
    ),
    (
        "no_stock",
        "SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = $1 AND s_i_id = $2 FOR UPDATE",
    ),
    (
        "no_stock_update",
        "UPDATE stock SET s_quantity = $3, s_ytd = s_ytd + $4, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $5 WHERE s_w_id = $1 AND s_i_id = $2",
    ),
    (
        "no_line",
        "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9)",
    ),
    (
        "p_warehouse",
        "UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1 RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip",
    ),
    (
        "p_district",
        "UPDATE district SET d_ytd = d_ytd + $3 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip",
    ),
    (
        "cust_by_name",
        "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first",
    ),
    (
        "p_customer",
        "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 FOR UPDATE",
    ),
    (
        "p_customer_data",
        "SELECT c_data FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "p_customer_update",
        "UPDATE customer SET c_balance = c_balance - $4, c_ytd_payment = c_ytd_payment + $4, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "p_customer_update_bc",
        "UPDATE customer SET c_balance = c_balance - $4, c_ytd_payment = c_ytd_payment + $4, c_payment_cnt = c_payment_cnt + 1, c_data = $5 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "p_history",
        "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    ),
    (
        "os_customer",
        "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "os_last_order",
        "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1",
    ),
    (
        "os_lines",
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
    ),
    (
        "d_oldest",
        "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1",
    ),
    (
        "d_delete",
        "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3",
    ),
    (
        "d_order",
        "UPDATE orders SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 RETURNING o_c_id",
    ),
    (
        "d_lines",
        "UPDATE order_line SET ol_delivery_d = $4 WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
    ),
    (
        "d_sum",
        "SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
    ),
    (
        "d_customer",
        "UPDATE customer SET c_balance = c_balance + $4, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "sl_next",
        "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2",
    ),
    (
        "sl_count",
        "SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $3 - 20 AND s_w_id = $1 AND s_i_id = ol_i_id AND s_quantity < $4",
    ),
];

impl Stmts {
    async fn prepare(c: &Client) -> Result<Stmts, tokio_postgres::Error> {
        let p = |name: &str| {
            let sql = STATEMENTS.iter().find(|(n, _)| *n == name).expect("a known statement").1;
            c.prepare(sql)
        };
        Ok(Stmts {
            no_cust_wh: p("no_cust_wh").await?,
            no_district: p("no_district").await?,
            no_order: p("no_order").await?,
            no_new_order: p("no_new_order").await?,
            no_item: p("no_item").await?,
            no_stock: p("no_stock").await?,
            no_stock_update: p("no_stock_update").await?,
            no_line: p("no_line").await?,
            p_warehouse: p("p_warehouse").await?,
            p_district: p("p_district").await?,
            cust_by_name: p("cust_by_name").await?,
            p_customer: p("p_customer").await?,
            p_customer_data: p("p_customer_data").await?,
            p_customer_update: p("p_customer_update").await?,
            p_customer_update_bc: p("p_customer_update_bc").await?,
            p_history: p("p_history").await?,
            os_customer: p("os_customer").await?,
            os_last_order: p("os_last_order").await?,
            os_lines: p("os_lines").await?,
            d_oldest: p("d_oldest").await?,
            d_delete: p("d_delete").await?,
            d_order: p("d_order").await?,
            d_lines: p("d_lines").await?,
            d_sum: p("d_sum").await?,
            d_customer: p("d_customer").await?,
            sl_next: p("sl_next").await?,
            sl_count: p("sl_count").await?,
        })
    }
}

/// How one try of a transaction ended.
enum Outcome {
    Committed,
    /// A New-Order with an unused item, rolled back as the specification asks.
    RolledBack,
}

/// One terminal: a connection, its statements, and what it measured.
struct Terminal {
    client: Client,
    s: Stmts,
    rng: StdRng,
    c: NuRandC,
    scale: Scale,
    mode: Mode,
    home: i32,
    default_fast: bool,
    stats: Vec<TxnStats>,
    delivered: Vec<u64>,
    /// Deliveries of the transaction being tried (applied to `delivered` on commit).
    pending: Vec<(usize, u64)>,
}

fn retryable(e: &tokio_postgres::Error) -> bool {
    matches!(e.code(), Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED)
}

impl Terminal {
    async fn new(client: Client, cfg: &RunConfig, c: NuRandC, t: u32) -> Result<Terminal, String> {
        let default_fast = cfg.mode.default_fast();
        client
            .batch_execute(if default_fast {
                "SET synchronous_commit = off"
            } else {
                "SET synchronous_commit = on"
            })
            .await
            .map_err(|e| format!("SET synchronous_commit: {e}"))?;
        let s = Stmts::prepare(&client).await.map_err(|e| format!("PREPARE: {e}"))?;
        Ok(Terminal {
            client,
            s,
            rng: StdRng::seed_from_u64(cfg.seed.wrapping_add(u64::from(t) + 1)),
            c,
            scale: cfg.scale,
            mode: cfg.mode,
            home: (t % cfg.scale.warehouses) as i32 + 1,
            default_fast,
            stats: (0..5).map(|_| TxnStats::default()).collect(),
            delivered: vec![0; (cfg.scale.warehouses * DISTRICTS) as usize],
            pending: Vec::new(),
        })
    }

    async fn run_until(mut self, deadline: Instant) -> Result<Terminal, String> {
        while Instant::now() < deadline {
            let t = TxnType::pick(&mut self.rng);
            self.one(t).await?;
        }
        Ok(self)
    }

    /// Runs one transaction of type `t` to its end, retrying serialization failures.
    async fn one(&mut self, t: TxnType) -> Result<(), String> {
        let input = Input::draw(t, &mut self.rng, &self.c, &self.scale, self.home);
        let started = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            self.pending.clear();
            let r = self.attempt(t, &input).await;
            match r {
                Ok(outcome) => {
                    let st = &mut self.stats[t as usize];
                    match outcome {
                        Outcome::Committed => st.committed += 1,
                        Outcome::RolledBack => st.rolled_back += 1,
                    }
                    let us = started.elapsed().as_micros().max(1) as u64;
                    st.latency_us.saturating_record(us);
                    for (i, n) in self.pending.drain(..) {
                        self.delivered[i] += n;
                    }
                    return Ok(());
                }
                Err(e) if retryable(&e) => {
                    let _ = self.client.batch_execute("ROLLBACK").await;
                    let st = &mut self.stats[t as usize];
                    if tries >= MAX_TRIES {
                        st.failed += 1;
                        return Ok(());
                    }
                    st.retries += 1;
                }
                Err(e) => {
                    let _ = self.client.batch_execute("ROLLBACK").await;
                    return Err(format!("{}: {e} ({:?})", t.name(), e.as_db_error()));
                }
            }
        }
    }

    /// The statement that opens a transaction of type `t` in this terminal's mode.
    fn begin_sql(&self, t: TxnType) -> &'static str {
        let fast = self.mode.is_fast(t);
        match (fast == self.default_fast, fast) {
            (true, _) => "BEGIN",
            (false, true) => "BEGIN; SET LOCAL synchronous_commit = off",
            (false, false) => "BEGIN; SET LOCAL synchronous_commit = on",
        }
    }

    /// One try: the transaction from its BEGIN to its COMMIT (or intended ROLLBACK).
    async fn attempt(&mut self, t: TxnType, input: &Input) -> PgResult<Outcome> {
        let begin = self.begin_sql(t);
        match input {
            Input::NewOrder { d, c, items } => self.new_order(begin, *d, *c, items).await,
            Input::Payment { d, c_w, c_d, customer, amount } => {
                self.payment(begin, *d, *c_w, *c_d, customer, *amount).await
            }
            Input::OrderStatus { d, customer } => self.order_status(begin, *d, customer).await,
            Input::Delivery { carrier } => self.delivery(begin, *carrier).await,
            Input::StockLevel { d, threshold } => self.stock_level(begin, *d, *threshold).await,
        }
    }

    fn now() -> chrono::NaiveDateTime {
        chrono::Utc::now().naive_utc()
    }

    /// The customer named ceil(n / 2)-th by first name among those with this last name.
    fn middle_customer(rows: &[Row], w: i32, d: i32, last: &str) -> i32 {
        // Every last name in range exists in every district (clause 4.3.3.1 gives
        // customers 1–1000 the names 0–999 in order).
        assert!(!rows.is_empty(), "no customer named {last} in ({w}, {d})");
        rows[(rows.len() - 1) / 2].get(0)
    }

    /// New-Order (clause 2.4.2) in three round trips: BEGIN with the customer, district and
    /// item reads; the order rows with the stock rows locked; the stock updates and order
    /// lines with COMMIT.
    async fn new_order(
        &mut self,
        begin: &str,
        d: i32,
        c: i32,
        items: &[(i32, i32, i32)],
    ) -> PgResult<Outcome> {
        let (w, s, cl) = (self.home, &self.s, &self.client);
        let item_params: Vec<[&Param; 1]> = items.iter().map(|(i, _, _)| [i as &Param]).collect();
        let (b, cust, district, item_rows) = join!(
            cl.batch_execute(begin),
            async { cl.query_one(&s.no_cust_wh, &[&w, &d, &c]).await },
            async { cl.query_one(&s.no_district, &[&w, &d]).await },
            join_all(item_params.iter().map(|p| cl.query_opt(&s.no_item, p))),
        );
        b?;
        let (cust, district) = (cust?, district?);
        let item_rows: Vec<Option<Row>> = in_order(item_rows)?;
        let Some(item_rows) = item_rows.into_iter().collect::<Option<Vec<Row>>>() else {
            // An unused item number: the specification's intended rollback.
            cl.batch_execute("ROLLBACK").await?;
            return Ok(Outcome::RolledBack);
        };
        let c_discount: Decimal = cust.get(0);
        let w_tax: Decimal = cust.get(3);
        let o_id: i32 = district.get::<_, i32>(0) - 1;
        let d_tax: Decimal = district.get(1);
        let all_local = i32::from(items.iter().all(|&(_, sw, _)| sw == w));
        let ol_cnt = items.len() as i32;
        let now = Self::now();
        let stock_params: Vec<[&Param; 2]> =
            items.iter().map(|(i, sw, _)| [sw as &Param, i as &Param]).collect();
        let (order, new_order, stocks) = join!(
            async {
                cl.execute(&s.no_order, &[&o_id, &d, &w, &c, &now, &ol_cnt, &all_local]).await
            },
            async { cl.execute(&s.no_new_order, &[&o_id, &d, &w]).await },
            join_all(stock_params.iter().map(|p| cl.query_one(&s.no_stock, p))),
        );
        order?;
        new_order?;
        let stocks = in_order(stocks)?;
        struct Line {
            new_q: i32,
            remote: i32,
            amount: Decimal,
            number: i32,
            dist_info: String,
        }
        let mut lines = Vec::with_capacity(items.len());
        let mut total = Decimal::ZERO;
        for (n, ((&(_, supply_w, qty), stock), item)) in
            items.iter().zip(&stocks).zip(&item_rows).enumerate()
        {
            let price: Decimal = item.get(0);
            let s_quantity: i32 = stock.get(0);
            let amount = Decimal::from(qty) * price;
            total += amount;
            lines.push(Line {
                new_q: if s_quantity - qty >= 10 {
                    s_quantity - qty
                } else {
                    s_quantity - qty + 91
                },
                remote: i32::from(supply_w != w),
                amount,
                number: n as i32 + 1,
                dist_info: stock.get(1 + d as usize),
            });
        }
        let update_params: Vec<[&Param; 5]> = items
            .iter()
            .zip(&lines)
            .map(|((i, sw, qty), l)| [sw as &Param, i, &l.new_q, qty, &l.remote])
            .collect();
        let line_params: Vec<[&Param; 9]> = items
            .iter()
            .zip(&lines)
            .map(|((i, sw, qty), l)| {
                [&o_id as &Param, &d, &w, &l.number, i, sw, qty, &l.amount, &l.dist_info]
            })
            .collect();
        let (updates, inserts, commit) = join!(
            join_all(update_params.iter().map(|p| cl.execute(&s.no_stock_update, p))),
            join_all(line_params.iter().map(|p| cl.execute(&s.no_line, p))),
            cl.batch_execute("COMMIT"),
        );
        in_order(updates)?;
        in_order(inserts)?;
        commit?;
        // The order's total, as the terminal would display it.
        let _total = total * (Decimal::ONE - c_discount) * (Decimal::ONE + w_tax + d_tax);
        Ok(Outcome::Committed)
    }

    /// Payment (clause 2.5.2): BEGIN with the warehouse and district updates and the
    /// customer's lookup; by last name, the customer's row next; for a bad-credit customer
    /// its data; then the customer update and the history row with COMMIT.
    async fn payment(
        &mut self,
        begin: &str,
        d: i32,
        c_w: i32,
        c_d: i32,
        customer: &CustomerKey,
        amount: Decimal,
    ) -> PgResult<Outcome> {
        let (w, s, cl) = (self.home, &self.s, &self.client);
        let lookup = async {
            match customer {
                CustomerKey::Id(id) => {
                    Ok((*id, cl.query_one(&s.p_customer, &[&c_w, &c_d, id]).await?))
                }
                CustomerKey::Last(last) => {
                    let rows = cl.query(&s.cust_by_name, &[&c_w, &c_d, last]).await?;
                    let id = Self::middle_customer(&rows, c_w, c_d, last);
                    Ok((id, cl.query_one(&s.p_customer, &[&c_w, &c_d, &id]).await?))
                }
            }
        };
        let (b, wh, di, cu) = join!(
            cl.batch_execute(begin),
            async { cl.query_one(&s.p_warehouse, &[&w, &amount]).await },
            async { cl.query_one(&s.p_district, &[&w, &d, &amount]).await },
            lookup,
        );
        b?;
        let (wh, di) = (wh?, di?);
        let (c_id, cu): (i32, Row) = cu?;
        let w_name: String = wh.get(0);
        let d_name: String = di.get(0);
        let h_data = format!("{w_name}    {d_name}");
        let now = Self::now();
        let credit: String = cu.get(9);
        let update = async {
            if credit.trim() == "BC" {
                let row = cl.query_one(&s.p_customer_data, &[&c_w, &c_d, &c_id]).await?;
                let old: String = row.get(0);
                let mut data = format!("{c_id} {c_d} {c_w} {d} {w} {amount} {old}");
                data.truncate(500);
                cl.execute(&s.p_customer_update_bc, &[&c_w, &c_d, &c_id, &amount, &data]).await
            } else {
                cl.execute(&s.p_customer_update, &[&c_w, &c_d, &c_id, &amount]).await
            }
        };
        let history_row: [&Param; 8] = [&c_id, &c_d, &c_w, &d, &w, &now, &amount, &h_data];
        let history = cl.execute(&s.p_history, &history_row);
        // The bad-credit path reads c_data first, so its update cannot share the round trip
        // with the history row and COMMIT; the usual path can.
        if credit.trim() == "BC" {
            update.await?;
            let (h, commit) = join!(history, cl.batch_execute("COMMIT"));
            h?;
            commit?;
        } else {
            let (u, h, commit) = join!(update, history, cl.batch_execute("COMMIT"));
            u?;
            h?;
            commit?;
        }
        Ok(Outcome::Committed)
    }

    /// Order-Status (clause 2.6.2): the customer, its last order, that order's lines.
    async fn order_status(
        &mut self,
        begin: &str,
        d: i32,
        customer: &CustomerKey,
    ) -> PgResult<Outcome> {
        let (w, s, cl) = (self.home, &self.s, &self.client);
        let find = async {
            match customer {
                CustomerKey::Id(id) => Ok(*id),
                CustomerKey::Last(last) => {
                    let rows = cl.query(&s.cust_by_name, &[&w, &d, last]).await?;
                    Ok(Self::middle_customer(&rows, w, d, last))
                }
            }
        };
        let (b, c_id) = join!(cl.batch_execute(begin), find);
        b?;
        let c_id: i32 = c_id?;
        let (cu, order) =
            join!(async { cl.query_one(&s.os_customer, &[&w, &d, &c_id]).await }, async {
                cl.query_opt(&s.os_last_order, &[&w, &d, &c_id]).await
            },);
        cu?;
        match order? {
            Some(order) => {
                let o_id: i32 = order.get(0);
                let (lines, commit) = join!(
                    async { cl.query(&s.os_lines, &[&w, &d, &o_id]).await },
                    cl.batch_execute("COMMIT")
                );
                lines?;
                commit?;
            }
            None => cl.batch_execute("COMMIT").await?,
        }
        Ok(Outcome::Committed)
    }

    /// Delivery (clause 2.7.4), all ten districts at once: the oldest new order of each, its
    /// deletion (a district whose order a concurrent Delivery took is looked at again), the
    /// order, line and sum statements of every delivered order, then the customers with
    /// COMMIT.
    async fn delivery(&mut self, begin: &str, carrier: i32) -> PgResult<Outcome> {
        let (w, s, cl) = (self.home, &self.s, &self.client);
        let now = Self::now();
        let mut todo: Vec<i32> = (1..=DISTRICTS as i32).collect();
        let mut taken: Vec<(i32, i32)> = Vec::new();
        let mut first = true;
        while !todo.is_empty() {
            let params: Vec<[&Param; 2]> = todo.iter().map(|d| [&w as &Param, d]).collect();
            let oldest = join_all(params.iter().map(|p| cl.query_opt(&s.d_oldest, p)));
            let oldest = if first {
                first = false;
                let (b, oldest) = join!(cl.batch_execute(begin), oldest);
                b?;
                oldest
            } else {
                oldest.await
            };
            let found: Vec<(i32, i32)> = todo
                .iter()
                .zip(in_order(oldest)?)
                .filter_map(|(&d, row)| row.map(|r| (d, r.get::<_, i32>(0))))
                .collect();
            let params: Vec<[&Param; 3]> =
                found.iter().map(|(d, o)| [&w as &Param, d, o]).collect();
            let deleted =
                in_order(join_all(params.iter().map(|p| cl.execute(&s.d_delete, p))).await)?;
            todo.clear();
            for (&(d, o), n) in found.iter().zip(deleted) {
                if n == 0 {
                    todo.push(d); // a concurrent Delivery took it: look again
                } else {
                    taken.push((d, o));
                }
            }
        }
        let order_params: Vec<[&Param; 4]> =
            taken.iter().map(|(d, o)| [&w as &Param, d, o, &carrier]).collect();
        let line_params: Vec<[&Param; 4]> =
            taken.iter().map(|(d, o)| [&w as &Param, d, o, &now]).collect();
        let sum_params: Vec<[&Param; 3]> =
            taken.iter().map(|(d, o)| [&w as &Param, d, o]).collect();
        let (orders, lines, sums) = join!(
            join_all(order_params.iter().map(|p| cl.query_one(&s.d_order, p))),
            join_all(line_params.iter().map(|p| cl.execute(&s.d_lines, p))),
            join_all(sum_params.iter().map(|p| cl.query_one(&s.d_sum, p))),
        );
        let orders = in_order(orders)?;
        in_order(lines)?;
        let sums = in_order(sums)?;
        let mut customers = Vec::with_capacity(taken.len());
        for ((order, sum), (d, _)) in orders.iter().zip(&sums).zip(&taken) {
            let c_id: i32 = order.get(0);
            let sum: Option<Decimal> = sum.get(0);
            customers.push((*d, c_id, sum.unwrap_or(Decimal::ZERO)));
        }
        let params: Vec<[&Param; 4]> =
            customers.iter().map(|(d, c, sum)| [&w as &Param, d, c, sum]).collect();
        let (updates, commit) = join!(
            join_all(params.iter().map(|p| cl.execute(&s.d_customer, p))),
            cl.batch_execute("COMMIT"),
        );
        in_order(updates)?;
        commit?;
        for (d, _) in &taken {
            self.pending.push((((w - 1) * DISTRICTS as i32 + d - 1) as usize, 1));
        }
        Ok(Outcome::Committed)
    }

    /// Stock-Level (clause 2.8.2): the district's next order id, then the count.
    async fn stock_level(&mut self, begin: &str, d: i32, threshold: i32) -> PgResult<Outcome> {
        let (w, s, cl) = (self.home, &self.s, &self.client);
        let (b, next) =
            join!(cl.batch_execute(begin), async { cl.query_one(&s.sl_next, &[&w, &d]).await });
        b?;
        let next: i32 = next?.get(0);
        let (count, commit) = join!(
            async { cl.query_one(&s.sl_count, &[&w, &d, &next, &threshold]).await },
            cl.batch_execute("COMMIT"),
        );
        let _low: i64 = count?.get(0);
        commit?;
        Ok(Outcome::Committed)
    }
}

type PgResult<T> = Result<T, tokio_postgres::Error>;

/// A statement parameter.
type Param = dyn ToSql + Sync;

/// The results of pipelined statements in the order they were sent: the first error wins
/// (later statements of a failed transaction fail only because of it).
fn in_order<T>(results: Vec<PgResult<T>>) -> PgResult<Vec<T>> {
    results.into_iter().collect()
}

/// How a Payment or Order-Status names its customer.
enum CustomerKey {
    Id(i32),
    Last(String),
}

/// A transaction's input, drawn once and kept across retries.
enum Input {
    NewOrder { d: i32, c: i32, items: Vec<(i32, i32, i32)> },
    Payment { d: i32, c_w: i32, c_d: i32, customer: CustomerKey, amount: Decimal },
    OrderStatus { d: i32, customer: CustomerKey },
    Delivery { carrier: i32 },
    StockLevel { d: i32, threshold: i32 },
}

impl Input {
    fn draw(t: TxnType, rng: &mut StdRng, c: &NuRandC, scale: &Scale, home: i32) -> Input {
        let district = |rng: &mut StdRng| rng.gen_range(1..=DISTRICTS as i32);
        let customer_id =
            |rng: &mut StdRng| gen::nurand(rng, 1023, c.c_id, 1, scale.customers) as i32;
        let customer = |rng: &mut StdRng| {
            if rng.gen_range(1..=100) <= 60 {
                CustomerKey::Last(gen::last_name(gen::nurand(
                    rng,
                    255,
                    c.c_last,
                    0,
                    scale.last_names(),
                )))
            } else {
                CustomerKey::Id(customer_id(rng))
            }
        };
        let other_warehouse = |rng: &mut StdRng| loop {
            let w = rng.gen_range(1..=scale.warehouses as i32);
            if w != home {
                break w;
            }
        };
        match t {
            TxnType::NewOrder => {
                let d = district(rng);
                let c_id = customer_id(rng);
                let n = rng.gen_range(5..=15);
                let rollback = rng.gen_range(1..=100) == 1;
                let mut drawn = std::collections::HashSet::new();
                let mut items: Vec<(i32, i32, i32)> = (0..n)
                    .map(|i| {
                        let i_id = if rollback && i == n - 1 {
                            scale.items as i32 + 1 // unused: the transaction rolls back
                        } else {
                            // Distinct items, so that each stock row is read and updated
                            // once per order.
                            loop {
                                let i = gen::nurand(rng, 8191, c.ol_i_id, 1, scale.items) as i32;
                                if drawn.insert(i) {
                                    break i;
                                }
                            }
                        };
                        let supply = if scale.warehouses > 1 && rng.gen_range(1..=100) == 1 {
                            other_warehouse(rng)
                        } else {
                            home
                        };
                        (i_id, supply, rng.gen_range(1..=10))
                    })
                    .collect();
                // Stock rows are locked in one order by every terminal, so New-Orders do
                // not deadlock with each other. The unused item stays last.
                items.sort_by_key(|&(i, w, _)| (i, w));
                Input::NewOrder { d, c: c_id, items }
            }
            TxnType::Payment => {
                let d = district(rng);
                let (c_w, c_d) = if scale.warehouses == 1 || rng.gen_range(1..=100) <= 85 {
                    (home, d)
                } else {
                    (other_warehouse(rng), district(rng))
                };
                let customer = customer(rng);
                let amount = Decimal::new(rng.gen_range(100..=500_000), 2);
                Input::Payment { d, c_w, c_d, customer, amount }
            }
            TxnType::OrderStatus => {
                let d = district(rng);
                Input::OrderStatus { d, customer: customer(rng) }
            }
            TxnType::Delivery => Input::Delivery { carrier: rng.gen_range(1..=10) },
            TxnType::StockLevel => {
                Input::StockLevel { d: district(rng), threshold: rng.gen_range(10..=20) }
            }
        }
    }
}
