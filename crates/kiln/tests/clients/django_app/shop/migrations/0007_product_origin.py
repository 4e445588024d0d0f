from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('shop', '0006_product_value'),
    ]

    operations = [
        migrations.AddField(
            model_name='product',
            name='origin',
            field=models.GenericIPAddressField(blank=True, null=True),
        ),
    ]
