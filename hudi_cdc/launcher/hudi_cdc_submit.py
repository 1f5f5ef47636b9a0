"""``spark-submit [options] hudi_cdc_submit.py ingest ...``: the ``hudi-cdc`` CLI under spark-submit."""

from hudi_cdc.cli import main

if __name__ == "__main__":
    main()
