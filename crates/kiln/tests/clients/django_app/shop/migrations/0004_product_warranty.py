from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('shop', '0003_rename_title_name'),
    ]

    operations = [
        migrations.AddField(
            model_name='product',
            name='warranty',
            field=models.DurationField(null=True, blank=True),
        ),
    ]
