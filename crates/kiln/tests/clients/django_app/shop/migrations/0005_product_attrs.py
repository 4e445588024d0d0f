from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('shop', '0004_product_warranty'),
    ]

    operations = [
        migrations.AddField(
            model_name='product',
            name='attrs',
            field=models.JSONField(default=dict, blank=True),
        ),
    ]
