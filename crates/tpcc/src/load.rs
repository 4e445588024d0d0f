//! The initial population (clause 4.3.3.1), loaded with `COPY … FROM STDIN` in batches of at
//! most [`BATCH_ROWS`] rows per statement, so no single transaction is huge.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::SinkExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::{Client, Error};

use crate::gen::{self, NuRandC};
use crate::schema;
use crate::{Scale, DISTRICTS};

/// Rows per COPY statement.
pub const BATCH_ROWS: usize = 50_000;

/// What loading produced.
#[derive(Clone, Copy, Debug)]
pub struct Loaded {
    pub scale: Scale,
    /// The NURand constants the population was drawn with; a run picks its own against them.
    pub c: NuRandC,
    pub took: Duration,
    pub rows: u64,
}

/// One table's COPY, split into statements of at most [`BATCH_ROWS`] rows.
struct Copier<'a> {
    client: &'a Client,
    table: &'static str,
    buf: String,
    rows: usize,
    total: u64,
}

impl<'a> Copier<'a> {
    fn new(client: &'a Client, table: &'static str) -> Copier<'a> {
        Copier { client, table, buf: String::new(), rows: 0, total: 0 }
    }

    /// Adds one row: its fields, tab-separated, with `None` as NULL. Fields must not contain
    /// tabs, newlines or backslashes (the generator's never do).
    async fn row(&mut self, fields: &[&dyn std::fmt::Display]) -> Result<(), Error> {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                self.buf.push('\t');
            }
            let _ = write!(self.buf, "{f}");
        }
        self.buf.push('\n');
        self.rows += 1;
        if self.rows >= BATCH_ROWS {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), Error> {
        if self.rows == 0 {
            return Ok(());
        }
        let sink = self.client.copy_in(&format!("COPY {} FROM STDIN", self.table)).await?;
        futures::pin_mut!(sink);
        let data = std::mem::take(&mut self.buf);
        sink.send(Bytes::from(data)).await?;
        sink.finish().await?;
        self.total += self.rows as u64;
        self.rows = 0;
        Ok(())
    }

    async fn finish(mut self) -> Result<u64, Error> {
        self.flush().await?;
        Ok(self.total)
    }
}

/// NULL in COPY's text format.
struct Null;

impl std::fmt::Display for Null {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\\N")
    }
}

/// A fixed-point amount with `scale` decimals from an integer number of units.
struct Fixed(i64, u32);

impl std::fmt::Display for Fixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = 10i64.pow(self.1);
        let sign = if self.0 < 0 { "-" } else { "" };
        let v = self.0.abs();
        write!(f, "{sign}{}.{:0width$}", v / d, v % d, width = self.1 as usize)
    }
}

/// Drops and creates the schema, loads the population for `scale`, and creates the secondary
/// indexes. `seed` makes the data reproducible.
pub async fn load(client: &Client, scale: Scale, seed: u64) -> Result<Loaded, Error> {
    let started = Instant::now();
    for sql in schema::DROP.iter().chain(schema::CREATE) {
        client.batch_execute(sql).await?;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let c = NuRandC::for_load(&mut rng);
    let now = chrono::Utc::now().naive_utc().format("%Y-%m-%d %H:%M:%S").to_string();
    let mut rows = 0;

    let mut item = Copier::new(client, "item");
    for i in 1..=scale.items {
        item.row(&[
            &i,
            &rng.gen_range(1..=10_000),
            &gen::astring(&mut rng, 14, 24),
            &Fixed(rng.gen_range(100..=10_000), 2),
            &gen::data_with_original(&mut rng),
        ])
        .await?;
    }
    rows += item.finish().await?;

    for w in 1..=scale.warehouses {
        let mut t = Copier::new(client, "warehouse");
        t.row(&[
            &w,
            &gen::astring(&mut rng, 6, 10),
            &gen::astring(&mut rng, 10, 20),
            &gen::astring(&mut rng, 10, 20),
            &gen::astring(&mut rng, 10, 20),
            &gen::state(&mut rng),
            &gen::zip(&mut rng),
            &Fixed(rng.gen_range(0..=2000), 4),
            // The sum of the districts' d_ytd, which is the sum of the initial history.
            &Fixed(i64::from(DISTRICTS * scale.customers) * 1000, 2),
        ])
        .await?;
        rows += t.finish().await?;

        let mut t = Copier::new(client, "stock");
        for i in 1..=scale.items {
            let dists: Vec<String> = (0..10).map(|_| gen::astring(&mut rng, 24, 24)).collect();
            let q = rng.gen_range(10..=100);
            let data = gen::data_with_original(&mut rng);
            let d = dists.iter().map(|s| s as &dyn std::fmt::Display);
            let mut fields: Vec<&dyn std::fmt::Display> = vec![&i, &w, &q];
            fields.extend(d);
            fields.extend([&0 as &dyn std::fmt::Display, &0, &0, &data]);
            t.row(&fields).await?;
        }
        rows += t.finish().await?;

        let mut t = Copier::new(client, "district");
        for d in 1..=DISTRICTS {
            t.row(&[
                &d,
                &w,
                &gen::astring(&mut rng, 6, 10),
                &gen::astring(&mut rng, 10, 20),
                &gen::astring(&mut rng, 10, 20),
                &gen::astring(&mut rng, 10, 20),
                &gen::state(&mut rng),
                &gen::zip(&mut rng),
                &Fixed(rng.gen_range(0..=2000), 4),
                &Fixed(i64::from(scale.customers) * 1000, 2),
                &(scale.customers + 1),
            ])
            .await?;
        }
        rows += t.finish().await?;

        let mut cust = Copier::new(client, "customer");
        let mut hist = Copier::new(client, "history");
        for d in 1..=DISTRICTS {
            for cid in 1..=scale.customers {
                let last = if cid <= 1000 {
                    gen::last_name(cid - 1)
                } else {
                    gen::last_name(gen::nurand(&mut rng, 255, c.c_last, 0, scale.last_names()))
                };
                let credit = if rng.gen_range(0..10) == 0 { "BC" } else { "GC" };
                cust.row(&[
                    &cid,
                    &d,
                    &w,
                    &gen::astring(&mut rng, 8, 16),
                    &"OE",
                    &last,
                    &gen::astring(&mut rng, 10, 20),
                    &gen::astring(&mut rng, 10, 20),
                    &gen::astring(&mut rng, 10, 20),
                    &gen::state(&mut rng),
                    &gen::zip(&mut rng),
                    &gen::nstring(&mut rng, 16, 16),
                    &now,
                    &credit,
                    &"50000.00",
                    &Fixed(rng.gen_range(0..=5000), 4),
                    &"-10.00",
                    &"10.00",
                    &1,
                    &0,
                    &gen::astring(&mut rng, 300, 500),
                ])
                .await?;
                hist.row(&[&cid, &d, &w, &d, &w, &now, &"10.00", &gen::astring(&mut rng, 12, 24)])
                    .await?;
            }
        }
        rows += cust.finish().await?;
        rows += hist.finish().await?;

        let mut orders = Copier::new(client, "orders");
        let mut lines = Copier::new(client, "order_line");
        let mut news = Copier::new(client, "new_order");
        let first_new = scale.delivered_orders() + 1;
        for d in 1..=DISTRICTS {
            // o_c_id is a random permutation of the customers.
            let mut perm: Vec<u32> = (1..=scale.customers).collect();
            for i in (1..perm.len()).rev() {
                perm.swap(i, rng.gen_range(0..=i));
            }
            for o in 1..=scale.customers {
                let delivered = o < first_new;
                let ol_cnt = rng.gen_range(5..=15u32);
                let carrier =
                    if delivered { rng.gen_range(1..=10u32).to_string() } else { Null.to_string() };
                orders
                    .row(&[&o, &d, &w, &perm[o as usize - 1], &now, &carrier, &ol_cnt, &1])
                    .await?;
                for n in 1..=ol_cnt {
                    let (delivery_d, amount): (&dyn std::fmt::Display, Fixed) = if delivered {
                        (&now, Fixed(0, 2))
                    } else {
                        (&Null, Fixed(rng.gen_range(1..=999_999), 2))
                    };
                    lines
                        .row(&[
                            &o,
                            &d,
                            &w,
                            &n,
                            &rng.gen_range(1..=scale.items),
                            &w,
                            delivery_d,
                            &5,
                            &amount,
                            &gen::astring(&mut rng, 24, 24),
                        ])
                        .await?;
                }
                if !delivered {
                    news.row(&[&o, &d, &w]).await?;
                }
            }
        }
        rows += orders.finish().await?;
        rows += lines.finish().await?;
        rows += news.finish().await?;
    }
    for sql in schema::INDEXES {
        client.batch_execute(sql).await?;
    }
    Ok(Loaded { scale, c, took: started.elapsed(), rows })
}

#[cfg(test)]
mod tests {
    use super::Fixed;

    #[test]
    fn fixed_point_amounts_print_like_numeric() {
        assert_eq!(Fixed(123456, 2).to_string(), "1234.56");
        assert_eq!(Fixed(5, 2).to_string(), "0.05");
        assert_eq!(Fixed(-1000, 2).to_string(), "-10.00");
        assert_eq!(Fixed(2000, 4).to_string(), "0.2000");
    }
}
