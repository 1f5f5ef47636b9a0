from hudi_cdc.cli import main

main()
