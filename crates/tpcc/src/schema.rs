//! The TPC-C schema (clause 1.3), as portable SQL that Kiln and PostgreSQL both accept.

/// Drops the tables if they exist.
pub const DROP: &[&str] = &[
    "DROP TABLE IF EXISTS order_line",
    "DROP TABLE IF EXISTS new_order",
    "DROP TABLE IF EXISTS orders",
    "DROP TABLE IF EXISTS history",
    "DROP TABLE IF EXISTS customer",
    "DROP TABLE IF EXISTS stock",
    "DROP TABLE IF EXISTS item",
    "DROP TABLE IF EXISTS district",
    "DROP TABLE IF EXISTS warehouse",
];

/// Creates the tables with their primary keys.
pub const CREATE: &[&str] = &[
    "CREATE TABLE warehouse (
        w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20),
        w_city varchar(20), w_state char(2), w_zip char(9), w_tax numeric(4,4),
        w_ytd numeric(12,2), PRIMARY KEY (w_id))",
    "CREATE TABLE district (
        d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20),
        d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9),
        d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id int,
        PRIMARY KEY (d_w_id, d_id))",
    "CREATE TABLE customer (
        c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL, c_first varchar(16),
        c_middle char(2), c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20),
        c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16),
        c_since timestamp, c_credit char(2), c_credit_lim numeric(12,2),
        c_discount numeric(4,4), c_balance numeric(12,2), c_ytd_payment numeric(12,2),
        c_payment_cnt int, c_delivery_cnt int, c_data varchar(500),
        PRIMARY KEY (c_w_id, c_d_id, c_id))",
    "CREATE TABLE history (
        h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int, h_w_id int, h_date timestamp,
        h_amount numeric(6,2), h_data varchar(24))",
    "CREATE TABLE orders (
        o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int,
        o_entry_d timestamp, o_carrier_id int, o_ol_cnt int, o_all_local int,
        PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE TABLE new_order (
        no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL,
        PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "CREATE TABLE order_line (
        ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL,
        ol_number int NOT NULL, ol_i_id int, ol_supply_w_id int, ol_delivery_d timestamp,
        ol_quantity int, ol_amount numeric(6,2), ol_dist_info char(24),
        PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
    "CREATE TABLE item (
        i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price numeric(5,2),
        i_data varchar(50), PRIMARY KEY (i_id))",
    "CREATE TABLE stock (
        s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int, s_dist_01 char(24),
        s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24),
        s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24), s_dist_09 char(24),
        s_dist_10 char(24), s_ytd int, s_order_cnt int, s_remote_cnt int,
        s_data varchar(50), PRIMARY KEY (s_w_id, s_i_id))",
];

/// The secondary indexes, created after loading: Payment and Order-Status find a customer by
/// last name, and Order-Status finds a customer's newest order.
pub const INDEXES: &[&str] = &[
    "CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
];
