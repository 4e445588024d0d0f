//! The consistency conditions of clause 3.3.2, each as one SQL query that counts the
//! districts, orders or customers violating it. They run in one REPEATABLE READ transaction,
//! so all twelve see the same state.
//!
//! Condition 11 as the specification words it (`count(ORDER) − count(NEW-ORDER) = 2100`)
//! holds for the initial population only: every Delivery removes a new-order row and keeps
//! the order. It is checked here in the form that holds at every point: the difference is
//! 2,100 plus the orders that committed Delivery transactions delivered in that district, a
//! number the driver counts on its side — so the condition also catches a Delivery that was
//! acknowledged but whose effects are missing, or effects without an acknowledgement.

use tokio_postgres::Client;

use crate::{Scale, DISTRICTS};

/// One condition's outcome.
#[derive(Clone, Debug)]
pub struct Condition {
    /// 1–12, the clause 3.3.2.N it checks.
    pub number: u32,
    pub rule: &'static str,
    /// Rows (warehouses, districts, orders or customers) that violate it.
    pub violations: i64,
}

impl Condition {
    pub fn holds(&self) -> bool {
        self.violations == 0
    }
}

/// Condition 11's query: per district, count(ORDER) − count(NEW-ORDER), compared with what
/// the driver counted.
pub(crate) const CONDITION_11: &str = "SELECT d.d_w_id, d.d_id, \
     (SELECT count(*) FROM orders WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) \
     - (SELECT count(*) FROM new_order WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id) \
     FROM district d ORDER BY d.d_w_id, d.d_id";

pub(crate) const CONDITIONS: &[(u32, &str, &str)] = &[
    (
        1,
        "W_YTD = sum(D_YTD)",
        "SELECT count(*) FROM warehouse w \
         WHERE w.w_ytd IS DISTINCT FROM (SELECT sum(d_ytd) FROM district WHERE d_w_id = w.w_id)",
    ),
    (
        2,
        "D_NEXT_O_ID − 1 = max(O_ID) = max(NO_O_ID)",
        "SELECT count(*) FROM district d \
         WHERE d.d_next_o_id - 1 IS DISTINCT FROM \
               (SELECT max(o_id) FROM orders WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) \
            OR (EXISTS (SELECT 1 FROM new_order WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id) \
                AND d.d_next_o_id - 1 IS DISTINCT FROM \
                    (SELECT max(no_o_id) FROM new_order \
                     WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id))",
    ),
    (
        3,
        "max(NO_O_ID) − min(NO_O_ID) + 1 = count(NEW-ORDER rows)",
        "SELECT count(*) FROM (SELECT max(no_o_id) - min(no_o_id) + 1 AS span, count(*) AS n \
         FROM new_order GROUP BY no_w_id, no_d_id) AS t WHERE t.span <> t.n",
    ),
    (
        4,
        "sum(O_OL_CNT) = count(ORDER-LINE rows)",
        "SELECT count(*) FROM district d \
         WHERE (SELECT sum(o_ol_cnt) FROM orders WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) \
               IS DISTINCT FROM \
               (SELECT count(*) FROM order_line WHERE ol_w_id = d.d_w_id AND ol_d_id = d.d_id)",
    ),
    (
        5,
        "O_CARRIER_ID is null exactly when a NEW-ORDER row exists",
        "SELECT count(*) FROM orders o \
         WHERE (o.o_carrier_id IS NULL) <> EXISTS (SELECT 1 FROM new_order \
               WHERE no_w_id = o.o_w_id AND no_d_id = o.o_d_id AND no_o_id = o.o_id)",
    ),
    (
        6,
        "O_OL_CNT = count(ORDER-LINE rows) per order",
        "SELECT count(*) FROM orders o \
         WHERE o.o_ol_cnt <> (SELECT count(*) FROM order_line \
               WHERE ol_w_id = o.o_w_id AND ol_d_id = o.o_d_id AND ol_o_id = o.o_id)",
    ),
    (
        7,
        "OL_DELIVERY_D is null exactly when O_CARRIER_ID is null",
        "SELECT count(*) FROM order_line l, orders o \
         WHERE o.o_w_id = l.ol_w_id AND o.o_d_id = l.ol_d_id AND o.o_id = l.ol_o_id \
           AND (l.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL)",
    ),
    (
        8,
        "W_YTD = sum(H_AMOUNT)",
        "SELECT count(*) FROM warehouse w LEFT JOIN \
           (SELECT h_w_id, sum(h_amount) AS s FROM history GROUP BY h_w_id) AS h \
           ON h.h_w_id = w.w_id \
         WHERE w.w_ytd IS DISTINCT FROM h.s",
    ),
    (
        9,
        "D_YTD = sum(H_AMOUNT)",
        "SELECT count(*) FROM district d LEFT JOIN \
           (SELECT h_w_id, h_d_id, sum(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) AS h \
           ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id \
         WHERE d.d_ytd IS DISTINCT FROM h.s",
    ),
    (
        10,
        "C_BALANCE = sum(delivered OL_AMOUNT) − sum(H_AMOUNT)",
        "SELECT count(*) FROM customer c \
         LEFT JOIN (SELECT o.o_w_id AS w, o.o_d_id AS d, o.o_c_id AS cid, sum(l.ol_amount) AS s \
                    FROM orders o, order_line l \
                    WHERE l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id \
                      AND l.ol_delivery_d IS NOT NULL \
                    GROUP BY o.o_w_id, o.o_d_id, o.o_c_id) AS ol \
           ON ol.w = c.c_w_id AND ol.d = c.c_d_id AND ol.cid = c.c_id \
         LEFT JOIN (SELECT h_c_w_id AS w, h_c_d_id AS d, h_c_id AS cid, sum(h_amount) AS s \
                    FROM history GROUP BY h_c_w_id, h_c_d_id, h_c_id) AS h \
           ON h.w = c.c_w_id AND h.d = c.c_d_id AND h.cid = c.c_id \
         WHERE c.c_balance <> coalesce(ol.s, 0) - coalesce(h.s, 0)",
    ),
    (
        12,
        "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)",
        "SELECT count(*) FROM customer c \
         LEFT JOIN (SELECT o.o_w_id AS w, o.o_d_id AS d, o.o_c_id AS cid, sum(l.ol_amount) AS s \
                    FROM orders o, order_line l \
                    WHERE l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id \
                      AND l.ol_delivery_d IS NOT NULL \
                    GROUP BY o.o_w_id, o.o_d_id, o.o_c_id) AS ol \
           ON ol.w = c.c_w_id AND ol.d = c.c_d_id AND ol.cid = c.c_id \
         WHERE c.c_balance + c.c_ytd_payment <> coalesce(ol.s, 0)",
    ),
];

/// Checks all twelve conditions. `delivered` is, per district (index `(w − 1) · 10 + d − 1`),
/// the orders that committed Delivery transactions delivered since the load.
pub async fn check(
    client: &Client,
    scale: &Scale,
    delivered: &[u64],
) -> Result<Vec<Condition>, tokio_postgres::Error> {
    client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await?;
    let r = check_in_txn(client, scale, delivered).await;
    let end = client.batch_execute("COMMIT").await;
    let out = r?;
    end?;
    Ok(out)
}

async fn check_in_txn(
    client: &Client,
    scale: &Scale,
    delivered: &[u64],
) -> Result<Vec<Condition>, tokio_postgres::Error> {
    let mut out = Vec::new();
    for &(number, rule, sql) in CONDITIONS {
        let violations: i64 = client.query_one(sql, &[]).await?.get(0);
        out.push(Condition { number, rule, violations });
    }
    // Condition 11, per district, against the driver's count of deliveries.
    let rows = client.query(CONDITION_11, &[]).await?;
    let mut violations = 0;
    if rows.len() != (scale.warehouses * DISTRICTS) as usize {
        violations += 1;
    }
    for row in rows {
        let (w, d, diff): (i32, i32, i64) = (row.get(0), row.get(1), row.get(2));
        let i = ((w - 1) * DISTRICTS as i32 + d - 1) as usize;
        let expect =
            i64::from(scale.delivered_orders()) + delivered.get(i).copied().unwrap_or(0) as i64;
        if diff != expect {
            violations += 1;
        }
    }
    out.push(Condition {
        number: 11,
        rule: "count(ORDER) − count(NEW-ORDER) = 2100 + orders delivered since the load",
        violations,
    });
    out.sort_by_key(|c| c.number);
    Ok(out)
}
