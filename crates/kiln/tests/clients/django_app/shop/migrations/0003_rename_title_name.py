from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("shop", "0002_product_stock"),
    ]

    operations = [
        migrations.RenameField(model_name="product", old_name="title", new_name="name"),
    ]
