"""Zero-configuration ``format("tablefmt")`` for PySpark.

On its first Python data source use, Spark imports every top-level module named ``pyspark_*`` it finds with
``pkgutil.iter_modules()`` and registers its ``DefaultSource`` under ``DefaultSource.name()``. This works when
tablefmt is installed as a wheel (or is on PYTHONPATH); setuptools' editable installs are invisible to
``pkgutil.iter_modules()``, so there (and always, if in doubt) call ``tableformat.spark.register(spark)``.
"""

from tableformat.spark.datasource import TablefmtDataSource as DefaultSource

__all__ = ["DefaultSource"]
