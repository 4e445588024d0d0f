"""A Django project against one server (DB_PORT, DB_NAME, DB_USER; KILN=1 for Kiln):
migrate from scratch with the contrib apps, a migration that adds a column to a table with
rows and one that renames a column, a GeneratedField (a stored generated column), model CRUD with a foreign key, bulk_create, .iterator()
(a server-side cursor), constraint errors inside atomic blocks, and on Kiln the ED surface.
Prints "django ok" when every check passed; any failure raises."""

import os
import sys
from datetime import timedelta
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import IntegrityError, connection, transaction  # noqa: E402
from django.db.models import Count, DateTimeField, ExpressionWrapper, F, Sum  # noqa: E402

from shop.models import Category, Product  # noqa: E402


def sql(query, params=None):
    with connection.cursor() as c:
        c.execute(query, params)
        return c.fetchall() if c.description else None


# The first migration, then rows written the way 0001 left the table.
call_command("migrate", "shop", "0001", verbosity=0)
call_command("migrate", verbosity=0)  # the contrib apps
call_command("migrate", "shop", "0001", verbosity=0)
sql("INSERT INTO shop_category (name) VALUES ('old')")
sql(
    "INSERT INTO shop_product (category_id, title, price, created, tags) "
    "SELECT id, 'kept', 2.50, now(), '{a,b}' FROM shop_category WHERE name = 'old'"
)
# 0002 adds `stock` (default 0) to the table with a row; 0003 renames `title` to `name`.
call_command("migrate", verbosity=0)
old = Product.objects.get(category__name="old")
assert (old.name, old.stock, old.tags, old.price) == ("kept", 0, ["a", "b"], Decimal("2.50")), old
columns = [r[0] for r in sql(
    "SELECT column_name FROM information_schema.columns WHERE table_name = 'shop_product' "
    "ORDER BY ordinal_position"
)]
assert "title" not in columns and {"name", "stock", "value"} <= set(columns), columns
applied = sql("SELECT count(*) FROM django_migrations WHERE app = 'shop'")[0][0]
assert applied == 7, applied

# DurationField is an interval: stored, compared, summed and added to a timestamp.
garden = Category.objects.create(name="tools")
Product.objects.create(category=garden, name="saw", price=Decimal("20"), warranty=timedelta(days=365))
Product.objects.create(category=garden, name="axe", price=Decimal("30"), warranty=timedelta(days=30, hours=12))
assert Product.objects.get(name="axe").warranty == timedelta(days=30, hours=12)
assert list(Product.objects.filter(warranty__gt=timedelta(days=31)).values_list("name", flat=True)) == ["saw"]
total = Product.objects.filter(category=garden).aggregate(s=Sum("warranty"))["s"]
assert total == timedelta(days=395, hours=12), total
ends = Product.objects.filter(name="saw").annotate(
    ends=ExpressionWrapper(F("created") + F("warranty"), output_field=DateTimeField())
).get()
assert ends.ends - ends.created == timedelta(days=365), ends.ends
Product.objects.filter(category=garden).update(warranty=F("warranty") * 2)
assert Product.objects.get(name="axe").warranty == timedelta(days=61)
# A JSONField (jsonb): key lookups (->, ->>), containment (@>), has_key (?), and numbers
# compared as numbers.
Product.objects.create(category=garden, name="rake", price=Decimal("5"), attrs={"color": "red", "size": 10, "dims": {"w": 2}})
Product.objects.create(category=garden, name="hoe", price=Decimal("6"), attrs={"color": "green", "size": 9, "tags": ["steel"]})
assert Product.objects.get(name="rake").attrs == {"color": "red", "size": 10, "dims": {"w": 2}}
assert list(Product.objects.filter(attrs__color="red").values_list("name", flat=True)) == ["rake"]
assert list(Product.objects.filter(attrs__size__gt=9).values_list("name", flat=True)) == ["rake"]
assert list(Product.objects.filter(attrs__contains={"tags": ["steel"]}).values_list("name", flat=True)) == ["hoe"]
assert list(Product.objects.filter(attrs__has_key="dims").values_list("name", flat=True)) == ["rake"]
assert list(Product.objects.filter(attrs__dims__w=2).values_list("name", flat=True)) == ["rake"]
assert list(Product.objects.filter(attrs__color__icontains="EE").values_list("name", flat=True)) == ["hoe"]
# A GenericIPAddressField (inet): IPv4 and IPv6 addresses stored, found and ordered.
Product.objects.filter(name="rake").update(origin="192.168.1.20")
Product.objects.filter(name="hoe").update(origin="2001:db8::1")
assert Product.objects.get(origin="192.168.1.20").name == "rake"
assert Product.objects.get(name="hoe").origin == "2001:db8::1"
assert list(Product.objects.filter(origin__isnull=False).order_by("origin").values_list("name", flat=True)) == ["rake", "hoe"]
assert list(Product.objects.filter(origin__startswith="192.").values_list("name", flat=True)) == ["rake"]
# Full text search (django.contrib.postgres.search): to_tsvector with a regconfig,
# plainto_tsquery and websearch_to_tsquery matched with @@, ranked by ts_rank.
from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

vector = SearchVector("name", "attrs__color", config="english")
found = Product.objects.annotate(search=vector).filter(search=SearchQuery("rakes", config="english"))
assert list(found.values_list("name", flat=True)) == ["rake"]
either = SearchQuery("rake or green", search_type="websearch", config="english")
found = Product.objects.annotate(search=vector).filter(search=either).order_by("name")
assert list(found.values_list("name", flat=True)) == ["hoe", "rake"]
rank = SearchRank(vector, SearchQuery("green hoe", config="english"))
ranked = Product.objects.filter(category=garden).annotate(rank=rank).order_by("-rank", "name")
ranked = list(ranked)
assert ranked[0].name == "hoe" and all(r.rank < ranked[0].rank for r in ranked[1:]), ranked
Product.objects.filter(name="hoe").update(attrs={"color": "blue"})
assert Product.objects.get(name="hoe").attrs == {"color": "blue"}
Product.objects.filter(category=garden).delete()
garden.delete()

# CRUD with a foreign key.
books = Category.objects.create(name="books")
toys = Category.objects.create(name="toys")
p = Product.objects.create(category=books, name="novel", price=Decimal("9.99"), tags=["fiction"])
Product.objects.create(category=toys, name="ball", price=Decimal("3.00"))
assert Product.objects.filter(category__name="books").count() == 1
p.price = Decimal("8.50")
p.tags.append("sale")
p.save()
p.refresh_from_db()
assert p.price == Decimal("8.50") and p.tags == ["fiction", "sale"]
assert list(Product.objects.filter(tags__contains=["sale"]).values_list("name", flat=True)) == ["novel"]
Product.objects.filter(category=toys).update(stock=F("stock") + 5)
assert Product.objects.get(name="ball").stock == 5
# 0006's generated column: computed by the server on insert and update (the row that was
# there when the column was added too).
assert Product.objects.get(name="ball").value == Decimal("15.00")
assert Product.objects.get(name="kept").value == Decimal("0.00")
p.refresh_from_db()
assert p.value == Decimal("0.00"), p.value
Product.objects.filter(name="novel").update(stock=4)
assert Product.objects.get(name="novel").value == Decimal("34.00")
counts = dict(Category.objects.annotate(n=Count("products")).values_list("name", "n"))
assert counts == {"old": 1, "books": 1, "toys": 1}, counts
toys.delete()  # cascades
assert not Product.objects.filter(name="ball").exists()

# bulk_create (INSERT … SELECT * FROM UNNEST(…)) and .iterator() (DECLARE / FETCH).
made = Product.objects.bulk_create(
    [Product(category=books, name=f"b{i:03}", price=Decimal(i), stock=i) for i in range(300)]
)
assert len(made) == 300 and all(m.pk for m in made)
assert Product.objects.filter(name__startswith="b").aggregate(s=Sum("stock"))["s"] == sum(range(300))
with transaction.atomic():
    names = [x.name for x in Product.objects.filter(name__startswith="b").order_by("name").iterator(chunk_size=7)]
assert names == [f"b{i:03}" for i in range(300)], names[:5]
names = [x.name for x in Product.objects.order_by("id").iterator(chunk_size=50)]
assert len(names) == 302, len(names)

# Constraint errors roll back only their atomic block.
with transaction.atomic():
    Category.objects.create(name="garden")
    try:
        with transaction.atomic():
            Category.objects.create(name="books")
        raise AssertionError("a duplicate name was accepted")
    except IntegrityError:
        pass
    try:
        with transaction.atomic():
            Product.objects.create(category=books, name="bad", price=Decimal("-1"))
        raise AssertionError("a negative price was accepted")
    except IntegrityError:
        pass
assert Category.objects.filter(name="garden").exists()
assert not Product.objects.filter(name="bad").exists()

# Django's foreign keys are DEFERRABLE INITIALLY DEFERRED: a row may come before the row it
# references within a transaction, and the check happens at COMMIT.
with transaction.atomic():
    Product.objects.create(category_id=90_001, name="early", price=Decimal("1"))
    Category.objects.create(id=90_001, name="late")
assert Product.objects.get(name="early").category.name == "late"
try:
    with transaction.atomic():
        Product.objects.create(category_id=90_002, name="dangling", price=Decimal("1"))
    raise AssertionError("a dangling reference committed")
except IntegrityError as e:
    assert e.__cause__.sqlstate == "23503", e.__cause__.sqlstate
assert not Product.objects.filter(name="dangling").exists()
# connection.check_constraints() (SET CONSTRAINTS ALL IMMEDIATE) checks them early; a
# savepoint rolls its failure back, and the check is still due at COMMIT.
with transaction.atomic():
    Product.objects.create(category_id=90_003, name="checked", price=Decimal("1"))
    try:
        with transaction.atomic():
            connection.check_constraints()
        raise AssertionError("check_constraints let a dangling reference pass")
    except IntegrityError:
        pass
    Category.objects.create(id=90_003, name="now there")
    connection.check_constraints()
try:
    with transaction.atomic():
        Product.objects.create(category_id=90_004, name="still due", price=Decimal("1"))
        try:
            with transaction.atomic():
                connection.check_constraints()
        except IntegrityError:
            pass
    raise AssertionError("a dangling reference committed after a failed early check")
except IntegrityError:
    pass
assert not Product.objects.filter(name="still due").exists()

# The ED surface: a fast commit, its status, then a safe one.
if os.environ.get("KILN") == "1":
    sql("SET synchronous_commit = off")
    Category.objects.create(name="fast")
    txid = sql("SELECT kiln_last_txid()")[0][0]
    assert sql("SELECT kiln_txn_status(%s)", [txid])[0][0] in ("committed", "durable")
    assert sql("SELECT kiln_wait(%s, 5000)", [txid])[0][0] == "durable"
    sql("SET synchronous_commit = on")
    Category.objects.create(name="safe")
    txid = sql("SELECT kiln_last_txid()")[0][0]
    assert sql("SELECT kiln_txn_status(%s)", [txid])[0][0] == "durable"

print("django ok")
