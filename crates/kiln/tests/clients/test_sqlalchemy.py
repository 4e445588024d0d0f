"""SQLAlchemy 2 (ORM and Core, default psycopg 3 engine) against a server.

The same tests run against Kiln (KILN_URL) and against a stock PostgreSQL (PG_URL), so every
expectation here is PostgreSQL's behaviour; the ED checks run on Kiln only.
"""

import enum
import os
import uuid
from datetime import datetime, timedelta

import pytest
from sqlalchemy import (
    ARRAY,
    any_,
    CheckConstraint,
    Column,
    DateTime,
    Enum,
    ForeignKey,
    Index,
    Integer,
    Interval,
    JSON,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    create_engine,
    delete,
    func,
    insert,
    inspect,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

SERVERS = [k for k in ("KILN_URL", "PG_URL") if os.environ.get(k)]


class Base(DeclarativeBase):
    pass


class Status(enum.Enum):
    draft = "draft"
    published = "published"
    archived = "archived"


class Author(Base):
    __tablename__ = "sa_author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    tags: Mapped[list[int]] = mapped_column(ARRAY(Integer), default=list)
    key: Mapped[uuid.UUID] = mapped_column(
        Uuid, server_default=text("gen_random_uuid()"), unique=True
    )
    profile: Mapped[dict] = mapped_column(JSONB, default=dict)
    notes: Mapped[dict | None] = mapped_column(JSON)
    books: Mapped[list["Book"]] = relationship(
        back_populates="author", cascade="all, delete-orphan", order_by="Book.id"
    )


class Book(Base):
    __tablename__ = "sa_book"
    __table_args__ = (
        UniqueConstraint("author_id", "title", name="sa_book_author_title"),
        CheckConstraint("pages > 0", name="sa_book_pages_positive"),
        {"comment": "one row per book"},
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100), index=True, comment="as printed")
    pages: Mapped[int] = mapped_column(default=1)
    author_id: Mapped[int] = mapped_column(ForeignKey("sa_author.id", ondelete="CASCADE"))
    loan: Mapped[timedelta | None] = mapped_column(Interval)
    # A native enum type: create_all creates it, drop_all drops it.
    status: Mapped[Status] = mapped_column(Enum(Status, name="sa_book_status"), default=Status.draft)
    author: Mapped[Author] = relationship(back_populates="books")


# An index on an expression and a partial one, declared as SQLAlchemy users do.
Index("sa_book_pages_twice", Book.pages * 2)
Index("sa_book_long", Book.pages, postgresql_where=Book.pages > 100)


# Each server through psycopg 3 and through psycopg2 (the driver a plain `postgresql://` URL
# takes in SQLAlchemy 2.0; 2.1 takes psycopg 3).
DRIVERS = ["postgresql+psycopg://", "postgresql+psycopg2://"]


@pytest.fixture(params=[(s, d) for s in SERVERS for d in DRIVERS], ids=lambda p: f"{p[0]}-{p[1]}")
def engine(request):
    server, driver = request.param
    url = os.environ[server].replace("postgresql+psycopg://", driver, 1)
    eng = create_engine(url)
    assert eng.dialect.driver == driver.removeprefix("postgresql+").removesuffix("://")
    eng.kiln = server == "KILN_URL"
    Base.metadata.drop_all(eng)
    Base.metadata.create_all(eng)
    yield eng
    Base.metadata.drop_all(eng)
    eng.dispose()


def sqlstate(error):
    """The SQLSTATE of a driver's error: psycopg 3 calls it `sqlstate`, psycopg2 `pgcode`."""
    return getattr(error, "sqlstate", None) or error.pgcode


def test_servers_given():
    assert SERVERS, "set KILN_URL and/or PG_URL"


def test_inspect_reflects_the_schema(engine):
    insp = inspect(engine)
    assert {"sa_author", "sa_book"} <= set(insp.get_table_names())
    cols = {c["name"]: c for c in insp.get_columns("sa_book")}
    assert list(cols) == ["id", "title", "pages", "author_id", "loan", "status"]
    assert cols["status"]["type"].enums == ["draft", "published", "archived"]
    assert cols["status"]["type"].name == "sa_book_status"
    [status] = [e for e in insp.get_enums() if e["name"] == "sa_book_status"]
    assert status == {
        "name": "sa_book_status",
        "schema": "public",
        "visible": True,
        "labels": ["draft", "published", "archived"],
    }
    assert str(cols["loan"]["type"]) == "INTERVAL"
    assert str(cols["title"]["type"]) == "VARCHAR(100)"
    assert cols["id"]["autoincrement"] is True
    assert cols["id"]["default"].startswith("nextval(")
    assert cols["title"]["nullable"] is False
    author_cols = {c["name"]: c for c in insp.get_columns("sa_author")}
    tags = author_cols["tags"]["type"]
    assert isinstance(tags, ARRAY) and isinstance(tags.item_type, Integer)
    assert insp.get_pk_constraint("sa_book") == {
        "constrained_columns": ["id"],
        "name": "sa_book_pkey",
        "comment": None,
        "dialect_options": {"postgresql_include": []},
    }
    [fk] = insp.get_foreign_keys("sa_book")
    assert fk["constrained_columns"] == ["author_id"]
    assert fk["referred_table"] == "sa_author"
    assert fk["referred_columns"] == ["id"]
    assert fk["options"] == {"ondelete": "CASCADE"}
    indexes = {i["name"]: i for i in insp.get_indexes("sa_book")}
    assert indexes["ix_sa_book_title"]["column_names"] == ["title"]
    assert indexes["ix_sa_book_title"]["unique"] is False
    assert indexes["sa_book_pages_twice"]["column_names"] == [None]
    assert indexes["sa_book_pages_twice"]["expressions"] == ["(pages * 2)"]
    assert indexes["sa_book_long"]["column_names"] == ["pages"]
    assert indexes["sa_book_long"]["dialect_options"]["postgresql_where"] == "(pages > 100)"
    assert insp.get_table_comment("sa_book") == {"text": "one row per book"}
    assert cols["title"]["comment"] == "as printed"
    uniques = {u["name"]: u["column_names"] for u in insp.get_unique_constraints("sa_book")}
    assert uniques == {"sa_book_author_title": ["author_id", "title"]}
    checks = {c["name"]: c["sqltext"] for c in insp.get_check_constraints("sa_book")}
    assert list(checks) == ["sa_book_pages_positive"]
    assert "pages > 0" in checks["sa_book_pages_positive"]
    author_uniques = {u["name"]: u["column_names"] for u in insp.get_unique_constraints("sa_author")}
    assert author_uniques == {"sa_author_name_key": ["name"], "sa_author_key_key": ["key"]}
    assert str(author_cols["key"]["type"]) == "UUID"
    assert str(author_cols["profile"]["type"]) == "JSONB"
    assert str(author_cols["notes"]["type"]) == "JSON"
    assert author_cols["key"]["default"] == "gen_random_uuid()"


def test_session_crud(engine):
    with Session(engine) as s:
        a = Author(name="ada", tags=[1, 2], books=[Book(title="notes", pages=10), Book(title="more")])
        s.add(a)
        s.commit()
        assert a.id is not None and all(b.id for b in a.books)
        got = s.scalars(select(Author).where(Author.name == "ada")).one()
        assert isinstance(got.key, uuid.UUID) and got.key.version == 4
        assert s.scalars(select(Author.name).where(Author.key == got.key)).one() == "ada"
        assert [b.title for b in got.books] == ["notes", "more"]
        assert got.tags == [1, 2]
        # JSONB and JSON columns: documents in and out, key access, containment, has_key.
        got.profile = {"lang": "en", "langs": ["en", "fr"], "age": 36}
        got.notes = {"b": 1, "a": [True, None]}
        s.commit()
        assert s.scalar(select(Author.profile)) == {"lang": "en", "langs": ["en", "fr"], "age": 36}
        assert s.scalar(select(Author.notes)) == {"b": 1, "a": [True, None]}
        assert s.scalar(select(Author.name).where(Author.profile["lang"].astext == "en")) == "ada"
        assert s.scalar(select(Author.name).where(Author.profile.contains({"langs": ["fr"]}))) == "ada"
        assert s.scalar(select(Author.name).where(Author.profile.has_key("age"))) == "ada"
        assert s.scalar(select(Author.profile["age"].as_integer())) == 36
        assert s.scalar(select(Author.notes["a"][0].as_boolean())) is True
        got.name = "ada l"
        got.tags = got.tags + [3]
        got.books[1].pages = 7
        got.books[0].loan = timedelta(days=14)
        got.books[1].loan = timedelta(days=1, hours=6)
        s.commit()
        # Interval columns: compared, summed, and added to a timestamp in SQL.
        long = s.scalars(select(Book.title).where(Book.loan > timedelta(days=2))).all()
        assert long == ["notes"]
        assert s.scalar(select(func.sum(Book.loan))) == timedelta(days=15, hours=6)
        start = literal(datetime(2024, 1, 31, 10, 0), DateTime)
        due = s.scalar(select(start + Book.loan).where(Book.title == "more"))
        assert due == datetime(2024, 2, 1, 16, 0), due
    with Session(engine) as s:
        got = s.scalars(select(Author)).one()
        assert got.name == "ada l" and got.tags == [1, 2, 3]
        assert s.scalar(select(func.sum(Book.pages))) == 17
        tagged = s.scalars(select(Author.name).where(any_(Author.tags) == 3)).all()
        assert tagged == ["ada l"]
        rows = s.execute(
            select(Author.name, func.count(Book.id))
            .join(Book)
            .group_by(Author.name)
            .order_by(Author.name)
        ).all()
        assert rows == [("ada l", 2)]
        s.delete(got.books[0])
        s.commit()
        assert s.scalar(select(func.count()).select_from(Book)) == 1
        s.delete(got)
        s.commit()
        assert s.scalar(select(func.count()).select_from(Book)) == 0


def test_native_enum_orders_by_its_labels_and_refuses_others(engine):
    with Session(engine) as s:
        a = Author(name="enum", books=[Book(title=t, status=st) for t, st in [
            ("c", Status.archived), ("a", Status.draft), ("b", Status.published)
        ]])
        s.add(a)
        s.commit()
        # Ordered by the type's label order, not alphabetically.
        assert s.scalars(select(Book.title).order_by(Book.status)).all() == ["a", "b", "c"]
        assert s.scalars(select(Book.title).where(Book.status > Status.draft).order_by(Book.title)).all() == ["b", "c"]
        s.execute(update(Book).where(Book.status == Status.archived).values(status=Status.draft))
        s.commit()
        assert s.scalar(select(func.count()).where(Book.status == Status.draft)) == 2
        assert s.scalars(select(Book.status).distinct().order_by(Book.status)).all() == [Status.draft, Status.published]
    with engine.connect() as c:
        with pytest.raises(DataError) as e:
            c.execute(text("UPDATE sa_book SET status = 'lost'"))
        assert sqlstate(e.value.orig) == "22P02"
        c.rollback()
        # A label added later sorts where it was put.
        c.execute(text("ALTER TYPE sa_book_status ADD VALUE 'review' BEFORE 'published'"))
        c.commit()
        c.execute(text("UPDATE sa_book SET status = 'review' WHERE title = 'a'"))
        c.commit()
        got = c.execute(text("SELECT title FROM sa_book ORDER BY status, title")).scalars().all()
        assert got == ["c", "a", "b"]
        labels = c.execute(text("SELECT enum_range(NULL::sa_book_status)::text")).scalar()
        assert labels == "{draft,review,published,archived}"


def test_constraint_errors_roll_back(engine):
    with Session(engine) as s:
        s.add(Author(name="x"))
        s.commit()
        s.add(Author(name="x"))
        with pytest.raises(IntegrityError) as e:
            s.commit()
        assert sqlstate(e.value.orig) == "23505"
        # The error names its constraint and table, as PostgreSQL's does.
        assert e.value.orig.diag.constraint_name == "sa_author_name_key"
        assert e.value.orig.diag.table_name == "sa_author"
        s.rollback()
        s.add(Book(title="orphan", author_id=999_999))
        with pytest.raises(IntegrityError) as e:
            s.commit()
        assert sqlstate(e.value.orig) == "23503"
        assert e.value.orig.diag.constraint_name == "sa_book_author_id_fkey"
        s.rollback()
        a = s.scalars(select(Author)).one()
        s.add(Book(title="bad", pages=0, author=a))
        with pytest.raises(IntegrityError) as e:
            s.commit()
        assert sqlstate(e.value.orig) == "23514"
        s.rollback()
        assert s.scalar(select(func.count()).select_from(Book)) == 0


def test_bulk_insert_and_update(engine):
    with Session(engine) as s:
        s.add(Author(name="bulk"))
        s.commit()
        author_id = s.scalar(select(Author.id))
        # Core executemany, then the ORM's bulk INSERT … RETURNING.
        s.execute(
            insert(Book),
            [{"title": f"t{i}", "pages": i + 1, "author_id": author_id} for i in range(200)],
        )
        books = s.scalars(
            insert(Book).returning(Book),
            [{"title": f"r{i}", "pages": 5, "author_id": author_id} for i in range(50)],
        ).all()
        assert len(books) == 50 and len({b.id for b in books}) == 50
        s.execute(update(Book).where(Book.pages > 100).values(pages=Book.pages - 100))
        s.commit()
        assert s.scalar(select(func.count()).select_from(Book)) == 250
        assert s.scalar(select(func.max(Book.pages))) == 100
        ids = s.scalars(select(Book.id).where(Book.id.in_([b.id for b in books[:3]]))).all()
        assert sorted(ids) == sorted(b.id for b in books[:3])
        # A criterion on another table: UPDATE … FROM, and DELETE … USING.
        s.execute(
            update(Book)
            .where(Book.author_id == Author.id, Author.name == "bulk", Book.pages == 100)
            .values(pages=Book.pages + 1)
            .execution_options(synchronize_session=False)
        )
        assert s.scalar(select(func.max(Book.pages))) == 101
        s.execute(
            delete(Book)
            .where(Book.author_id == Author.id, Author.name == "bulk", Book.pages == 101)
            .execution_options(synchronize_session=False)
        )
        # t99 and t199 had 100 pages.
        assert s.scalar(select(func.count()).select_from(Book)) == 248


def test_ed_surface(engine):
    if not engine.kiln:
        pytest.skip("the ED surface is Kiln's")
    with engine.connect() as c:
        c.execute(text("SET synchronous_commit = off"))
        c.execute(insert(Author).values(name="fast"))
        c.commit()
        txid = c.execute(text("SELECT kiln_last_txid()")).scalar()
        assert c.execute(text("SELECT kiln_txn_status(:t)"), {"t": txid}).scalar() in (
            "committed",
            "durable",
        )
        assert c.execute(text("SELECT kiln_wait(:t, 5000)"), {"t": txid}).scalar() == "durable"
        assert c.execute(text("SELECT kiln_txn_status(:t)"), {"t": txid}).scalar() == "durable"
        c.execute(text("SET synchronous_commit = on"))
        c.execute(insert(Author).values(name="safe"))
        c.commit()
        txid = c.execute(text("SELECT kiln_last_txid()")).scalar()
        assert c.execute(text("SELECT kiln_txn_status(:t)"), {"t": txid}).scalar() == "durable"


def test_alembic_autogenerate_and_upgrade(engine):
    """Alembic compares a model with the reflected database (its bulk reflection queries
    included), then the operations it proposes bring the database to the model."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    with engine.begin() as c:
        c.execute(text("DROP TABLE IF EXISTS al_b, al_a, al_c CASCADE"))
        c.execute(text("CREATE TABLE al_a (id serial PRIMARY KEY, name varchar(20) NOT NULL, price numeric(8, 2))"))
        c.execute(text("CREATE TABLE al_b (id serial PRIMARY KEY, a_id int REFERENCES al_a (id), note text)"))
        c.execute(text("CREATE INDEX al_b_note ON al_b (note)"))
    md = MetaData()
    Table(
        "al_a", md,
        Column("id", Integer, primary_key=True),
        Column("name", String(40), nullable=False),
        Column("price", Numeric(8, 2)),
        Column("created", DateTime, nullable=True),
    )
    Table(
        "al_b", md,
        Column("id", Integer, primary_key=True),
        Column("a_id", Integer, ForeignKey("al_a.id")),
        Column("note", Text),
        Index("al_b_a", "a_id"),
    )
    Table("al_c", md, Column("id", Integer, primary_key=True))

    def differences():
        with engine.connect() as c:
            ctx = MigrationContext.configure(c, opts={"compare_type": True})
            found = []
            for d in compare_metadata(ctx, md):
                d = d[0] if isinstance(d, list) else d
                kind = d[0]
                if kind in ("add_table", "remove_table", "add_index", "remove_index"):
                    if d[1].name.startswith("al_"):  # not the other tests' tables
                        found.append((kind, d[1].name))
                elif kind == "add_column":
                    found.append((kind, d[2], d[3].name))
                elif kind == "modify_type":
                    found.append((kind, d[2], d[3]))
                else:
                    found.append((kind,))
            return sorted(found)

    assert differences() == sorted(
        [
            ("add_table", "al_c"),
            ("add_column", "al_a", "created"),
            ("modify_type", "al_a", "name"),
            ("remove_index", "al_b_note"),
            ("add_index", "al_b_a"),
        ]
    )
    with engine.begin() as c:
        op = Operations(MigrationContext.configure(c))
        op.create_table("al_c", Column("id", Integer, primary_key=True))
        op.add_column("al_a", Column("created", DateTime))
        op.alter_column("al_a", "name", type_=String(40), existing_type=String(20), existing_nullable=False)
        op.drop_index("al_b_note", table_name="al_b")
        op.create_index("al_b_a", "al_b", ["a_id"])
    assert differences() == []
    with engine.begin() as c:
        c.execute(text("DROP TABLE al_b, al_a, al_c"))
