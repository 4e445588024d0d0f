// Go applications on Kiln and on PostgreSQL: pgx 5 directly (every common type in binary
// format, arrays, binary COPY, batches, enum types loaded by name, the simple protocol,
// error fields, LISTEN/NOTIFY) and GORM (AutoMigrate twice, associations, preload, soft
// delete, its migrator's reflection). It prints what it saw; the test compares the two
// transcripts. With "true" after the URL it also uses the ED surface.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

var ctx = context.Background()

func check(err error, what string) {
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			fmt.Println("FAIL", what, pe.Code, pe.Message)
		} else {
			fmt.Println("FAIL", what, err)
		}
		os.Exit(1)
	}
}

func show(c *pgx.Conn, what, sql string, args ...any) {
	rows, err := c.Query(ctx, sql, args...)
	check(err, what)
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		check(err, what)
		s := what + ":"
		for _, v := range vals {
			s += fmt.Sprintf(" %T=%v", v, v)
		}
		fmt.Println(s)
	}
	check(rows.Err(), what)
}

func pgxProgram(url string) {
	c, err := pgx.Connect(ctx, url)
	check(err, "connect")
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "drop table if exists items, kinds")
	check(err, "drop")
	_, err = c.Exec(ctx, `create table kinds (id serial primary key, name text not null unique)`)
	check(err, "create kinds")
	_, err = c.Exec(ctx, `create table items (
		id bigserial primary key, kind_id int references kinds(id), name varchar(40) not null,
		price numeric(12,2), qty int2, weight float4, ratio float8, ok bool, born date,
		at timestamptz, local timestamp, tm time, span interval, uid uuid, doc jsonb, js json,
		tags text[], nums int4[], blob bytea, ch char(3))`)
	check(err, "create items")
	_, err = c.Exec(ctx, "insert into kinds(name) values ($1), ($2)", "tool", "toy")
	check(err, "insert kinds")
	at := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	var price pgtype.Numeric
	check(price.Scan("1234.56"), "numeric")
	var id int64
	err = c.QueryRow(ctx, `insert into items(kind_id, name, price, qty, weight, ratio, ok, born, at,
		local, tm, span, uid, doc, js, tags, nums, blob, ch)
		values ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19) returning id`,
		1, "hammer", price, int16(3), float32(1.5), 0.25, true,
		time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), at, time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
		pgtype.Time{Microseconds: (10*3600 + 30*60) * 1e6, Valid: true},
		pgtype.Interval{Days: 3, Microseconds: 3600e6, Months: 2, Valid: true},
		[16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8},
		map[string]any{"a": 1, "b": []any{"x", true}}, map[string]any{"k": "v"},
		[]string{"red", "with space", "quo\"te"}, []int32{1, 2, 3}, []byte{0, 1, 255}, "ab").Scan(&id)
	check(err, "insert every type")
	show(c, "row", "select * from items")
	show(c, "any", "select name from items where id = any($1)", []int64{id, 99})
	show(c, "array parameter", "select $1::text[]", []string{"a", "b"})
	rowsIn := [][]any{}
	for i := 0; i < 1000; i++ {
		rowsIn = append(rowsIn, []any{2, fmt.Sprintf("n%d", i), at.Add(time.Duration(i) * time.Second), []string{"x"}, float64(i) / 4})
	}
	n, err := c.CopyFrom(ctx, pgx.Identifier{"items"}, []string{"kind_id", "name", "at", "tags", "ratio"}, pgx.CopyFromRows(rowsIn))
	check(err, "binary COPY")
	fmt.Println("copied", n)
	show(c, "after copy", "select count(*), sum(ratio), min(at), max(name) from items where kind_id = 2")
	batch := &pgx.Batch{}
	batch.Queue("select count(*) from items")
	batch.Queue("update items set qty = qty + 1 where id = $1", id)
	batch.Queue("select qty from items where id = $1", id)
	br := c.SendBatch(ctx, batch)
	var count int64
	check(br.QueryRow().Scan(&count), "batch 1")
	tag, err := br.Exec()
	check(err, "batch 2")
	var qty int16
	check(br.QueryRow().Scan(&qty), "batch 3")
	check(br.Close(), "batch close")
	fmt.Println("batch", count, tag.String(), qty)
	var pe *pgconn.PgError
	_, err = c.Exec(ctx, "insert into items(kind_id, name) values (99, 'x')")
	if errors.As(err, &pe) {
		fmt.Println("foreign key error", pe.Code, pe.SchemaName, pe.TableName, pe.ConstraintName)
	}
	_, err = c.Exec(ctx, "insert into kinds(name) values ('tool')")
	if errors.As(err, &pe) {
		fmt.Println("unique error", pe.Code, pe.TableName, pe.ConstraintName, pe.Detail)
	}
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadOnly})
	check(err, "begin")
	show(tx.Conn(), "in a read-only transaction", "select name from items where id = $1", id)
	check(tx.Commit(ctx), "commit")
	show(c, "values", "select 12345678901234567890.123::numeric, -0.5::numeric, interval '1 year 2 mons 3 days 04:05:06.789', null::int[], array[1,null,3], 'x'::name, 42::oid")
	_, err = c.Exec(ctx, "drop type if exists mood")
	check(err, "drop type")
	_, err = c.Exec(ctx, "create type mood as enum ('sad', 'ok', 'happy')")
	check(err, "create type")
	for _, name := range []string{"mood", "_mood"} {
		t, err := c.LoadType(ctx, name)
		check(err, "load type "+name)
		c.TypeMap().RegisterType(t)
	}
	show(c, "enum", "select 'ok'::mood, array['sad','happy']::mood[]")
	simple, err := pgx.Connect(ctx, url+"?default_query_exec_mode=simple_protocol")
	check(err, "connect (simple protocol)")
	show(simple, "simple protocol", "select $1::int + 1, $2::text, $3::timestamptz", 41, "x", at)
	simple.Close(ctx)
	_, err = c.Exec(ctx, "listen chan1")
	check(err, "listen")
	_, err = c.Exec(ctx, "select pg_notify('chan1', 'hello')")
	check(err, "notify")
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	note, err := c.WaitForNotification(wait)
	cancel()
	check(err, "notification")
	fmt.Println("notification", note.Channel, note.Payload)
	_, err = c.Exec(ctx, "drop table items, kinds; drop type mood")
	check(err, "drop all")
}

type Company struct {
	ID   uint   `gorm:"primaryKey"`
	Name string `gorm:"size:100;not null;uniqueIndex"`
}

type User struct {
	gorm.Model
	Name      string `gorm:"index"`
	Email     *string
	Age       uint8 `gorm:"default:18"`
	Birthday  *time.Time
	CompanyID *uint
	Company   Company
	Tags      []Tag `gorm:"many2many:user_tags;"`
	Score     float64
	Active    bool `gorm:"default:true"`
}

type Tag struct {
	ID   uint
	Name string
}

func gormProgram(url string) {
	db, err := gorm.Open(postgres.Open(url), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	check(err, "gorm open")
	m := db.Migrator()
	check(m.DropTable(&User{}, &Company{}, &Tag{}, "user_tags"), "drop tables")
	check(db.AutoMigrate(&Company{}, &User{}, &Tag{}), "automigrate")
	check(db.AutoMigrate(&Company{}, &User{}, &Tag{}), "automigrate again")
	c := Company{Name: "acme"}
	check(db.Create(&c).Error, "create company")
	born := time.Date(1990, 5, 6, 0, 0, 0, 0, time.UTC)
	u := User{Name: "ann", Birthday: &born, CompanyID: &c.ID, Tags: []Tag{{Name: "a"}, {Name: "b"}}}
	check(db.Create(&u).Error, "create user")
	check(db.CreateInBatches([]User{{Name: "b1"}, {Name: "b2"}, {Name: "b3"}}, 2).Error, "batches")
	var got User
	check(db.Preload("Company").Preload("Tags").First(&got, u.ID).Error, "preload")
	fmt.Println("user", got.Name, got.Company.Name, len(got.Tags), got.Age, got.Active, got.Birthday.UTC().Format(time.RFC3339))
	check(db.Model(&got).Update("age", 30).Error, "update")
	check(db.Delete(&got).Error, "soft delete")
	var n int64
	check(db.Model(&User{}).Count(&n).Error, "count")
	fmt.Println("users left", n)
	check(db.Unscoped().Where("name like ?", "b%").Delete(&User{}).Error, "hard delete")
	check(db.Transaction(func(tx *gorm.DB) error { return tx.Create(&Tag{Name: "t"}).Error }), "transaction")
	type row struct {
		Name string
		Cnt  int
	}
	var rows []row
	check(db.Raw("select name, count(*) as cnt from tags group by name order by name").Scan(&rows).Error, "raw")
	fmt.Println("tags", rows)
	cols, err := m.ColumnTypes(&User{})
	check(err, "column types")
	for _, c := range cols {
		nullable, _ := c.Nullable()
		def, _ := c.DefaultValue()
		fmt.Println("column", c.Name(), c.DatabaseTypeName(), nullable, def)
	}
	fmt.Println("has index, constraint", m.HasIndex(&User{}, "Name"), m.HasConstraint(&User{}, "Company"))
	check(m.RenameColumn(&User{}, "score", "points"), "rename column")
	check(m.AlterColumn(&User{}, "Name"), "alter column")
	indexes, err := m.GetIndexes(&User{})
	check(err, "indexes")
	var names []string
	for _, i := range indexes {
		names = append(names, fmt.Sprint(i.Name(), i.Columns()))
	}
	sort.Strings(names)
	fmt.Println("indexes", names)
	tables, err := m.GetTables()
	check(err, "tables")
	sort.Strings(tables)
	fmt.Println("tables", tables)
	check(m.DropTable(&User{}, &Company{}, &Tag{}, "user_tags"), "drop tables")
}

// The ED surface through pgx: a fast commit, its status and durability wait, a safe commit.
func edSurface(url string) {
	c, err := pgx.Connect(ctx, url)
	check(err, "connect")
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "create table ed (id serial primary key, v text)")
	check(err, "create ed")
	_, err = c.Exec(ctx, "set synchronous_commit = off")
	check(err, "fast")
	_, err = c.Exec(ctx, "insert into ed (v) values ('fast')")
	check(err, "fast insert")
	var txid, status string
	check(c.QueryRow(ctx, "select kiln_last_txid()").Scan(&txid), "last txid")
	check(c.QueryRow(ctx, "select kiln_txn_status($1)", txid).Scan(&status), "status")
	if status != "committed" && status != "durable" {
		fmt.Println("FAIL a fast commit is", status)
		os.Exit(1)
	}
	check(c.QueryRow(ctx, "select kiln_wait($1, 5000)", txid).Scan(&status), "wait")
	if status != "durable" {
		fmt.Println("FAIL kiln_wait answered", status)
		os.Exit(1)
	}
	_, err = c.Exec(ctx, "set synchronous_commit = on")
	check(err, "safe")
	_, err = c.Exec(ctx, "insert into ed (v) values ('safe')")
	check(err, "safe insert")
	check(c.QueryRow(ctx, "select kiln_last_txid()").Scan(&txid), "last txid")
	check(c.QueryRow(ctx, "select kiln_txn_status($1)", txid).Scan(&status), "status")
	if status != "durable" {
		fmt.Println("FAIL a safe commit acknowledged as", status)
		os.Exit(1)
	}
	_, err = c.Exec(ctx, "drop table ed")
	check(err, "drop ed")
}

func main() {
	url := os.Args[1]
	pgxProgram(url)
	gormProgram(url)
	if len(os.Args) > 2 && os.Args[2] == "true" {
		edSurface(url)
	}
	fmt.Println("ok")
}
