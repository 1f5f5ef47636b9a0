"""The script ``spark-submit`` runs for hudi-cdc (``hudi-cdc jars --launcher`` prints its path).

spark-submit takes a file, not a console entry point. The script lives in a
folder of its own because spark-submit puts the script's folder first on
``sys.path``: next to the package's modules it would shadow real packages
(``hudi_cdc/airflow.py`` would hide Airflow).
"""

from pathlib import Path

__all__ = ["SCRIPT"]

SCRIPT = Path(__file__).resolve().parent / "hudi_cdc_submit.py"
