"""Launcher for ``spark-submit``: the same as ``hudi-cdc ingest``, on a cluster or locally.

    PYSPARK_PYTHON=python3 spark-submit --jars "$(ls .jars/hudi/*.jar | paste -sd,)" \\
        examples/spark_submit_ingest.py ingest --source-path ... --target-base-path ... ...

spark-submit runs a script, not a console entry point, and a script inside the
package folder would put that folder first on ``sys.path``; hence this file.
Under spark-submit hudi-cdc uses the session spark-submit configured (master,
jars) and only adds Hudi's session settings.
"""

from hudi_cdc.cli import main

if __name__ == "__main__":
    main()
