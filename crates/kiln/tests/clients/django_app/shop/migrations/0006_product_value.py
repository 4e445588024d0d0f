from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('shop', '0005_product_attrs'),
    ]

    operations = [
        migrations.AddField(
            model_name='product',
            name='value',
            field=models.GeneratedField(
                expression=models.F('price') * models.F('stock'),
                output_field=models.DecimalField(max_digits=14, decimal_places=2),
                db_persist=True,
            ),
        ),
    ]
