from django.contrib.postgres.fields import ArrayField
from django.db import models


class Category(models.Model):
    name = models.CharField(max_length=50, unique=True)


class Product(models.Model):
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="products")
    # 0003 renames `title` to `name`.
    name = models.CharField(max_length=100)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    created = models.DateTimeField(auto_now_add=True)
    tags = ArrayField(models.CharField(max_length=20), default=list, blank=True)
    # Added by 0002 to a table that already has rows.
    stock = models.IntegerField(default=0)
    # Added by 0004: an interval column.
    warranty = models.DurationField(null=True, blank=True)
    # Added by 0005: a jsonb column.
    attrs = models.JSONField(default=dict, blank=True)
    # 0006: a stored generated column (GENERATED ALWAYS AS (…) STORED).
    value = models.GeneratedField(
        expression=models.F("price") * models.F("stock"),
        output_field=models.DecimalField(max_digits=14, decimal_places=2),
        db_persist=True,
    )
    # 0007: an inet column (GenericIPAddressField).
    origin = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=models.Q(price__gte=0), name="price_not_negative")]
